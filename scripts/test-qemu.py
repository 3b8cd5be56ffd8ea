#!/usr/bin/env python3
"""Runs beamcore's in-QEMU test suite.

Each tests/NN_name.rs is a small kernel. Its header lines say how to run and judge it:

    //! qemu-test: configs=all                 (or a comma list of CONFIGS names; default a72-smp4)
    //! qemu-test: append=ticks=3 bogus=1      (kernel command line)
    //! qemu-test: exit=1                      (expected QEMU status; default 0)
    //! qemu-test: expect=<regex>              (a console line must match; repeatable)
    //! qemu-test: forbid=<regex>              (no console line may match; repeatable)
    //! qemu-test: expect-count=smp <regex>    (exactly SMP lines match; or a number)
    //! qemu-test: timeout=60                  (deadline in seconds; default 60)
    //! qemu-test: qemu-args=-device ...       (extra QEMU arguments, split on spaces)
    //! qemu-test: variants=a=1;a=2 b=3         (run once per variant, its words added to append)

A test passes when QEMU exits with the expected status before the deadline and the console
checks hold. A hung test is killed at its deadline and fails; every failure prints the console.
The summary line is `N passed, N failed`.

Usage: test-qemu.py [--test SUBSTRING]... [--config NAME]... [--list] [--release] [-- cargo args]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name -> (machine, cpu, smp)
CONFIGS = {
    "a72-smp1": ("virt", "cortex-a72", 1),
    "a72-smp4": ("virt", "cortex-a72", 4),
    "a72-smp8": ("virt", "cortex-a72", 8),
    "gicv3-smp16": ("virt,gic-version=3", "cortex-a72", 16),
    "el2-smp4": ("virt,virtualization=on", "cortex-a72", 4),
    "a53-smp4": ("virt", "cortex-a53", 4),
    "max-smp4": ("virt", "max", 4),
}
DEFAULT_CONFIGS = ["a72-smp4"]
HEADER = re.compile(r"^//!\s*qemu-test:\s*([a-z-]+)=(.*)$")


def parse_header(source: Path):
    spec = {"configs": DEFAULT_CONFIGS, "append": "", "exit": 0, "expect": [], "forbid": [],
            "expect_count": [], "timeout": 60, "qemu_args": [], "variants": [""]}
    for line in source.read_text().splitlines():
        m = HEADER.match(line.strip())
        if not m:
            continue
        key, value = m.group(1), m.group(2).strip()
        if key == "configs":
            spec["configs"] = list(CONFIGS) if value == "all" else [c.strip() for c in value.split(",")]
            unknown = [c for c in spec["configs"] if c not in CONFIGS]
            if unknown:
                sys.exit(f"{source}: unknown config(s) {unknown}; known: {list(CONFIGS)}")
        elif key == "append":
            spec["append"] = value
        elif key == "exit":
            spec["exit"] = int(value)
        elif key == "expect":
            spec["expect"].append(re.compile(value))
        elif key == "forbid":
            spec["forbid"].append(re.compile(value))
        elif key == "expect-count":
            count, regex = value.split(" ", 1)
            spec["expect_count"].append((count, re.compile(regex)))
        elif key == "variants":
            spec["variants"] = [v.strip() for v in value.split(";") if v.strip()]
        elif key == "qemu-args":
            spec["qemu_args"] = value.split()
        elif key == "timeout":
            spec["timeout"] = int(value)
        else:
            sys.exit(f"{source}: unknown qemu-test key {key!r}")
    return spec


def build(release: bool, cargo_args):
    cmd = ["cargo", "test", "--no-run", "--message-format=json-render-diagnostics", *cargo_args]
    if release:
        cmd.append("--release")
    print("test-qemu: building:", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit("test-qemu: build failed")
    executables = {}
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") and "test" in msg["target"]["kind"]:
            executables[msg["target"]["name"]] = msg["executable"]
    return executables


def run_case(executable, config, spec, variant):
    machine, cpu, smp = CONFIGS[config]
    cmd = ["qemu-system-aarch64", "-M", machine, "-cpu", cpu, "-smp", str(smp), "-m", "128M",
           "-nographic", "-semihosting", "-kernel", executable]
    append = " ".join(part for part in (spec["append"], variant) if part)
    if append:
        cmd += ["-append", append]
    cmd += spec["qemu_args"]
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=spec["timeout"], stdin=subprocess.DEVNULL, cwd=ROOT)
        output, status = proc.stdout.decode(errors="replace"), proc.returncode
    except subprocess.TimeoutExpired as e:
        output = (e.stdout or b"").decode(errors="replace")
        return False, f"deadline of {spec['timeout']}s passed; killed", output, time.monotonic() - started
    elapsed = time.monotonic() - started
    lines = [l.rstrip("\r") for l in output.splitlines()]
    problems = []
    if status != spec["exit"]:
        problems.append(f"exit status {status}, expected {spec['exit']}")
    for regex in spec["expect"]:
        if not any(regex.search(l) for l in lines):
            problems.append(f"no line matches /{regex.pattern}/")
    for regex in spec["forbid"]:
        bad = [l for l in lines if regex.search(l)]
        if bad:
            problems.append(f"line matches forbidden /{regex.pattern}/: {bad[0]!r}")
    for count, regex in spec["expect_count"]:
        # "smp", "smp*K" or a number.
        factor = int(count.split("*", 1)[1]) if count.startswith("smp*") else 1
        wanted = smp * factor if count.startswith("smp") else int(count)
        got = sum(1 for l in lines if regex.search(l))
        if got != wanted:
            problems.append(f"{got} lines match /{regex.pattern}/, expected {wanted}")
    return not problems, "; ".join(problems), output, elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--test", action="append", default=[], help="run tests whose name contains this")
    parser.add_argument("--config", action="append", default=[], help="run only these configurations")
    parser.add_argument("--list", action="store_true", help="list test cases and exit")
    parser.add_argument("--release", action="store_true", help="build tests in release mode")
    parser.add_argument("cargo_args", nargs="*", help="extra cargo arguments (after --)")
    args = parser.parse_args()

    sources = sorted((ROOT / "tests").glob("[0-9][0-9]_*.rs"))
    cases = []
    for source in sources:
        name = source.stem
        if args.test and not any(t in name for t in args.test):
            continue
        spec = parse_header(source)
        for config in spec["configs"]:
            if args.config and config not in args.config:
                continue
            for variant in spec["variants"]:
                cases.append((name, config, spec, variant))
    if not cases:
        sys.exit("test-qemu: no test matches")
    if args.list:
        for name, config, _, variant in cases:
            print(f"{name} @ {config}" + (f" [{variant}]" if variant else ""))
        return

    executables = build(args.release, args.cargo_args)
    passed = failed = 0
    failures = []
    for i, (name, config, spec, variant) in enumerate(cases, 1):
        executable = executables.get(name)
        if executable is None:
            ok, why, output, elapsed = False, "not built (missing [[test]] entry in Cargo.toml?)", "", 0.0
        else:
            ok, why, output, elapsed = run_case(executable, config, spec, variant)
        tag = "PASS" if ok else "FAIL"
        label = f"{name} @ {config}" + (f" [{variant}]" if variant else "")
        print(f"[{i}/{len(cases)}] {tag} {label} ({elapsed:.1f}s){'' if ok else ': ' + why}", flush=True)
        if ok:
            checked = [l for l in output.splitlines() if l.startswith("test: ")]
            for line in checked:
                print(f"        {line.rstrip()}")
            passed += 1
        else:
            failed += 1
            failures.append(label)
            print("        --- console ---")
            for line in output.splitlines():
                print(f"        | {line.rstrip()}")
            print("        --- end ---", flush=True)
    print(f"{passed} passed, {failed} failed")
    if failures:
        print("failed: " + ", ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
