#!/usr/bin/env python3
"""`make debug`: QEMU stopped at the kernel's first instruction, and gdb-multiarch attached to
it with the kernel's symbols, stopped at its first Rust function (`boot_core_entry`). Every core
is a thread of gdb's (`info threads`, `thread N`).

    debug.py ELF KERNEL [--port N] [--batch] [-ex COMMAND]...

ELF holds the symbols; KERNEL is what QEMU boots (the same ELF on `virt`, the flat
kernel8.img on raspi4b: BOARD=rpi4). QEMU is started through scripts/qemu-run.sh, so BOARD,
SMP, CPU, MACHINE_OPTS, MEM and ARGS apply as for `make run`. Its console goes to
target/debug/console.log (`tail -f` it in another terminal): gdb keeps the terminal. QEMU is
ended when gdb exits. `--batch` runs the -ex commands after the stop and exits (the suite's
debugger test, tests/55, runs through `session` below); without it gdb is interactive.

test-qemu.py imports this module for its gdb cases.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import qemu  # noqa: E402  (scripts/qemu.py: the QEMU launcher)

GDB = "gdb-multiarch"
FIRST_RUST_FUNCTION = "boot_core_entry"
CONSOLE_LOG = ROOT / "target" / "debug" / "console.log"
LISTEN_TIMEOUT_S = 20


def free_port() -> int:
    """A TCP port nothing listens on now (a test may then use it; another helper's `make gdb`
    keeps 1234)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    """True once something listens on 127.0.0.1:`port`, read from /proc/net/tcp: connecting to
    find out would be taken by QEMU's gdbstub as a debugger that came and went, and it would
    start the machine."""
    wanted = f"0100007F:{port:04X}"
    try:
        lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return False
    return any(f[1] == wanted and f[3] == "0A" for f in (line.split() for line in lines) if len(f) > 3)


def gdb_command(elf, port: int, commands, batch: bool) -> list:
    """gdb-multiarch on `elf`, attached to QEMU's gdbstub on `port`, stopped at the kernel's
    first Rust function on the boot core, then `commands`."""
    cmd = [GDB, "-q"]
    if batch:
        cmd += ["-batch", "-nx"]
    cmd.append(str(elf))
    for command in ["set pagination off", "set confirm off", f"target remote 127.0.0.1:{port}",
                    f"break {FIRST_RUST_FUNCTION}", "continue", *commands]:
        cmd += ["-ex", command]
    return cmd


def session(qemu_cmd, elf, port: int, commands=(), batch=True, timeout=None, console=CONSOLE_LOG, env=None):
    """Starts `qemu_cmd` (which must wait for gdb on `port`), attaches gdb and runs `commands`.
    Returns (gdb's exit status or None on timeout, gdb's output (batch) or "", the console).
    QEMU is always ended before returning. Raises FileNotFoundError without gdb-multiarch."""
    console = Path(console)
    console.parent.mkdir(parents=True, exist_ok=True)
    with open(console, "wb") as log:
        # Its own session: a Ctrl-C meant for gdb (to stop the target) must not end QEMU.
        emulator = subprocess.Popen(qemu_cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, env=env)
    try:
        deadline = time.monotonic() + LISTEN_TIMEOUT_S
        while not listening(port):
            if emulator.poll() is not None:
                return emulator.returncode, f"debug: QEMU exited with status {emulator.returncode} before listening\n", \
                    console.read_text(errors="replace")
            if time.monotonic() > deadline:
                return None, f"debug: QEMU not listening on port {port} after {LISTEN_TIMEOUT_S} s\n", \
                    console.read_text(errors="replace")
            time.sleep(0.05)
        cmd = gdb_command(elf, port, commands, batch)
        if batch:
            try:
                proc = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, timeout=timeout)
                status, output = proc.returncode, proc.stdout.decode(errors="replace")
            except subprocess.TimeoutExpired as e:
                status, output = None, (e.stdout or b"").decode(errors="replace")
        else:
            # gdb has the terminal; a Ctrl-C is its (it stops the target), not ours.
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                status, output = subprocess.run(cmd, cwd=ROOT).returncode, ""
            finally:
                signal.signal(signal.SIGINT, previous)
    finally:
        if emulator.poll() is None:
            os.killpg(emulator.pid, signal.SIGTERM)
            try:
                emulator.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(emulator.pid, signal.SIGKILL)
                emulator.wait()
    return status, output, console.read_text(errors="replace")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("elf", type=Path, help="the kernel ELF with symbols")
    parser.add_argument("kernel", type=Path, help="what QEMU boots (the ELF, or kernel8.img for BOARD=rpi4)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("GDB_PORT", "1234")))
    parser.add_argument("--batch", action="store_true", help="run the -ex commands and exit")
    parser.add_argument("-ex", dest="commands", action="append", default=[], help="a gdb command after the stop")
    args = parser.parse_args()
    qemu_cmd = [str(ROOT / "scripts" / "qemu-run.sh"), str(args.kernel), *qemu.gdb_wait(args.port)]
    env = dict(os.environ, TIMEOUT="0")
    board = os.environ.get("BOARD", "virt")
    print(f"debug: QEMU ({board}) waiting on 127.0.0.1:{args.port}; its console goes to "
          f"{CONSOLE_LOG.relative_to(ROOT)} (tail -f it in another terminal)", flush=True)
    print(f"debug: gdb stops at {FIRST_RUST_FUNCTION} on core 0; `info threads` lists every core, "
          "`continue` runs, Ctrl-C stops every core, `quit` ends QEMU too", flush=True)
    try:
        status, output, _ = session(qemu_cmd, args.elf, args.port, args.commands, batch=args.batch, env=env)
    except FileNotFoundError:
        sys.exit(f"debug: {GDB} not found: run scripts/setup.sh (Debian package gdb-multiarch)")
    sys.stdout.write(output)
    sys.exit(1 if status is None else status)


if __name__ == "__main__":
    main()
