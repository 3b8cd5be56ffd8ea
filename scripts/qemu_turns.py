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

With `--ticks` it measures instead what the kernel's tick costs the process it interrupts,
counted instruction by instruction in the same log: a tick that returns to the process, and
one that ends its slice, to the next process's start (`tick_costs`; `--record` writes them to
bench/results.json as `sched.tick` and `sched.tick_switch`, the simulator's costs of a tick).

Usage: qemu_turns.py [--cores 4] [--out target/turns/turns.txt] BOOTARGS...
       qemu_turns.py --summary FILE [--from M] [--to M]   (a window in millions of instructions)
       qemu_turns.py --ticks [--record] [--cores 4] [BOOTARGS...]   (default: nqueens, seed 1)
"""

import argparse
import collections
import json
import os
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
import ksyms  # noqa: E402  (the kernel's symbols, for tick_costs' marks)
import profile  # noqa: E402  (their demangled names)

ROOT = Path(__file__).resolve().parent.parent


def executed_blocks(lines):
    """(vCPU, pcs) for every block a `-d exec,nochain,in_asm` log shows executed, in order:
    `pcs` are the addresses of the instructions of the block's own translation.

    A block's translation is found by its host pointer (the `Trace` line's first field): under
    `-icount` QEMU translates a shorter block at the same guest pc when a turn's budget ends
    inside one, and the full block, still cached, runs again later. A block is translated just
    before its first execution, so a translation goes to the pointer that pc next runs from (a
    pointer reused after a flush of the code cache is bound again at its new translation)."""
    translated, pending, by_tb = {}, {}, {}
    block_pcs = None
    for line in lines:
        if line.startswith("Trace "):
            vcpu = int(line[6:line.index(":")])
            pc = int(line.split("/")[1], 16)
            tb = line.split()[2]
            if pc in pending:
                by_tb[tb] = pending.pop(pc)
            yield vcpu, by_tb.get(tb) or translated.get(pc) or (pc,)
        elif line.startswith("IN:"):
            block_pcs = []
        elif line.startswith("0x") and ":" in line[:20] and block_pcs is not None:
            block_pcs.append(int(line.split(":")[0], 16))
        elif not line.strip() and block_pcs:
            pcs = tuple(block_pcs)
            translated[pcs[0]] = pending[pcs[0]] = pcs
            block_pcs = None


def parse_exec_log(lines):
    """[(start, vcpu, instructions, blocks)] from a `-d exec,nochain,in_asm` log: one per turn,
    a run of blocks of one vCPU, `start` the instructions every vCPU executed before it."""
    turns = []
    current, instructions, blocks, total = None, 0, 0, 0
    for vcpu, pcs in executed_blocks(lines):
        if vcpu != current:
            if current is not None:
                turns.append((total - instructions, current, instructions, blocks))
            current, instructions, blocks = vcpu, 0, 0
        instructions += len(pcs)
        blocks += 1
        total += len(pcs)
    if current is not None:
        turns.append((total - instructions, current, instructions, blocks))
    return turns


def marked(lines, marks):
    """[(vcpu, name, instructions)]: each execution of an instruction in `marks` ({pc: name}),
    with the instructions its vCPU had executed before it."""
    events, executed = [], collections.Counter()
    for vcpu, pcs in executed_blocks(lines):
        for i, pc in enumerate(pcs):
            if pc in marks:
                events.append((vcpu, marks[pc], executed[vcpu] + i))
        executed[vcpu] += len(pcs)
    return events


def tick_costs(events):
    """What the kernel's tick costs the process it interrupts, in instructions, from `marked`
    events named `irq` (the first instruction of the vector of an IRQ taken on SP_EL0, which
    only processes run on: ticks that interrupt the scheduler are not counted), `tick` (the
    tick handler's entry: wake-up SGIs have none), `eret` (trap_return's), `to_scheduler`
    (`context_return_to_scheduler`) and `resumed` (`context_resume_preempted` or
    `process_entry`, a process starting its turn). `returning`: a tick that returns to the
    process it interrupted, vector to `eret`, that included; `switching`: one that ends the
    slice, vector to the next process's start, the scheduler's pass between them included.
    Each is the most common count, the path itself, without what a pass of the scheduler
    sometimes adds (a rebalancing look, an inbox to drain), which the simulator charges on
    its own."""
    per_vcpu = collections.defaultdict(list)
    for vcpu, name, at in events:
        per_vcpu[vcpu].append((name, at))
    returning, switching = [], []
    for seq in per_vcpu.values():
        for i in range(len(seq) - 2):
            (first, start), (second, _) = seq[i], seq[i + 1]
            if first != "irq" or second != "tick":
                continue
            j = i + 2
            while j < len(seq) and seq[j][0] not in ("eret", "irq"):
                j += 1
            if j + 1 >= len(seq) or seq[j][0] != "eret":
                continue
            # A tick that ends the slice returns into the scheduler: its `eret`'s next
            # instruction is `context_return_to_scheduler`'s first.
            if seq[j + 1] == ("to_scheduler", seq[j][1] + 1):
                k = j + 1
                while k < len(seq) and seq[k][0] not in ("resumed", "irq"):
                    k += 1
                if k < len(seq) and seq[k][0] == "resumed":
                    switching.append(seq[k][1] - start)
            else:
                returning.append(seq[j][1] + 1 - start)
    def mode(counts):
        return collections.Counter(counts).most_common(1)[0][0] if counts else None
    return {"returning": mode(returning), "returning_count": len(returning),
            "switching": mode(switching), "switching_count": len(switching)}


def summary(turns, start=0, end=None):
    """Per vCPU in [start, end) instructions: turns, instructions, median turn."""
    per = collections.defaultdict(list)
    for at, vcpu, instructions, _ in turns:
        if at >= start and (end is None or at < end):
            per[vcpu].append(instructions)
    return {vcpu: {"turns": len(sizes), "instructions": sum(sizes), "median": sorted(sizes)[len(sizes) // 2]}
            for vcpu, sizes in sorted(per.items())}


def logged_run(cores, bootargs, parse):
    """(status, console output, parse(log lines)) of a make-run kernel's run with QEMU's
    execution log read through a pipe as it is written."""
    cmd = bench.qemu_command("beamcore", bench.icount_args(cores), bootargs)
    with tempfile.TemporaryDirectory() as tmp:
        fifo = Path(tmp) / "exec.log"
        os.mkfifo(fifo)
        result = {}
        reader = threading.Thread(target=lambda: result.update(parsed=parse(open(fifo, errors="replace"))))
        reader.start()
        status, output = bench.run(cmd + ["-d", "exec,nochain,in_asm", "-D", str(fifo)], timeout=3600)
        reader.join()
    return status, output, result["parsed"]


def record(cores, bootargs, out):
    status, output, turns = logged_run(cores, bootargs, parse_exec_log)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(f"{a} {v} {i} {b}\n" for a, v, i, b in turns))
    return status, output, turns


def measure_ticks(cores, bootargs):
    """(status, tick_costs of the run)."""
    marks = tick_marks(ROOT / "target/aarch64-unknown-none/release/beamcore")
    status, _, events = logged_run(cores, bootargs, lambda lines: marked(lines, marks))
    return status, tick_costs(events)


# The run `--ticks` measures by default: nqueens's processes compute for whole slices on every
# core, so half the ticks end a slice and half return.
TICK_BOOTARGS = "workload=nqueens seed=1"

# Where tick_costs' marks are: the IRQ vector of the current EL on SP_EL0 (a process running),
# the symbols' first instructions, and trap_return's last (its `eret`).
IRQ_ON_SP_EL0 = 0x80
TICK_SYMBOLS = {"tick": ("beamcore_sched::hooks::on_tick",), "to_scheduler": ("context_return_to_scheduler",),
                "resumed": ("context_resume_preempted", "process_entry")}


def tick_marks(elf_path):
    """{pc: name} of `tick_costs`' marks in the kernel ELF."""
    elf = ksyms.Elf(Path(elf_path).read_bytes())
    symbols, _, _ = ksyms.code_symbols(elf)
    names = {profile.demangle(name): (address, symbols[i + 1][0] if i + 1 < len(symbols) else None)
             for i, (address, name) in enumerate(symbols)}
    marks = {names["exception_vectors"][0] + IRQ_ON_SP_EL0: "irq"}
    for mark, symbols_of_mark in TICK_SYMBOLS.items():
        for symbol in symbols_of_mark:
            marks[names[symbol][0]] = mark
    start, end = names["trap_return"]
    marks[next(pc for pc in range(end - 4, start - 4, -4) if code_word(elf, pc) == ERET)] = "eret"
    return marks


ERET = 0xD69F03E0


def code_word(elf, address):
    """The 32-bit instruction at `address` of the ELF's loaded code."""
    for section in elf.sections:
        if section["flags"] & ksyms.SHF_EXECINSTR and section["addr"] <= address < section["addr"] + section["size"]:
            offset = section["offset"] + address - section["addr"]
            return int.from_bytes(elf.data[offset:offset + 4], "little")
    raise ValueError(f"{address:#x} is in no code section")


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
    parser.add_argument("--ticks", action="store_true",
                        help="measure what a tick costs the process it interrupts (tick_costs)")
    parser.add_argument("--record", action="store_true",
                        help="with --ticks: record sched.tick and sched.tick_switch in bench/results.json")
    parser.add_argument("bootargs", nargs="*")
    args = parser.parse_args()
    if args.ticks:
        bootargs = " ".join(args.bootargs) or TICK_BOOTARGS
        status, costs = measure_ticks(args.cores, bootargs)
        if status != 0 or not costs["returning"] or not costs["switching"]:
            sys.exit(f"qemu_turns: no tick costs from `{bootargs}` (status {status}): {costs}")
        print(f"qemu_turns: a tick that returns to the process: {costs['returning']} instructions "
              f"(the most common of {costs['returning_count']}); one that ends its slice, to the next "
              f"process's start: {costs['switching']} (of {costs['switching_count']})")
        if args.record:
            results = json.loads(bench.RESULTS.read_text()) if bench.RESULTS.exists() else {}
            cmd = ["scripts/qemu_turns.py", "--ticks", "--cores", str(args.cores), bootargs]
            bench.record(results, {"sched.tick": (costs["returning"], "instructions"),
                                   "sched.tick_switch": (costs["switching"], "instructions")}, cmd, "ticks", show=True)
            bench.write_results(bench.RESULTS, results)
        return
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
