#!/usr/bin/env python3
"""Checks that the scheduler's hand-off keeps its shape (`make test-handoff`, part of `make test`).

`next_turn_from_process` (kernel/sched/turn/dispatch.rs) is called by the switch's assembly right
after it saved the yielding process's callee-saved registers, and the assembly restores every one
of them from the next process when it returns. Registers the Rust function saved for its own use
would be saved and restored for nothing, so its usual case is written to call nothing out of line
and leave every other case to tail calls; the compiler then gives it a frame record only. That
shape is easy to lose without noticing: one call added to the path (a function the compiler
chooses not to inline, a closure) brings the saves back, and the bench figures move by a dozen
instructions. This check reads the built kernel's disassembly and fails when the function:

- stores a callee-saved register (x19-x28, d8-d15), or
- calls (`bl`, `blr`) anything but a panic (a call that never returns needs no saved register).

Tail calls (`b <function>`) are what it is for and are listed, not refused.

Usage: check-handoff.py [ELF] (default: the `make run` kernel,
target/aarch64-unknown-none/release/beamcore)
"""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ELF = ROOT / "target/aarch64-unknown-none/release/beamcore"
FUNCTION = "next_turn_from_process"

CALLEE_SAVED = re.compile(r"\b(x19|x2[0-8]|d8|d9|d1[0-5])\b")
# `<address>: <mnemonic> <operands>` as llvm-objdump --no-show-raw-insn prints an instruction.
INSTRUCTION = re.compile(r"^\s*[0-9a-f]+:\s+(\S+)\s*(.*)$")
TARGET = re.compile(r"<([^>+]+)")


def instructions(disassembly):
    """[(mnemonic, operands)] of the disassembly's instructions, in order."""
    found = []
    for line in disassembly.splitlines():
        match = INSTRUCTION.match(line)
        if match:
            found.append((match.group(1), match.group(2).strip()))
    return found


def is_panic(symbol):
    """A function that never returns: Rust's panics (`core::panicking::...`, mangled)."""
    return "panicking" in symbol


def problems(listing):
    """What breaks the hand-off's shape, one line each, and the tail calls it makes."""
    found, tail_calls = [], set()
    for mnemonic, operands in listing:
        if mnemonic in ("stp", "str", "stur") and CALLEE_SAVED.search(operands.split("[")[0]):
            found.append(f"saves a callee-saved register: {mnemonic} {operands}")
        elif mnemonic == "blr":
            found.append(f"calls through a register: {mnemonic} {operands}")
        elif mnemonic == "bl":
            target = TARGET.search(operands)
            symbol = target.group(1) if target else operands
            if not is_panic(symbol):
                found.append(f"calls out of line: bl {symbol}")
        elif mnemonic == "b":
            target = TARGET.search(operands)
            if target and not target.group(1).startswith(FUNCTION):
                tail_calls.add(target.group(1))
    return found, sorted(tail_calls)


def disassemble(elf):
    out = subprocess.run(["llvm-objdump", "-d", "--no-show-raw-insn", f"--disassemble-symbols={FUNCTION}",
                          str(elf)], capture_output=True, text=True, check=True).stdout
    return instructions(out)


def main():
    elf = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_ELF
    if not elf.exists():
        sys.exit(f"check-handoff: {elf} is not built (`make kernel`)")
    listing = disassemble(elf)
    if not listing:
        sys.exit(f"check-handoff: no {FUNCTION} in {elf}")
    found, tail_calls = problems(listing)
    if found:
        print(f"check-handoff: {FUNCTION} in {elf.name} has lost its shape (see scripts/check-handoff.py):")
        for line in found:
            print(f"  {line}")
        sys.exit(1)
    print(f"check-handoff: {FUNCTION} ({len(listing)} instructions) saves no callee-saved register and calls "
          f"only panics; it tail-calls {len(tail_calls)} functions")


if __name__ == "__main__":
    main()
