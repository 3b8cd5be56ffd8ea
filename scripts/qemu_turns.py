#!/usr/bin/env python3
"""QEMU's turns: which vCPU ran when, and for how many instructions, in one run under -icount.

Under `-icount` QEMU runs every vCPU in turn on one host thread; how long each turn is decides
the shares the vCPUs get and when a woken core first runs, which the simulator's turn model
(`beamcore-sim run --turns`, docs/simulator.md "QEMU's turns") reproduces. This script boots the
kernel with QEMU's own execution log (`-d exec,nochain,in_asm`: every executed block, named by
its vCPU, and every block's instructions when it is translated), reads it through a pipe as it
is written (a run logs gigabytes), and writes one line per turn:

    <instructions before it> <vCPU> <instructions> <blocks>

A block's size is that of its own translation (by its host pointer), so a block cut short at a
turn's end, translated again shorter, counts as the shorter one, and the full block as itself.
The log slows QEMU by two orders of magnitude but does not change the run: the kernel's report
and share probe read the same with and without it.

Usage: qemu_turns.py [--cores 4] [--out target/turns/turns.txt] BOOTARGS...
       qemu_turns.py --summary FILE [--from M] [--to M]   (a window in millions of instructions)
"""

import argparse
import collections
import os
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def parse_exec_log(lines):
    """[(start, vcpu, instructions, blocks)] from a `-d exec,nochain,in_asm` log.

    A block's size is that of its own translation, found by its host pointer (the `Trace`
    line's first field): under `-icount` QEMU translates a shorter block at the same guest pc
    when a turn's budget ends inside one, and the full block, still cached, runs again later.
    A block is translated just before its first execution, so a translation's size goes to the
    pointer that pc next runs from (a pointer reused after a flush of the code cache is bound
    again at its new translation)."""
    sizes, pending, by_tb = {}, {}, {}
    block_pc, block_len = None, 0
    turns = []
    current, instructions, blocks, total = None, 0, 0, 0
    for line in lines:
        if line.startswith("Trace "):
            vcpu = int(line[6:line.index(":")])
            pc = int(line.split("/")[1], 16)
            tb = line.split()[2]
            if pc in pending:
                by_tb[tb] = pending.pop(pc)
            size = by_tb.get(tb, sizes.get(pc, 1))
            if vcpu != current:
                if current is not None:
                    turns.append((total - instructions, current, instructions, blocks))
                current, instructions, blocks = vcpu, 0, 0
            instructions += size
            blocks += 1
            total += size
        elif line.startswith("IN:"):
            block_pc, block_len = None, 0
        elif line.startswith("0x") and ":" in line[:20]:
            if block_pc is None:
                block_pc = int(line.split(":")[0], 16)
            block_len += 1
        elif not line.strip() and block_pc is not None:
            sizes[block_pc] = pending[block_pc] = block_len
            block_pc = None
    if current is not None:
        turns.append((total - instructions, current, instructions, blocks))
    return turns


def summary(turns, start=0, end=None):
    """Per vCPU in [start, end) instructions: turns, instructions, median turn."""
    per = collections.defaultdict(list)
    for at, vcpu, instructions, _ in turns:
        if at >= start and (end is None or at < end):
            per[vcpu].append(instructions)
    return {vcpu: {"turns": len(sizes), "instructions": sum(sizes), "median": sorted(sizes)[len(sizes) // 2]}
            for vcpu, sizes in sorted(per.items())}


def record(cores, bootargs, out):
    cmd = bench.qemu_command("beamcore", bench.icount_args(cores), bootargs)
    with tempfile.TemporaryDirectory() as tmp:
        fifo = Path(tmp) / "exec.log"
        os.mkfifo(fifo)
        result = {}
        reader = threading.Thread(target=lambda: result.update(turns=parse_exec_log(open(fifo, errors="replace"))))
        reader.start()
        status, output = bench.run(cmd + ["-d", "exec,nochain,in_asm", "-D", str(fifo)], timeout=3600)
        reader.join()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(f"{a} {v} {i} {b}\n" for a, v, i, b in result["turns"]))
    return status, output, result["turns"]


def print_summary(turns, start=0, end=None):
    for vcpu, s in summary(turns, start, end).items():
        print(f"qemu_turns: vCPU {vcpu}: {s['turns']} turns, {s['instructions']} instructions, "
              f"median turn {s['median']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", type=int, default=4)
    parser.add_argument("--out", type=Path, default=ROOT / "target/turns/turns.txt")
    parser.add_argument("--summary", type=Path, help="summarise a turns file written before")
    parser.add_argument("--from", dest="start", type=float, default=0.0)
    parser.add_argument("--to", dest="end", type=float)
    parser.add_argument("bootargs", nargs="*")
    args = parser.parse_args()
    window = (int(args.start * 1e6), None if args.end is None else int(args.end * 1e6))
    if args.summary:
        turns = [tuple(int(x) for x in line.split()) for line in args.summary.read_text().splitlines()]
        print_summary(turns, *window)
        return
    status, output, turns = record(args.cores, " ".join(args.bootargs), args.out)
    for line in output.splitlines():
        if line.startswith(("report: ", "probe: ")):
            print(line[:300])
    print(f"qemu_turns: {len(turns)} turns written to {args.out}")
    print_summary(turns, *window)
    sys.exit(status)


if __name__ == "__main__":
    main()
