#!/usr/bin/env python3
"""The repository's packages, read from the manifests (never listed by hand), and `cargo test`
inside each package directory.

    packages.py pure-crates     the workspace members under crates/, by package name (the
                                Makefile's PURE_CRATES)
    packages.py kernel-crates   the kernel's stack of crates (kernel/, the layers under it, boot/),
                                by package name (the Makefile's KERNEL_CRATES)
    packages.py targets         the quick check (`make check`): for each package directory, the
                                target a plain `cargo` started there builds for (the nearest
                                .cargo/config.toml's build.target); fails when a host package
                                would build for bare metal, or a bare-metal one has a test
                                target cargo would try to run on the host
    packages.py test            `cargo test` in each package directory (`make test-packages`)

The package directories: the root (the programs; its tests are the in-QEMU suite, so `test` runs
it as `cargo test --no-run`: make test-qemu boots them), every workspace member (kernel/, otp/,
crates/*, host-bench/) and sim/ (a workspace of its own). examples/* and template/ are projects
with @BEAMCORE@ placeholders, not buildable where they lie: make test-examples fills a copy in and
runs its `make test`, which is `cargo test` there; this script lists them as such.
"""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BARE_METAL = "aarch64-unknown-none"
HOST = "host-tuple"


def is_kernel_dir(directory):
    """A crate of the kernel's stack: kernel/ itself, a layer under it, or boot/."""
    return directory == "kernel" or directory.startswith("kernel/") or directory == "boot"


def manifest(directory):
    return tomllib.loads((ROOT / directory / "Cargo.toml").read_text())


def members():
    """The root workspace's member directories, as its Cargo.toml lists them."""
    return manifest(".")["workspace"]["members"]


def kernel_dirs():
    return [d for d in members() if is_kernel_dir(d)]


def kernel_crates():
    return [manifest(d)["package"]["name"] for d in kernel_dirs()]


def bare_metal_dirs():
    """Where a plain `cargo` must build for bare metal: the kernel's crates and what links them
    (the root's programs, otp/); everything else builds for the host."""
    return {".", "otp", *kernel_dirs()}


def pure_crates():
    return [manifest(d)["package"]["name"] for d in members() if d.startswith("crates/")]


def package_dirs():
    return [".", *members(), "sim"]


def template_dirs():
    return sorted(str(p.parent.relative_to(ROOT)) for p in ROOT.glob("examples/*/Cargo.toml")) + ["template"]


def default_target(directory):
    """build.target of the nearest .cargo/config.toml from `directory` up to the root (cargo's
    rule: the nearer file wins), or None."""
    here = (ROOT / directory).resolve()
    for folder in [here, *here.parents]:
        config = folder / ".cargo" / "config.toml"
        if config.exists():
            target = tomllib.loads(config.read_text()).get("build", {}).get("target")
            if target is not None:
                return target
        if folder == ROOT:
            return None
    return None


def target_problems():
    problems = []
    bare_metal = bare_metal_dirs()
    for directory in package_dirs():
        target = default_target(directory)
        wanted = BARE_METAL if directory in bare_metal else HOST
        if target != wanted:
            problems.append(f"{directory}: a plain cargo builds for {target}, not {wanted}")
        if directory in bare_metal and directory != ".":
            # No libtest on bare metal: every target of the kernel's packages keeps tests off.
            lib = manifest(directory).get("lib", {})
            if lib.get("test", True) or lib.get("doctest", True):
                problems.append(f"{directory}: its library must say test = false and doctest = false")
    return problems


def run_tests():
    failed = []
    for directory in package_dirs():
        cmd = ["cargo", "test", "--no-run"] if directory == "." else ["cargo", "test"]
        print(f"==> packages: {directory}: {' '.join(cmd)}", flush=True)
        if subprocess.run(cmd, cwd=ROOT / directory).returncode != 0:
            failed.append(directory)
    for directory in template_dirs():
        print(f"==> packages: {directory}: a template (@BEAMCORE@): its cargo test runs in make test-examples")
    if failed:
        sys.exit(f"packages: cargo test failed in {', '.join(failed)}")
    print(f"packages: cargo test passes in {len(package_dirs())} package directories")


def main():
    command = sys.argv[1] if len(sys.argv) == 2 else None
    if command == "pure-crates":
        print(" ".join(pure_crates()))
    elif command == "kernel-crates":
        print(" ".join(kernel_crates()))
    elif command == "targets":
        problems = target_problems()
        for problem in problems:
            print(f"packages: {problem}")
        if problems:
            sys.exit(1)
        print(f"packages: {len(package_dirs())} package directories build for their targets by default "
              f"(bare metal: {', '.join(sorted(bare_metal_dirs()))}; host: the rest)")
    elif command == "test":
        run_tests()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
