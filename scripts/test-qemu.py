#!/usr/bin/env python3
"""Runs beamcore's in-QEMU test suite.

Each tests/NN_name.rs is a small kernel. Its header lines say how to run and judge it:

    //! qemu-test: configs=all                 (or a comma list of CONFIGS names; default a72-smp4;
                                               `all` leaves out secure-smp4, entry at EL3, and
                                               gicv3-smp64, 64 cores: `configs=all,gicv3-smp64`)
    //! qemu-test: append=ticks=3 bogus=1      (kernel command line; \\xNN is that raw byte)
    //! qemu-test: exit=1                      (expected QEMU status; default 0)
    //! qemu-test: expect=<regex>              (a console line must match; repeatable)
    //! qemu-test: forbid=<regex>              (no console line may match; repeatable)
    //! qemu-test: expect-count=smp <regex>    (exactly SMP lines match; or a number; or
                                               `said:LABEL`: as many as the test kernel's own
                                               console line `said-count LABEL: N` says, for a
                                               count only the run knows)
    //! qemu-test: expect-order=<regex>        (lines matching each, in this order; repeatable:
                                               each must match a line after the previous one's)
    //! qemu-test: timeout=60                  (deadline in seconds; default 60)
    //! qemu-test: qemu-args=-device ...       (extra QEMU arguments, split on spaces)
    //! qemu-test: variants=a=1;a=2 b=3         (run once per variant, its words added to append)
    //! qemu-test: gdb=break f;continue;bt         (QEMU waits for gdb-multiarch, which attaches in
                                               batch mode (scripts/debug.py), stops at the first
                                               Rust function, then runs these commands; the checks
                                               read gdb's output and the console; `exit` is gdb's
                                               status; a missing gdb fails the test)
    //! qemu-test: memory=32M,128M,1G          (run once per RAM size, QEMU -m; default 128M;
                                               not on raspi4b, whose RAM is fixed)
    //! qemu-test: profile=release             (build this test with `--release`, for what only
                                               an optimised build shows; default: the suite's)

Cases run one at a time, but those under -icount, which run two at a time after the rest (see
main). A test passes when QEMU exits with the expected status before the deadline and the console
checks hold. A hung test is killed at its deadline and fails; every failure prints the console.
The summary line is `N passed, N failed`.

The `rpi4` configuration is QEMU raspi4b (fixed: 4 Cortex-A72 cores, 2 GiB). The tests listed in
RPI4_CASES run there too, from a `--features board-rpi4` build of the test kernels turned into
flat images (kernel8.img style) and booted with the raspi4b device tree, so their bootargs arrive
as /chosen/bootargs the way the Pi firmware passes cmdline.txt. Two more cases check the image
`make rpi4` ships: it holds no semihosting trap (and the check finds the one in a semihosting
build), and booted on raspi4b it finishes its run with every core parked in a low-power wait. A
last one boots the `make run BOARD=rpi4` kernel without a device tree: RAM and bootargs then
come from QEMU's ATAGs.

Usage: test-qemu.py [--test SUBSTRING]... [--config NAME]... [--list] [--release] [-- cargo args]
"""

import argparse
import concurrent.futures
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import debug  # noqa: E402  (scripts/debug.py: QEMU with gdb-multiarch attached)
import qemu  # noqa: E402  (scripts/qemu.py: the QEMU launcher)
import rpi4  # noqa: E402  (scripts/rpi4.py: the Pi 4 image builds)

# name -> (machine, cpu, smp)
CONFIGS = {
    "a72-smp1": ("virt", "cortex-a72", 1),
    "a72-smp4": ("virt", "cortex-a72", 4),
    "a72-smp8": ("virt", "cortex-a72", 8),
    "gicv3-smp16": ("virt,gic-version=3", "cortex-a72", 16),
    # GICv3 with as few cores as GICv2 allows: the same run on both interrupt controllers. Only
    # tests that name it run here; `configs=all` leaves it out.
    "gicv3-smp8": ("virt,gic-version=3", "cortex-a72", 8),
    # The kernel's MAX_CORES: four GICv3 clusters of 16 (MPIDR Aff1 0-3). Slow under TCG on a
    # small host, so only tests that name it run here; `configs=all` leaves it out.
    "gicv3-smp64": ("virt,gic-version=3", "cortex-a72", 64),
    # GICv3 at 4 cores (cores going offline and back, tests/80-82): only tests that name it
    # run here; `configs=all` leaves it out.
    "gicv3-smp4": ("virt,gic-version=3", "cortex-a72", 4),
    "el2-smp4": ("virt,virtualization=on", "cortex-a72", 4),
    "a53-smp4": ("virt", "cortex-a53", 4),
    "max-smp4": ("virt", "max", 4),
    # Entry at EL3 (QEMU starts every core at the kernel's entry): beamcore must refuse it.
    # Only tests that name it run here; `configs=all` leaves it out (see ALL_CONFIGS).
    "secure-smp4": ("virt,secure=on", "cortex-a72", 4),
}
# What `configs=all` means: every configuration a kernel is expected to boot on, but for the
# 64-core one (too slow to run every test there).
ALL_CONFIGS = [name for name in CONFIGS if name not in ("secure-smp4", "gicv3-smp64", "gicv3-smp4", "gicv3-smp8")]
DEFAULT_CONFIGS = ["a72-smp4"]
# QEMU raspi4b: not part of `configs=all`; its cases are listed below.
RPI4_CONFIG = "rpi4"
RPI4_SMP = 4
# Tests that also run on raspi4b, with the variants run there (their headers' other settings
# apply). Listed here rather than in the headers, so one place says what the Pi 4 covers:
# every core online through the spin table, 10,000 processes, 200,000 alive at once in its
# 2 GiB, the balancer stealing, the backtraces a panic and a process's fault print from the Pi
# build's own symbol table, and gdb on raspi4b.
RPI4_CASES = {
    "01_boot_all_cores": [""],
    "19_ten_thousand_processes": [""],
    "60_hundred_thousand_processes": ["processes=200000"],
    "27_balancer_invariants": ["strategy=load workload=imbalanced"],
    "52_backtrace_kernel_panic": [""],
    "54_backtrace_process_fault": [""],
    "55_gdb_attach": [""],
    "80_cores_offline_workload": ["workload=offline rounds=3"],
    "81_offline_errors_and_bound": [""],
}
# Checks of the `make rpi4` image itself (no semihosting) and of the `make run BOARD=rpi4` kernel
# booted without a device tree (ATAGs); see run_image_case.
IMAGE_CASES = ["rpi4_image_has_no_semihosting_trap", "rpi4_image_parks_every_core", "rpi4_atags_without_device_tree"]
ATAGS_SPEC = {
    "append": "ticks=3 workload=ring bogus=1", "exit": 0, "timeout": 60, "qemu_args": [], "expect_count": [
        ("smp", re.compile(r"^core \d+ online el=1 mpidr=0x[0-9a-f]+$"))],
    "expect": [re.compile(p) for p in (
        r"^platform: no device tree; RAM and command line from ATAGs at 0x100, the rest from raspberry-pi-4 board defaults$",
        r"^platform: ATAGs at 0x100 .* 4 cores, RAM 0x0\+960MiB, GICv2 dist=0xff841000 cpu=0xff842000, spin-table",
        r"^bootargs: bogus=1 ignored", r"^config: .*ticks=3 .*workload=ring", r"^workload ring: ok", r"^report: ")],
    "forbid": [re.compile(r"PANIC|did not come online")],
}
IMAGE_BOOTARGS = "ticks=3 workload=ring"
IMAGE_TIMEOUT_S = 60
# A parked machine: QEMU may use at most this share of one host CPU while every vCPU waits.
PARKED_MAX_CPU_SHARE = 0.05
HEADER = re.compile(r"^//!\s*qemu-test:\s*([a-z-]+)=(.*)$")
# RAM of a `virt` case unless its header's `memory=` says otherwise.
DEFAULT_MEMORY = "128M"


RAW_BYTE = re.compile(r"\\x([0-9a-fA-F]{2})")


def raw_bytes(text: str) -> str:
    """`\\xNN` in a command line becomes that byte (a command line need not be UTF-8). Bytes of
    0x80 and above become surrogate escapes, which subprocess hands to QEMU as the raw byte."""
    return RAW_BYTE.sub(lambda m: bytes([int(m.group(1), 16)]).decode("utf-8", "surrogateescape"), text)


def parse_header(source: Path):
    spec = {"configs": DEFAULT_CONFIGS, "append": "", "exit": 0, "expect": [], "forbid": [],
            "expect_count": [], "expect_order": [], "timeout": 60, "qemu_args": [], "variants": [""],
            "gdb": None, "memory": [DEFAULT_MEMORY], "release": False}
    for line in source.read_text().splitlines():
        m = HEADER.match(line.strip())
        if not m:
            continue
        key, value = m.group(1), m.group(2).strip()
        if key == "configs":
            # `all` may stand among names: `configs=all,gicv3-smp64`.
            names = [c.strip() for c in value.split(",")]
            spec["configs"] = [c for name in names for c in (ALL_CONFIGS if name == "all" else [name])]
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
        elif key == "expect-order":
            spec["expect_order"].append(re.compile(value))
        elif key == "expect-count":
            count, regex = value.split(" ", 1)
            spec["expect_count"].append((count, re.compile(regex)))
        elif key == "variants":
            spec["variants"] = [v.strip() for v in value.split(";") if v.strip()]
        elif key == "qemu-args":
            spec["qemu_args"] = value.split()
        elif key == "memory":
            spec["memory"] = [m.strip() for m in value.split(",") if m.strip()]
        elif key == "timeout":
            spec["timeout"] = int(value)
        elif key == "profile":
            if value not in ("release", "dev"):
                sys.exit(f"{source.name}: profile={value}: only release or dev")
            spec["release"] = value == "release"
        elif key == "gdb":
            spec["gdb"] = [c.strip() for c in value.split(";") if c.strip()]
        else:
            sys.exit(f"{source}: unknown qemu-test key {key!r}")
    return spec


def cargo_test_executables(cmd, label):
    """Runs `cargo test --no-run` (`cmd`) and returns {test name: executable path}."""
    print(f"test-qemu: building{label}:", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"test-qemu:{label} build failed")
    executables = {}
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") and "test" in msg["target"]["kind"]:
            executables[msg["target"]["name"]] = msg["executable"]
    return executables


def build(release: bool, cargo_args):
    cmd = ["cargo", "test", "--no-run", "--message-format=json-render-diagnostics", *cargo_args]
    if release:
        cmd.append("--release")
    return cargo_test_executables(cmd, "")


def build_rpi4(names, release: bool, cargo_args):
    """The raspi4b test kernels (flat images), their ELFs (symbols, for gdb) and the device tree:
    ({name: image}, {name: ELF}, dtb)."""
    target_dir = rpi4.CARGO_TARGET_DIRS[True]
    cmd = ["cargo", "test", "--no-run", "--message-format=json-render-diagnostics", "--features", "board-rpi4",
           "--target-dir", str(target_dir), *[arg for name in names for arg in ("--test", name)], *cargo_args]
    if release:
        cmd.append("--release")
    out_dir = ROOT / "target" / "rpi4-tests"
    elfs = cargo_test_executables(cmd, " for raspi4b")
    images = {name: str(rpi4.flat_binary(Path(executable), out_dir / f"{name}.img")) for name, executable in elfs.items()}
    return images, elfs, str(rpi4.compile_dtb())


def run_case(executable, config, spec, variant, dtb=None, elf=None, memory=DEFAULT_MEMORY):
    append = raw_bytes(" ".join(part for part in (spec["append"], variant) if part))
    if config == RPI4_CONFIG:
        # raspi4b with our device tree (bootargs in /chosen), or with dtb None through ATAGs at
        # x0 = 0x100; its hardware is fixed: 4 Cortex-A72 cores and 2 GiB.
        smp = RPI4_SMP
        cmd = qemu.command(executable, board="rpi4", dtb=dtb, append=append, extra=spec["qemu_args"])
    else:
        machine, cpu, smp = CONFIGS[config]
        opts = machine.split(",", 1)[1] if "," in machine else ""
        cmd = qemu.command(executable, machine_opts=opts, cpu=cpu, smp=smp, memory=memory, append=append,
                           extra=spec["qemu_args"])
    started = time.monotonic()
    if spec.get("gdb") is not None:
        status, output = run_under_gdb(cmd, elf or executable, spec, f"{Path(executable).stem}-{config}")
        if status is None:
            return False, f"deadline of {spec['timeout']}s passed; killed", output, time.monotonic() - started
        return (*judge(output, status, spec, smp), output, time.monotonic() - started)
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=spec["timeout"], stdin=subprocess.DEVNULL, cwd=ROOT)
        output, status = proc.stdout.decode(errors="replace"), proc.returncode
    except subprocess.TimeoutExpired as e:
        output = (e.stdout or b"").decode(errors="replace")
        return False, f"deadline of {spec['timeout']}s passed; killed", output, time.monotonic() - started
    elapsed = time.monotonic() - started
    return (*judge(output, status, spec, smp), output, elapsed)


def run_under_gdb(qemu_cmd, elf, spec, label):
    """QEMU waiting for gdb on a free port, gdb-multiarch attached in batch mode running the
    test's commands (scripts/debug.py, as `make debug` does): (gdb's status or None on
    timeout, gdb's output then the console)."""
    port = debug.free_port()
    console = ROOT / "target" / "gdb-tests" / f"{label}.log"
    try:
        status, gdb_output, log = debug.session(qemu_cmd + qemu.gdb_wait(port), elf, port,
                                                spec["gdb"], timeout=spec["timeout"], console=console)
    except FileNotFoundError:
        return 127, f"test-qemu: {debug.GDB} not found: scripts/setup.sh installs it (Debian package gdb-multiarch)\n"
    return status, f"{gdb_output}--- console ({console.relative_to(ROOT)}) ---\n{log}"


def judge(output, status, spec, smp):
    """(passed, why) of a finished run against its header's checks."""
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
    problems += order_problems(lines, spec.get("expect_order", []))
    for count, regex in spec["expect_count"]:
        # "smp", "smp*K", "said:LABEL" or a number.
        if count.startswith("said:"):
            label = count.split(":", 1)[1]
            said = [m for l in lines if (m := re.fullmatch(rf"said-count {re.escape(label)}: (\d+)", l))]
            if not said:
                problems.append(f"no line `said-count {label}: N` gives the count for /{regex.pattern}/")
                continue
            wanted = int(said[-1].group(1))
        else:
            factor = int(count.split("*", 1)[1]) if count.startswith("smp*") else 1
            wanted = smp * factor if count.startswith("smp") else int(count)
        got = sum(1 for l in lines if regex.search(l))
        if got != wanted:
            problems.append(f"{got} lines match /{regex.pattern}/, expected {wanted}")
    return not problems, "; ".join(problems)


def order_problems(lines, regexes):
    """`expect-order`: each regex must match a line after the one the previous regex matched
    (the first such line is taken). Returns the problem, if any, as a one-item list."""
    at = 0
    for n, regex in enumerate(regexes):
        found = next((i for i in range(at, len(lines)) if regex.search(lines[i])), None)
        if found is None:
            after = f" after the line matching /{regexes[n - 1].pattern}/" if n else ""
            return [f"no line matches /{regex.pattern}/{after}"]
        at = found + 1
    return []


def cpu_seconds(pid):
    """User + system CPU time a process has used, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_image_case(name):
    """The `make rpi4` image (no semihosting): returns (ok, why, output, elapsed)."""
    started = time.monotonic()
    log = []
    if name == "rpi4_image_has_no_semihosting_trap":
        # The shipped image must be clean; the semihosting build of the same kernel must be
        # caught, or the check could not fail.
        report = io.StringIO()
        with contextlib.redirect_stdout(report), contextlib.redirect_stderr(report):
            board = rpi4.check(rpi4.IMAGE_DIR / "kernel8.img", rpi4.IMAGE_DIR / "beamcore.elf")
            caught = rpi4.check(rpi4.QEMU_DIR / "kernel8.img", rpi4.QEMU_DIR / "beamcore.elf", expect_trap=True)
        problems = [why for ok, why in ((board, "kernel8.img holds a semihosting trap"),
                                        (caught, "the check misses the trap in the semihosting build")) if not ok]
        if not problems:
            report.write("test: kernel8.img holds no hlt #0xf000; the check finds the semihosting build's trap\n")
        return not problems, "; ".join(problems), report.getvalue(), time.monotonic() - started
    if name == "rpi4_atags_without_device_tree":
        # The semihosting kernel of `make run BOARD=rpi4`, without -dtb: x0 = 0x100 (ATAGs).
        ok, why, output, elapsed = run_case(str(rpi4.QEMU_DIR / "kernel8.img"), RPI4_CONFIG, ATAGS_SPEC, "", None)
        if ok:
            output += "test: without -dtb the ATAGs gave RAM and bootargs; 4 cores online, ring workload ok\n"
        return ok, why, output, elapsed
    # rpi4_image_parks_every_core: boot it, wait for the final line, then watch QEMU's CPU use
    # for a second: with every vCPU parked in WFI (timer off, GIC interface closed) it is ~0.
    cmd = qemu.command(rpi4.IMAGE_DIR / "kernel8.img", board="rpi4", dtb=rpi4.QEMU_DIR / "raspi4b.dtb",
                       append=IMAGE_BOOTARGS, semihosting=False)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    reader = threading.Thread(target=lambda: log.extend(l.decode(errors="replace") for l in proc.stdout), daemon=True)
    reader.start()
    problems = []
    try:
        deadline = time.monotonic() + IMAGE_TIMEOUT_S
        while not any(l.startswith("halted with status") for l in log):
            if proc.poll() is not None or time.monotonic() > deadline:
                problems.append("no 'halted with status' line" + (" before the deadline" if proc.poll() is None
                                                                  else f"; QEMU exited with {proc.returncode}"))
                break
            time.sleep(0.05)
        if not problems:
            time.sleep(0.5)
            before, watched = cpu_seconds(proc.pid), time.monotonic()
            time.sleep(1.0)
            share = (cpu_seconds(proc.pid) - before) / (time.monotonic() - watched)
            halted = next(l for l in log if l.startswith("halted with status")).strip()
            if halted != f"halted with status 0; all {RPI4_SMP} cores parked":
                problems.append(f"final line {halted!r}")
            if share > PARKED_MAX_CPU_SHARE:
                problems.append(f"QEMU still used {share:.0%} of a host CPU after the halt (at most "
                                f"{PARKED_MAX_CPU_SHARE:.0%} when every core is parked)")
            if proc.poll() is not None:
                problems.append(f"QEMU exited ({proc.returncode}): something trapped instead of parking")
            lines_at_halt = len(log)
            if any("PANIC" in l for l in log):
                problems.append("PANIC on the console")
            if log and not log[-1].startswith("halted with status"):
                problems.append(f"console went on after the final line: {log[-1].strip()!r}")
            if not problems:
                log.append(f"test: {halted}; QEMU used {share:.1%} of a host CPU in the second after; "
                           f"nothing printed after it ({lines_at_halt} lines)\n")
    finally:
        proc.kill()
        proc.wait()
        reader.join(timeout=5)
    return not problems, "; ".join(problems), "".join(log), time.monotonic() - started


# How many -icount cases run at once (see main).
ICOUNT_JOBS = 2


def under_icount(spec):
    """Whether a case runs QEMU under -icount (and not under gdb, which waits on a port)."""
    return spec is not None and "-icount" in spec["qemu_args"] and spec.get("gdb") is None


# Console lines repeated under each failure in the closing summary.
FAILURE_TAIL_LINES = 25


def label_of(name, config, spec, variant, memory):
    """How a case is named in the output: `NN_name @ config [variant] (-m SIZE)`."""
    label = f"{name} @ {config}" + (f" [{variant}]" if variant else "")
    return label + (f" (-m {memory})" if memory != DEFAULT_MEMORY else "")


def select_cases(sources, tests, configs):
    """The cases to run, (name, config, spec, variant, memory) each: every test source whose name
    holds one of `tests` (all when empty), on each configuration its header names (and raspi4b for
    RPI4_CASES) that is among `configs` (all when empty), once per RAM size and variant; then the
    image checks (spec None) those filters let through."""
    cases = []
    for source in sources:
        name = source.stem
        if tests and not any(t in name for t in tests):
            continue
        spec = parse_header(source)
        for config in spec["configs"] + ([RPI4_CONFIG] if name in RPI4_CASES else []):
            if configs and config not in configs:
                continue
            memories = [DEFAULT_MEMORY] if config == RPI4_CONFIG else spec["memory"]
            for memory in memories:
                for variant in (RPI4_CASES[name] if config == RPI4_CONFIG else spec["variants"]):
                    cases.append((name, config, spec, variant, memory))
    for name in IMAGE_CASES:
        if (not tests or any(t in name for t in tests)) and (not configs or RPI4_CONFIG in configs):
            cases.append((name, RPI4_CONFIG, None, "", DEFAULT_MEMORY))
    return cases


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--test", action="append", default=[], help="run tests whose name contains this")
    parser.add_argument("--config", action="append", default=[], help="run only these configurations")
    parser.add_argument("--list", action="store_true", help="list test cases and exit")
    parser.add_argument("--release", action="store_true", help="build tests in release mode")
    parser.add_argument("cargo_args", nargs="*", help="extra cargo arguments (after --)")
    args = parser.parse_args()

    cases = select_cases(sorted((ROOT / "tests").glob("[0-9][0-9]_*.rs")), args.test, args.config)
    if not cases:
        sys.exit("test-qemu: no test matches")
    if args.list:
        for case in cases:
            print(label_of(*case))
        return

    virt_cases = [c for c in cases if c[1] != RPI4_CONFIG]
    rpi4_tests = sorted({c[0] for c in cases if c[1] == RPI4_CONFIG and c[2] is not None})
    executables = build(args.release, args.cargo_args) if virt_cases else {}
    # Tests that ask for an optimised build get one of their own (only them: the suite's other
    # tests keep the suite's profile).
    release_only = sorted({c[0] for c in virt_cases if c[2] is not None and c[2]["release"]})
    if release_only and not args.release:
        executables.update(build(True, [*args.cargo_args, *[a for n in release_only for a in ("--test", n)]]))
    rpi4_images, rpi4_elfs, dtb = build_rpi4(rpi4_tests, args.release, args.cargo_args) if rpi4_tests else ({}, {}, None)
    if any(c[2] is None for c in cases):
        rpi4.build_image()
        rpi4.build_qemu_image()
    def run_one(case):
        name, config, spec, variant, memory = case
        executable = (rpi4_images if config == RPI4_CONFIG else executables).get(name)
        if spec is None:
            return run_image_case(name)
        if executable is None:
            return False, "not built (missing [[test]] entry in Cargo.toml?)", "", 0.0
        elf = rpi4_elfs.get(name) if config == RPI4_CONFIG else executable
        return run_case(executable, config, spec, variant, dtb, elf, memory)

    passed = failed = 0
    failures = []  # (label, why, the console's last lines)
    # Cases under -icount run two at a time, after the others: their QEMU runs every vCPU on one
    # host thread and its guest time counts instructions, so a second QEMU beside it changes
    # nothing it sees but the wall time. The others (MTTCG: one host thread per vCPU, guest time
    # from the host clock) run alone, as a user's `make run` would.
    solo = [c for c in cases if not under_icount(c[2])]
    paired = [c for c in cases if under_icount(c[2])]

    def results():
        for case in solo:
            yield case, run_one(case)
        with concurrent.futures.ThreadPoolExecutor(max_workers=ICOUNT_JOBS) as pool:
            futures = {pool.submit(run_one, case): case for case in paired}
            for future in concurrent.futures.as_completed(futures):
                yield futures[future], future.result()

    for i, (case, (ok, why, output, elapsed)) in enumerate(results(), 1):
        tag = "PASS" if ok else "FAIL"
        label = label_of(*case)
        print(f"[{i}/{len(cases)}] {tag} {label} ({elapsed:.1f}s){'' if ok else ': ' + why}", flush=True)
        if ok:
            checked = [l for l in output.splitlines() if l.startswith("test: ")]
            for line in checked:
                print(f"        {line.rstrip()}")
            passed += 1
        else:
            failed += 1
            failures.append((label, why, output.splitlines()[-FAILURE_TAIL_LINES:]))
            print("        --- console ---")
            for line in output.splitlines():
                print(f"        | {line.rstrip()}")
            print("        --- end ---", flush=True)
    print(f"{passed} passed, {failed} failed")
    if failures:
        # Again at the end, with the reason and the console's last lines: a CI log is often
        # shown only from its tail, and the full console printed above may be out of view.
        for label, why, tail in failures:
            print(f"FAILED {label}: {why}")
            for line in tail:
                print(f"        | {line.rstrip()}")
        print("failed: " + ", ".join(label for label, _, _ in failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
