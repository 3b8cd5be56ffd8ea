#!/usr/bin/env python3
"""Where the scheduler's instructions go (`make profile`): the cost breakdown of
`make bench BENCH=sched`, counted instruction by instruction.

Runs the `bench-sched` kernel as the bench does (one Cortex-A72 core, `-icount shift=0,sleep=off`)
with QEMU logging every instruction it executes (`-accel tcg,one-insn-per-tb=on -d exec,nochain`:
one translation block per instruction, each logged as it runs). The log, several GB, is never
written to disk: QEMU writes it into a pipe and this script counts program counters as they come.
The bench marks each benchmark with out-of-line functions (`profile_begin_<name>` ...
`profile_end`, apps/bench/sched.rs); the instructions executed between them are that benchmark's.
Program counters are mapped to the functions of the ELF's symbol table (inlined code counts for
the function it was inlined into), and divided by the benchmark's operations (2 x ROUNDS for a
yield and a message hop, ROUNDS for spawn+exit and link_exit, the bench's `counted=` spawns for
spawn_alive and spawn_alive_reused).

Writes bench/sched-profile.md (per benchmark: the total per operation, which should agree with the
bench's figure within an instruction or two, the symbols by share, and the source functions by
share, inlined code under its own name from llvm-addr2line's inline frames) and prints it.

With `--listing DIR`, also writes DIR/<benchmark>.txt: every instruction the benchmark executed,
in address order, with its count per operation and its disassembly (llvm-objdump), grouped by
symbol: the place to read when a figure must come down.

Usage: profile.py [--elf target/aarch64-unknown-none/release/bench-sched] [--top 14]
                  [--out bench/sched-profile.md] [--listing DIR] [--bootargs telemetry=off]
"""

import argparse
import bisect
import collections
import os
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import ksyms  # noqa: E402  (the ELF symbol reader the kernel's symbol table is built with)
import qemu  # noqa: E402  (scripts/qemu.py: the QEMU launcher)

# The bench's machine (scripts/qemu.py's `command` options); `exec_log` adds the instruction log.
QEMU_MACHINE = {"smp": 1, "icount": True}
BOOTARGS = "slice_us=1000000"
# Benchmarks and how many operations each performs per round (apps/bench/sched.rs `report`).
OPERATIONS_PER_ROUND = {"yield": 2, "message_hop": 2, "spawn_exit": 1, "link_exit": 1}
# Benchmarks that count a fixed number of operations (the bench's `counted=`), not rounds: the
# last 1,000 of 3,000 spawns of processes that stay alive, while the table grows and again.
COUNTED_BENCHES = ("spawn_alive", "spawn_alive_reused")
BENCHES = (*OPERATIONS_PER_ROUND, *COUNTED_BENCHES)
MARK_BEGIN = "profile_begin_"
MARK_END = "profile_end"
# Seconds the profiled run may take (it takes about 45 on a 2-CPU machine).
TIMEOUT_S = 900


# Legacy mangling's escapes for the characters a symbol cannot hold.
ESCAPES = (("$LT$", "<"), ("$GT$", ">"), ("$RF$", "&"), ("$BP$", "*"), ("$C$", ","), ("$u20$", " "),
           ("$u27$", "'"), ("$u5b$", "["), ("$u5d$", "]"), ("$u7b$", "{"), ("$u7d$", "}"), ("$u7e$", "~"),
           ("..", "::"))


def demangle(name):
    """A Rust legacy-mangled symbol (`_ZN...17h<hash>E`), or one llvm-addr2line printed half
    decoded (`a..b::h<hash>`), as a path without its hash; other names as they are."""
    if name.startswith("_ZN") and name.endswith("E"):
        parts, i, body = [], 3, name[:-1]
        while i < len(body):
            m = re.match(r"\d+", body[i:])
            if not m:
                return name
            n = int(m.group())
            i += len(m.group())
            parts.append(body[i:i + n])
            i += n
        name = "::".join(parts)
    name = re.sub(r"::h[0-9a-f]{16}$", "", name)
    for code, char in ESCAPES:
        name = name.replace(code, char)
    return name


# Inline frames of library code (atomics, register accessors, `mem::replace`) are counted for the
# nearest frame of the project's own code that inlined them.
LIBRARY_PREFIXES = ("core::", "alloc::", "_<core::", "_<alloc::", "aarch64_cpu::", "_<aarch64_cpu::",
                    "tock_registers::", "_<tock_registers::", "compiler_builtins::", "spin::", "_<spin::")


def is_library(name):
    """Whether a frame is library code: the standard library's own symbols use the v0 mangling
    (`_R...`), which the project's crates do not."""
    return name.startswith(LIBRARY_PREFIXES) or name.startswith("_R")


def inline_frames(output):
    """{address: [function, ...] innermost first} from `llvm-addr2line -a -f -i` output, where each
    answer starts with its address on a line of its own, then pairs of lines (function, file:line)."""
    frames, current, expect_function = {}, None, True
    for line in output.splitlines():
        if re.fullmatch(r"0x[0-9a-f]+", line):
            current, expect_function = int(line, 16), True
            frames[current] = []
        elif current is not None:
            if expect_function:
                frames[current].append(line)
            expect_function = not expect_function
    return frames


def source_frames(pcs, elf_path):
    """{address: [function, ...] innermost first, demangled} for the program counters `pcs` (hex
    strings), from llvm-addr2line's inline frames."""
    if not pcs:
        return {}
    out = subprocess.run(["llvm-addr2line", "-a", "-f", "-i", "-e", str(elf_path)],
                         input="".join(f"0x{pc}\n" for pc in pcs), capture_output=True, text=True, check=True).stdout
    return {address: [demangle(f) for f in names if f != "??"] for address, names in inline_frames(out).items()}


def by_source_function(counter, frames):
    """Counter(pc as hex) -> Counter(source function): for each instruction, the innermost
    function of the project's own code in its inline frames (code it inlined from a library
    counts for it)."""
    functions = collections.Counter()
    for pc in sorted(counter):
        names = frames.get(int(pc, 16), [])
        own = next((f for f in names if not is_library(f)), names[-1] if names else "?")
        functions[own] += counter[pc]
    return functions


# What an instruction is for, judged by the functions it was inlined from: each purpose with the
# function-name fragments that mark it, in order of precedence (an instruction of a counter
# update inlined into the queue-wait histogram counts for the histogram; a deque operation inlined
# into the run queue's take counts for the deque).
PURPOSES = (
    ("queue-wait stamp and histogram", ("stamp_queued", "record_wait", "queue_wait::")),
    ("per-turn heap accounting", ("account_heap", "heap::counted", "heap::start_count")),
    ("trace switch (trace=off)", ("record::trace::",)),
    ("deque: push, FIFO take (LDXR/STXR)", ("beamcore_deque::",)),
    ("counters (turns, takes, runnable counts)", ("record::stats::", "SharedQueues::count")),
    ("IRQ mask, per-core lookup", ("cpu::irq_save", "cpu::irq_restore", "OnCore::enter", "this_scheduler",
                                   "switch_away")),
    ("locks", ("irq_lock::", "spin::")),
    ("messages: mailbox, send, receive", ("mailbox::", "receive::", "wait_for_message", "calls::send", "signal_queue::")),
    ("run queues: levels, run-next, private, wake", ("runqueue::", "wake::", "OnCore::enqueue")),
    ("spawn: slot, stack, entry", ("table::", "stacks::", "Entry::put", "spawn_with", "on_kernel_stack")),
    ("exit: ending the process", ("ending::", "calls::exit", "exit_out")),
    ("the turn: end, pick, start (dispatch)", ("dispatch::", "next_turn_from_process", "next_turn_after_exit", "switch_out")),
    # Last: the benchmark's functions inline the API calls above, which count for themselves.
    ("the process's own code (the benchmark's loop, its closure's call)", ("bench_sched::", "entry::",
                                                                             "process_entry")),
)
SWITCH_PURPOSE = "register save and restore, stack switch (context.S)"
# The Rust functions that only call into context.S.
SWITCH_WRAPPERS = ("context::leave_process", "context::switch_from_process")


def purpose_of(symbol, names):
    """The purpose of one instruction: in `symbol` (the linker's function) with inline frames
    `names` (innermost first)."""
    if symbol.startswith("context_") or any(name.endswith(SWITCH_WRAPPERS) for name in names):
        return SWITCH_PURPOSE
    for purpose, fragments in PURPOSES:
        if any(fragment in name for name in names for fragment in fragments):
            return purpose
    own = next((f for f in names if not is_library(f)), symbol)
    return f"other ({own})"


def symbol_lookup(symbols):
    """A function from an address to the demangled name of the symbol it lies in ("?" below the
    first), over sorted [(address, name)]."""
    addresses = [a for a, _ in symbols]

    def name_of(address):
        i = bisect.bisect_right(addresses, address) - 1
        return demangle(symbols[i][1]) if i >= 0 else "?"
    return name_of


def by_purpose(counter, frames, symbols):
    """Counter(pc as hex) -> Counter(purpose), see `PURPOSES`."""
    name_of = symbol_lookup(symbols)
    purposes = collections.Counter()
    for pc, n in counter.items():
        address = int(pc, 16)
        purposes[purpose_of(name_of(address), frames.get(address, []))] += n
    return purposes


def count_segments(lines, marks):
    """{segment: Counter(pc)} from QEMU `-d exec` lines. `marks` maps a program counter (as the
    log spells it: 16 hex digits) to a segment name, or to None for the end of one; lines outside
    a segment are not counted."""
    segments = collections.defaultdict(collections.Counter)
    current = None
    for line in lines:
        start = line.find("/")
        if start < 0 or not line.startswith("Trace"):
            continue
        pc = line[start + 1:start + 17]
        if pc in marks:
            current = marks[pc]
        if current is not None:
            segments[current][pc] += 1
    return segments


def by_function(counter, symbols):
    """Counter(pc as hex) -> Counter(function name), from sorted [(address, name)]."""
    name_of = symbol_lookup(symbols)
    functions = collections.Counter()
    for pc, n in counter.items():
        functions[name_of(int(pc, 16))] += n
    return functions


def table(heading, functions, operations, top, column="function"):
    """Markdown: the functions by instructions per operation, the largest first; those under
    0.05 per operation and those past `top` summed as the rest."""
    total = sum(functions.values())
    lines = [heading, "", f"| {column} | instructions per operation | share |", "|---|---|---|"]
    rest = total
    for function, n in functions.most_common(top):
        if n / operations < 0.05:
            break
        lines.append(f"| `{function}` | {n / operations:.1f} | {n / total:.0%} |")
        rest -= n
    if rest:
        lines.append(f"| (the rest) | {rest / operations:.1f} | {rest / total:.0%} |")
    return lines + [""]


def disassembly(elf_path):
    """{address: instruction text} for the ELF's code, from llvm-objdump."""
    out = subprocess.run(["llvm-objdump", "-d", "--no-show-raw-insn", str(elf_path)], capture_output=True, text=True,
                         check=True).stdout
    listing = {}
    for line in out.splitlines():
        match = re.match(r"\s*([0-9a-f]+):\s+(.*)", line)
        if match:
            listing[int(match.group(1), 16)] = match.group(2).strip()
    return listing


def listing_lines(counter, symbols, instructions, operations):
    """Text: each executed instruction in address order, with its count per operation, under a
    heading per symbol that gives the symbol's total."""
    name_of = symbol_lookup(symbols)
    by_symbol = collections.defaultdict(list)
    for pc, n in counter.items():
        address = int(pc, 16)
        by_symbol[name_of(address)].append((address, n))
    lines = []
    for name, rows in sorted(by_symbol.items(), key=lambda item: -sum(n for _, n in item[1])):
        lines.append(f"== {name}: {sum(n for _, n in rows) / operations:.1f} per operation")
        for address, n in sorted(rows):
            lines.append(f"{n / operations:8.2f}  {address:x}  {instructions.get(address, '?')}")
        lines.append("")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elf", default=str(ROOT / "target/aarch64-unknown-none/release/bench-sched"))
    parser.add_argument("--top", type=int, default=14)
    parser.add_argument("--out", default=str(ROOT / "bench/sched-profile.md"))
    parser.add_argument("--listing", help="directory for an annotated disassembly per benchmark")
    parser.add_argument("--bootargs", default="", help="words added to the bench's command line "
                        "(telemetry=off: where a reduced level's instructions go)")
    args = parser.parse_args()
    elf = ksyms.Elf(Path(args.elf).read_bytes())
    symbols, _, _ = ksyms.code_symbols(elf)
    marks = {}
    for address, name in symbols:
        if name.startswith(MARK_BEGIN):
            marks[f"{address:016x}"] = name[len(MARK_BEGIN):]
        elif name == MARK_END:
            marks[f"{address:016x}"] = None
    if len(marks) != len(BENCHES) + 1:
        sys.exit(f"profile: {args.elf} has marks {sorted(n for n in marks.values() if n)}; "
                 f"expected {sorted(BENCHES)} and {MARK_END}")
    with tempfile.TemporaryDirectory() as tmp:
        fifo = os.path.join(tmp, "exec.log")
        os.mkfifo(fifo)
        cmd = qemu.command(args.elf, **QEMU_MACHINE, exec_log=fifo, append=f"{BOOTARGS} {args.bootargs}".strip())
        console = []
        emulator = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                text=True)
        reader = threading.Thread(target=lambda: console.extend(emulator.stdout), daemon=True)
        reader.start()
        # A QEMU that exits before it opens its log (a bad option, say) would leave the open below
        # waiting for a writer for ever: a watcher opens the pipe's other end then, and a QEMU that
        # runs past the deadline is stopped.
        def watch():
            try:
                emulator.wait(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                emulator.kill()
                emulator.wait()
            # Without blocking: once the count has read the log to its end, nobody reads the pipe
            # (ENXIO) or it is gone with the directory (ENOENT), and there is nothing to unblock.
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        threading.Thread(target=watch, daemon=True).start()
        with open(fifo, errors="replace") as log:
            segments = count_segments(log, marks)
        status = emulator.wait()
        reader.join()
    output = "".join(console)
    if status != 0:
        sys.exit(f"profile: QEMU exited with {status}:\n{output[-2000:]}")
    rounds = int(re.search(r"rounds=(\d+)", output).group(1))
    counted = int(re.search(r"counted=(\d+)", output).group(1))

    def operations_of(name):
        return counted if name in COUNTED_BENCHES else OPERATIONS_PER_ROUND[name] * rounds
    bench = dict(re.findall(r"bench: sched\.(\w+)(?:\.\w+)? (\d+) insns", output))
    lines = ["# Where the scheduler's instructions go (`make profile`)", "",
             "Written by `scripts/profile.py`: the `bench-sched` kernel of `make bench BENCH=sched` (one "
             "Cortex-A72 core, `-icount shift=0,sleep=off`), every executed instruction counted by QEMU "
             "(`-accel tcg,one-insn-per-tb=on -d exec,nochain`) between the bench's marks, mapped to the "
             "function it belongs to (code inlined into a function counts for it). "
             f"{rounds} rounds per benchmark ({counted} spawns for `spawn_alive` and "
             "`spawn_alive_reused`); the bench's own figures in this run: "
             + ", ".join(f"{name} {bench.get(name, '?')}" for name in BENCHES) + ".", ""]
    for name in BENCHES:
        counter = segments.get(name, collections.Counter())
        operations = operations_of(name)
        total = sum(counter.values()) / operations
        lines += [f"## `sched.{name}`: {total:.1f} instructions per operation (the bench: {bench.get(name, '?')})", ""]
        lines += table("By symbol (what the linker sees):", by_function(counter, symbols), operations, args.top)
        frames = source_frames(sorted(counter), args.elf)
        lines += table("By source function (code inlined from the project's own functions under their names, "
                       "library code under the function that inlined it; llvm-addr2line's inline frames):",
                       by_source_function(counter, frames), operations, args.top)
        lines += table("By purpose (what each instruction is for, from the functions it was inlined from; "
                       "`PURPOSES` in scripts/profile.py):", by_purpose(counter, frames, symbols), operations,
                       len(PURPOSES) + 6, column="purpose")
    if args.listing:
        instructions = disassembly(args.elf)
        Path(args.listing).mkdir(parents=True, exist_ok=True)
        for name in BENCHES:
            counter = segments.get(name, collections.Counter())
            text = "\n".join(listing_lines(counter, symbols, instructions, operations_of(name)))
            (Path(args.listing) / f"{name}.txt").write_text(text)
    text = "\n".join(lines)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
