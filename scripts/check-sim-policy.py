#!/usr/bin/env python3
"""The simulator keeps no copy of the kernel's policy (`make check`).

sim/ models the machine (cores, clocks, costs, QEMU's turns) and asks the kernel's own pure
policy code (crates/sched-policy) every question of policy. A copy drifts: the audit behind this
check found the rebalance trigger and batch, the adaptive strategy's choice, the cooldown's
bookkeeping and the idle search's constants written out again in sim/src/engine.rs. Two rules:

1. No constant or static in sim/src has the name of one defined in kernel/ or crates/: a
   setting the kernel has is imported, not restated.
2. No line of sim/src reads a policy setting of `BalanceConfig` to decide with it, or names
   `Strategy::Adaptive`: those decisions are functions of crates/sched-policy. A line that
   reads one for another purpose (a statistic about the policy, not a decision) says so with
   `// policy-check: <why>` at its end or on the line above.

Usage: check-sim-policy.py [--root DIR]
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Module-level items only: an associated constant (`Workload::NAMES`) names another thing.
ITEM = re.compile(r"^(?:pub(?:\([^)]*\))?\s+)?(?:const|static)\s+([A-Z][A-Z0-9_]*)\s*:", re.M)
# The `BalanceConfig` fields that are policy settings, and the strategy whose choice is policy.
DECISION = re.compile(
    r"\.(min_steal|imbalance|rebalance_ratio|max_migrations|protect_max|cooldown_counts|backoff_base_counts|"
    r"backoff_max_counts|rebalance)\b(?!\s*\()|Strategy::Adaptive")
EXEMPT = "// policy-check:"


def without_tests(text):
    """The source up to its `#[cfg(test)]` module (tests may restate anything)."""
    return text.split("#[cfg(test)]", 1)[0]


def rust_files(directory):
    return sorted(p for p in directory.rglob("*.rs") if "target" not in p.parts)


def kernel_items(root):
    names = {}
    for directory in (root / "kernel", root / "crates"):
        for path in rust_files(directory):
            if "tests" in path.parts:
                continue
            for name in ITEM.findall(without_tests(path.read_text())):
                names.setdefault(name, path.relative_to(root))
    return names


def problems(root):
    found = []
    kernel = kernel_items(root)
    for path in rust_files(root / "sim/src"):
        text = without_tests(path.read_text())
        where = path.relative_to(root)
        for name in ITEM.findall(text):
            if name in kernel:
                found.append(f"{where}: const {name} restates {kernel[name]}'s; import it")
        lines = text.splitlines()
        for number, line in enumerate(lines, 1):
            code = line.split("//", 1)[0]
            if EXEMPT in line or (number > 1 and EXEMPT in lines[number - 2]):
                continue
            match = DECISION.search(code)
            if match:
                found.append(f"{where}:{number}: decides with {match.group(0)!r}, which is policy: call "
                             f"crates/sched-policy (or say why not with `{EXEMPT} ...`)")
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args()
    found = problems(args.root)
    for line in found:
        print(f"check-sim-policy: {line}")
    if found:
        sys.exit(1)
    print("check-sim-policy: sim/ restates no kernel constant and makes no policy decision of its own")


if __name__ == "__main__":
    main()
