#!/usr/bin/env python3
"""The QEMU launcher: the one place that knows the emulator's name and builds its command line.
Every script and the Makefile boot QEMU through it: Python imports `command` (the argv list),
shell scripts and the Makefile run the command-line interface below, directly or through
scripts/qemu-run.sh (the cargo runner, which adds the environment and a deadline).

    qemu.py [--board virt|rpi4] [--machine-opts OPTS] [--cpu CPU] [--smp N] [--mem SIZE]
            [--icount] [--no-semihosting] [--dtb FILE] [--append BOOTARGS] [--gdb]
            [--gdb-port N] [--exec-log FILE] [--echo LABEL] [--print] KERNEL [-- QEMU_ARGS...]
    qemu.py --version

Runs QEMU in its own place (exec: the process id stays, so `timeout` and a caller's kill reach
QEMU itself); `--print` prints the command line instead, `--echo LABEL` prints it to stderr as
`LABEL: ...` first. `--version` prints QEMU's version, and fails when QEMU is not installed
(scripts/setup.sh asks it). Write bootargs that begin with a dash as `--append=-...`.

The command line, in this order (make bench records it, so the order is kept):
- `virt`: `-M virt[,OPTS] -cpu CPU -smp N [-icount shift=0,sleep=off] -m SIZE`;
  `rpi4`: `-M raspi4b`, whose hardware is fixed (4 Cortex-A72 cores, 2 GiB);
- `-nographic`, `-semihosting` (unless `--no-semihosting`: the Pi image `make rpi4` ships);
- `--exec-log FILE`: every executed instruction logged into FILE (`-accel tcg,one-insn-per-tb=on
  -d exec,nochain -D FILE`: one translation block per instruction; make profile);
- `-kernel KERNEL`, `-dtb FILE` (raspi4b's device tree: bootargs reach the kernel as
  /chosen/bootargs; without it, through ATAGs), `-append BOOTARGS`;
- gdb: `--gdb` waits for gdb on :1234 (`-s -S`), `--gdb-port N` on 127.0.0.1:N (`-S -gdb ...`);
- then the caller's own QEMU arguments (a test header's `qemu-args=`, a runner's extra words).
"""

import os
import shlex
import subprocess
import sys

QEMU = "qemu-system-aarch64"
# Guest time advances one nanosecond per instruction and the cores run in turn: a run repeats
# exactly, whatever the host's load.
ICOUNT = ["-icount", "shift=0,sleep=off"]
BOARDS = ("virt", "rpi4")


def command(kernel, *, board="virt", machine_opts="", cpu="cortex-a72", smp=4, memory="128M",
            icount=False, semihosting=True, append="", dtb=None, gdb=False, gdb_port=None,
            exec_log=None, extra=()):
    """The QEMU argv booting `kernel` (see the module documentation for each option)."""
    if board == "virt":
        machine = f"virt,{machine_opts}" if machine_opts else "virt"
        cmd = [QEMU, "-M", machine, "-cpu", cpu, "-smp", str(smp), *(ICOUNT if icount else []), "-m", memory]
    elif board == "rpi4":
        cmd = [QEMU, "-M", "raspi4b", *(ICOUNT if icount else [])]
    else:
        raise ValueError(f"unknown board {board!r} (known: {', '.join(BOARDS)})")
    cmd.append("-nographic")
    if semihosting:
        cmd.append("-semihosting")
    if exec_log is not None:
        cmd += ["-accel", "tcg,one-insn-per-tb=on", "-d", "exec,nochain", "-D", str(exec_log)]
    cmd += ["-kernel", str(kernel)]
    if dtb is not None:
        cmd += ["-dtb", str(dtb)]
    if append:
        cmd += ["-append", append]
    if gdb:
        cmd += ["-s", "-S"]
    if gdb_port is not None:
        cmd += gdb_wait(gdb_port)
    return cmd + [str(arg) for arg in extra]


def gdb_wait(port):
    """The arguments that stop QEMU before its first instruction, waiting for gdb on `port`."""
    return ["-S", "-gdb", f"tcp:127.0.0.1:{port}"]


def version():
    """QEMU's `--version` output, or None when it is not installed."""
    try:
        return subprocess.run([QEMU, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


def parse(argv):
    """(options, the caller's QEMU arguments): everything after the first `--` is passed on."""
    import argparse
    own, extra = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="store_true", help="print QEMU's version (fails if not installed)")
    parser.add_argument("--board", choices=BOARDS, default="virt")
    parser.add_argument("--machine-opts", default="", help="appended to -M virt (gic-version=3, ...)")
    parser.add_argument("--cpu", default="cortex-a72")
    parser.add_argument("--smp", type=int, default=4)
    parser.add_argument("--mem", default="128M")
    parser.add_argument("--icount", action="store_true", help="-icount shift=0,sleep=off")
    parser.add_argument("--no-semihosting", dest="semihosting", action="store_false")
    parser.add_argument("--dtb", help="device tree (rpi4)")
    parser.add_argument("--append", default="", help="the kernel's command line (bootargs)")
    parser.add_argument("--gdb", action="store_true", help="wait for gdb on :1234")
    parser.add_argument("--gdb-port", type=int, help="wait for gdb on 127.0.0.1:PORT")
    parser.add_argument("--exec-log", help="log every executed instruction into this file")
    parser.add_argument("--echo", metavar="LABEL", help="print `LABEL: <command>` to stderr first")
    parser.add_argument("--print", action="store_true", help="print the command instead of running it")
    parser.add_argument("kernel", nargs="?")
    args = parser.parse_args(own)
    if not args.version and args.kernel is None:
        parser.error("KERNEL is required")
    return args, extra


def main(argv=None):
    args, extra = parse(sys.argv[1:] if argv is None else argv)
    if args.version:
        text = version()
        if text is None:
            sys.exit(f"qemu: {QEMU} not found")
        sys.stdout.write(text)
        return
    cmd = command(args.kernel, board=args.board, machine_opts=args.machine_opts, cpu=args.cpu, smp=args.smp,
                  memory=args.mem, icount=args.icount, semihosting=args.semihosting, append=args.append,
                  dtb=args.dtb, gdb=args.gdb, gdb_port=args.gdb_port, exec_log=args.exec_log, extra=extra)
    if args.print:
        print(shlex.join(cmd))
        return
    if args.echo:
        print(f"{args.echo}: {' '.join(cmd)}", file=sys.stderr, flush=True)
    try:
        os.execvp(cmd[0], cmd)
    except OSError as error:
        sys.exit(f"qemu: cannot run {cmd[0]}: {error}")


if __name__ == "__main__":
    main()
