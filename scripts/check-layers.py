#!/usr/bin/env python3
"""The kernel's stack of crates, checked: `make check` runs this (docs/layout.md draws it).

The kernel is a stack of crates, each allowed to depend only on the layers under it:

    beamcore        kernel/        bring-up, the way down, the program API (re-exports the rest)
    beamcore-sched  kernel/sched/  the scheduler
    beamcore-smp    kernel/smp/    cores: per-core state, bring-up, SGIs, tick, halting, console
    beamcore-mm     kernel/mm/     memory: frames, heap, stacks, the process region
    beamcore-boot   boot/          the first code a core runs
    beamcore-hal    kernel/hal/    hardware: arch, locks, drivers, boards, image layout, time

The compiler already refuses a name from a crate that is not a dependency, and cargo refuses a
dependency cycle; what neither refuses is a new dependency that skips no cycle but points up
(memory on cores, say), or two crates of one layer that lean on each other. So this check reads
every kernel crate's manifest and fails when:

- a kernel crate depends on a kernel crate of its own layer or one above it;
- a pure crate (crates/, host-tested, below the whole kernel) depends on any kernel crate;
- a workspace member of the kernel (kernel/..., boot/) is missing from LAYERS, so a new crate
  must be placed in the stack before it builds into it.

Exits 1 with what it found. `scripts/test_layers.py` shows it failing on deliberate violations.
"""

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Bottom first; a crate may depend on crates of lower layers only (index strictly smaller).
LAYERS = [
    ["beamcore-hal"],
    ["beamcore-boot", "beamcore-mm"],
    ["beamcore-smp"],
    ["beamcore-sched"],
    ["beamcore"],
]


def layer_of(name, layers=LAYERS):
    for index, names in enumerate(layers):
        if name in names:
            return index
    return None


def is_kernel_dir(directory):
    return directory == "kernel" or directory.startswith("kernel/") or directory == "boot"


def manifests(root=ROOT):
    """{directory: (package name, [names of its path dependencies])} for the workspace members."""
    workspace = tomllib.loads((root / "Cargo.toml").read_text())["workspace"]["members"]
    found = {}
    for directory in workspace:
        manifest = tomllib.loads((root / directory / "Cargo.toml").read_text())
        deps = [
            name
            for table in ("dependencies", "build-dependencies")
            for name, spec in manifest.get(table, {}).items()
            if isinstance(spec, dict) and "path" in spec
        ]
        found[directory] = (manifest["package"]["name"], deps)
    return found


def problems_of(found, layers=LAYERS):
    problems = []
    kernel = {name for names in layers for name in names}
    for directory, (name, deps) in sorted(found.items()):
        if is_kernel_dir(directory) and layer_of(name, layers) is None:
            problems.append(f"{directory} ({name}) is a kernel crate in no layer: place it in LAYERS")
            continue
        mine = layer_of(name, layers)
        for dep in deps:
            if dep not in kernel:
                continue
            if mine is None:
                if not directory.startswith("crates/"):
                    continue  # a program library above the kernel (otp/): it may use any of it
                problems.append(f"{name} ({directory}) is below the kernel but depends on kernel crate {dep}")
            elif layer_of(dep, layers) >= mine:
                where = "its own layer" if layer_of(dep, layers) == mine else "a layer above it"
                problems.append(f"{name} ({directory}) depends on {dep}, of {where}: only lower layers may be named")
    return problems


def main():
    found = manifests()
    problems = problems_of(found)
    if problems:
        print("\n".join(f"layers: {p}" for p in problems))
        sys.exit(1)
    present = {name for name, _ in found.values()}
    stack = [[n for n in names if n in present] for names in LAYERS]
    shown = " < ".join(names[0] if len(names) == 1 else "{" + ", ".join(names) + "}" for names in stack if names)
    print(f"layers: {sum(map(len, stack))} kernel crates ({shown}), each depending only downward")


if __name__ == "__main__":
    main()
