#!/usr/bin/env python3
"""beamcore against BEAM, Go and Tokio (`make bench BENCH=peers`).

The three micro-benchmarks of `make bench BENCH=sched` (apps/bench/sched.rs), written
idiomatically for Erlang/OTP, Go and Tokio (bench/peers/), built for AArch64 Linux and run under
QEMU's user-mode emulator `qemu-aarch64`. Each program's guest instructions are counted per
guest thread inside QEMU, by a TCG plugin (bench/peers/insn-count.c: an inline add before every
instruction, reported at exit; `count_plugin`), in a `qemu-aarch64` built from Debian's QEMU
source with plugins on (Debian's is static, without them; scripts/setup.sh --peers builds it on
first use). An operation's count is the difference between a run of N2 rounds and one of N1
over the operations in between, so start-up, shut-down and one-time costs cancel out
(`per_operation`).

`--counter log` counts the old way instead, from QEMU's execution log (kept to cross-check the
plugin on Go and Tokio; the BEAM dies under it): `-d in_asm` gives each translated block's
length, `-d exec,nochain` a line per executed block (nochain: a block jumping straight into the
next would not be logged), and a run's count is the sum over executed blocks of their length
(`Tally`).

What it leaves out: the peers' system calls run natively in QEMU and are not counted (beamcore
has none: its figures include everything). A peer's start-up is not in its figure.

Installs what it needs on first use (scripts/setup.sh --peers), then writes
`peers.<erlang|go|tokio>.<yield|hop|spawn_exit>` (instructions) and
`peers.<bench>.beamcore_over_best` (beamcore's `sched.*` over the fewest among the peers) into
bench/results.json and bench/results.md.

Usage: peers.py [--rounds N1,N2] [--only erlang|go|tokio]... [--bench yield|hop|spawn_exit]...
                [--counter plugin|log]
"""

import argparse
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "target/peers"
PEERS = ("erlang", "go", "tokio")
# benchmark -> (beamcore's figure in bench/results.json, operations per round)
BENCHES = {"yield": ("sched.yield", 2), "hop": ("sched.message_hop", 2), "spawn_exit": ("sched.spawn_exit", 1)}
ROUNDS = (4_000, 14_000)
# The counting emulator and its plugin (scripts/setup.sh --peers builds the emulator; build()
# the plugin); Debian's `qemu-aarch64` (same QEMU version) for `--counter log`.
QEMU_PLUGINS = BUILD / "qemu"
QEMU_COUNTING = QEMU_PLUGINS / "bin/qemu-aarch64"
PLUGIN_SOURCE = ROOT / "bench/peers/insn-count.c"
PLUGIN = BUILD / "libinsn-count.so"
QEMU = "qemu-aarch64"
LOG_ITEMS = "in_asm,exec,nochain"
# Erlang: one scheduler (and one of each dirty kind), no busy-waiting of idle schedulers (it
# would count spinning, which depends on the host's speed, not on the work).
ERLANG_FLAGS = ["-S", "1:1", "-SDcpu", "1:1", "-SDio", "1", "-sbwt", "none", "-sbwtdcpu", "none",
                "-sbwtdio", "none"]

# A translated block in `-d in_asm`: `IN: <symbol>` then one `0x<pc>:  <word>  <insn>` per
# instruction. An executed block in `-d exec`: `Trace <cpu>: <host tb> [<cs_base>/<pc>/<flags>/<cflags>]`.
BLOCK = re.compile(rb"^IN:[^\n]*\n((?:0x[0-9a-f]+:[^\n]*\n)+)", re.M)
EXEC = re.compile(rb"^Trace (\d+): 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/[0-9a-f]+/([0-9a-f]+)\]", re.M)
# The low bits of cflags: a block translated to hold at most this many instructions (0: no limit).
CF_COUNT_MASK = 0x1FF
# The plugin's report, a line per guest thread (vCPU) at exit.
PLUGIN_LINE = re.compile(r"^insn-count pid=(\d+) vcpu=(\d+) insns=(\d+)$")


class Tally:
    """Counts the guest instructions in a QEMU `-d in_asm,exec,nochain` log fed in pieces.

    Executions are credited with the length of the block's latest translation at that pc, as
    the log orders them; a block translated with an instruction limit in its cflags (QEMU
    re-runs an instruction alone that way) counts no more than that limit and does not replace
    the pc's usual length. `unknown` counts executions of a pc never seen translated (should
    stay 0), `resized` translations that changed a pc's length (code replaced at one address).
    """

    def __init__(self):
        self.sizes = {}
        self.per_thread = Counter()  # QEMU's cpu index (one per guest thread) -> instructions
        self.lines = {}  # an execution line -> (cpu, pc, instruction limit)
        self.blocks = 0
        self.unknown = 0
        self.resized = 0
        self.rest = b""

    def feed(self, data, final=False):
        buf = self.rest + data
        # Cut before the last execution line, which may be incomplete; all is whole at the end.
        cut = len(buf) if final else buf.rfind(b"\nTrace ") + 1
        if cut <= 0:
            self.rest = buf
            return
        self.rest = buf[cut:]
        start = 0
        for m in self._blocks(buf, cut):
            self._executions(buf, start, m.start())
            start = m.end()
            lines = m.group(1)
            pc = int(lines[2:lines.index(b":")], 16)
            length = lines.count(b"\n")
            after = EXEC.search(buf, start, cut)
            if after and int(after.group(2), 16) == pc and int(after.group(3), 16) & CF_COUNT_MASK:
                continue  # a limited retranslation: counted by its limit
            if self.sizes.get(pc, length) != length:
                self.resized += 1
            self.sizes[pc] = length
        self._executions(buf, start, cut)

    @staticmethod
    def _blocks(buf, end):
        """The translated blocks in buf[:end], found by bytes.find (a regex anchored at every
        line start is ten times slower on a log of a few GB)."""
        at, search = (0 if buf.startswith(b"IN:") else None), 0
        while True:
            if at is None:
                found = buf.find(b"\nIN:", search, end)
                if found < 0:
                    return
                at = found + 1
            m = BLOCK.match(buf, at, end)
            if m:
                yield m
            at, search = None, at

    def _executions(self, buf, start, end):
        if start >= end:
            return
        # Whole lines counted at C speed (a line names one translated block on one thread),
        # then each distinct line parsed once: several times faster than a regex over the log.
        for line, n in Counter(buf[start:end].split(b"\n")).items():
            parsed = self.lines.get(line)
            if parsed is None:
                m = EXEC.match(line)
                if not m:
                    continue
                parsed = self.lines[line] = (int(m.group(1)), int(m.group(2), 16), int(m.group(3), 16) & CF_COUNT_MASK)
            cpu, pc, limit = parsed
            size = self.sizes.get(pc)
            if size is None:
                self.unknown += n
                size = limit
            elif limit:
                size = min(size, limit)
            self.per_thread[cpu] += n * size
            self.blocks += n

    @property
    def insns(self):
        return sum(self.per_thread.values())


def tally_stream(stream, chunk=1 << 24):
    tally = Tally()
    while data := stream.read(chunk):
        tally.feed(data)
    tally.feed(b"", final=True)
    return tally


def per_operation(count_n1, count_n2, n1, n2, ops_per_round):
    """Instructions per operation from two runs' counts: start-up and one-time costs cancel."""
    if n2 <= n1:
        raise ValueError(f"rounds must grow: {n1}, {n2}")
    return (count_n2 - count_n1) / ((n2 - n1) * ops_per_round)


def busiest_thread(threads_n1, threads_n2):
    """The guest thread (QEMU cpu index) whose count grew most from the N1 run to the N2 run:
    the one that ran the benchmark. Another thread's growth (Go's sysmon, the BEAM's helper
    threads) follows the wall-clock time that emulation stretches, not the work."""
    return max(threads_n2, key=lambda cpu: threads_n2[cpu] - threads_n1.get(cpu, 0))


def ratios(results, peers=PEERS):
    """`peers.<bench>.beamcore_over_best` -> (ratio, the peers it is over) for each benchmark
    with beamcore's figure and at least one peer's."""
    out = {}
    for bench, (beamcore_name, _) in BENCHES.items():
        figures = {p: results[f"peers.{p}.{bench}"]["value"] for p in peers if f"peers.{p}.{bench}" in results}
        beamcore = results.get(beamcore_name, {}).get("value")
        if beamcore is None or not figures:
            continue
        out[f"peers.{bench}.beamcore_over_best"] = (round(beamcore / min(figures.values()), 3), sorted(figures))
    return out


def plugin_counts(text, pid):
    """vCPU -> instructions from insn-count's report `text`, the lines of process `pid` only (a
    process that the program forked reports under its own pid, if it exits without exec)."""
    counts = Counter()
    for line in text.splitlines():
        m = PLUGIN_LINE.match(line)
        if m is None:
            if line.strip():
                raise ValueError(f"not an insn-count line: {line!r}")
            continue
        if int(m.group(1)) == pid:
            counts[int(m.group(2))] += int(m.group(3))
    return counts


def count_plugin(cmd, env=None):
    """Runs `cmd` under the counting qemu-aarch64 with insn-count loaded; returns a Tally-like
    record (per_thread, insns)."""
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile() as err:
        report = Path(tmp) / "counts"
        qemu = [str(QEMU_COUNTING), "-plugin", f"{PLUGIN},out={report}", *cmd]
        proc = subprocess.Popen(qemu, env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err)
        proc.wait()
        err.seek(0)
        stderr = err.read().decode(errors="replace")
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}: {stderr[-2000:]}")
        per_thread = plugin_counts(report.read_text() if report.exists() else "", proc.pid)
    if not per_thread:
        raise RuntimeError(f"{' '.join(cmd)}: insn-count reported nothing for pid {proc.pid}")
    return Counted(per_thread)


class Counted:
    """A run's count by the plugin: instructions per guest thread (QEMU's vCPU index)."""

    def __init__(self, per_thread):
        self.per_thread = per_thread

    @property
    def insns(self):
        return sum(self.per_thread.values())


def count_log(cmd, env=None):
    """Runs `cmd` under qemu-aarch64 with its execution log piped here, and tallies it."""
    read_end, write_end = os.pipe()
    qemu = [QEMU, "-d", LOG_ITEMS, "-D", f"/dev/fd/{write_end}", *cmd]
    # The BEAM forks erl_child_setup, and under logging the forked QEMU can hang before its
    # exec (a lock held across the fork) in a session of its own, keeping the log open: once
    # the program has exited, whatever still holds the log's pipe is ended (`end_holders`).
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(qemu, env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err, pass_fds=(write_end,))
        os.close(write_end)
        result = {}
        with os.fdopen(read_end, "rb", buffering=0) as log:
            reader = threading.Thread(target=lambda: result.setdefault("tally", tally_stream(log)))
            reader.start()
            proc.wait()
            end_holders(os.fstat(log.fileno()).st_ino)
            reader.join()
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    tally = result["tally"]
    # The BEAM under this logging may crash in its shut-down (after `peers_done`, from its
    # last line); both runs then stop at the same point, so the difference still holds.
    if proc.returncode != 0 and "peers_done" not in stderr:
        raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}: {stderr[-2000:]}")
    if proc.returncode != 0:
        print(f"    note: exited with {proc.returncode} after its rounds: {stderr.strip()[-200:]}", flush=True)
    if tally.unknown:
        print(f"    warning: {tally.unknown} executions of blocks never seen translated", flush=True)
    return tally


def end_holders(pipe_inode):
    """Kills the processes other than this one that hold the pipe `pipe_inode` open: what a
    program under count_log() forked and left behind."""
    link = f"pipe:[{pipe_inode}]"
    for fd_dir in glob.glob("/proc/[0-9]*/fd"):
        pid = int(fd_dir.split("/")[2])
        try:
            if pid != os.getpid() and any(os.readlink(f"{fd_dir}/{fd}") == link for fd in os.listdir(fd_dir)):
                os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def sh(cmd, cwd=ROOT, env=None):
    print("    $ " + " ".join(map(str, cmd)), flush=True)
    subprocess.run(cmd, cwd=cwd, env=env, check=True)


def erts_bin():
    found = sorted(glob.glob("/usr/lib/erlang/erts-*/bin/beam.smp"))
    if not found:
        sys.exit("peers: no /usr/lib/erlang/erts-*/bin/beam.smp (scripts/setup.sh --peers installs erlang-base:arm64)")
    return Path(found[-1]).parent


def build():
    """Builds the three programs; returns peer -> (function of the bench and rounds giving the
    command to run under qemu-aarch64, environment)."""
    BUILD.mkdir(parents=True, exist_ok=True)
    print("peers: building", flush=True)
    (BUILD / "erlang").mkdir(exist_ok=True)
    # erlc is an AArch64 program too: it runs through binfmt_misc (scripts/setup.sh --peers).
    sh(["erlc", "-o", BUILD / "erlang", ROOT / "bench/peers/erlang/peers.erl"])
    go_env = {**os.environ, "GOARCH": "arm64", "GOOS": "linux", "CGO_ENABLED": "0"}
    sh(["go", "build", "-trimpath", "-o", BUILD / "peers-go", "."], cwd=ROOT / "bench/peers/go", env=go_env)
    # From its own directory, so that its .cargo/config.toml (target, static link) applies.
    tokio_env = {**os.environ, "CARGO_TARGET_DIR": str(BUILD / "tokio")}
    sh(["cargo", "build", "--release", "--locked"], cwd=ROOT / "bench/peers/tokio", env=tokio_env)
    tokio = BUILD / "tokio/aarch64-unknown-linux-gnu/release/peers-tokio"
    # The counting plugin, against the plugin header of the QEMU that setup.sh built.
    sh(["cc", "-shared", "-fPIC", "-O2", "-Wall", *subprocess.check_output(["pkg-config", "--cflags", "glib-2.0"],
                                                                          text=True).split(),
        "-I", QEMU_PLUGINS / "include", "-o", PLUGIN, PLUGIN_SOURCE])

    erts = erts_bin()
    erl_env = {**os.environ, "BINDIR": str(erts), "ROOTDIR": "/usr/lib/erlang", "EMU": "beam", "PROGNAME": "erl"}
    # What `erl` would exec (erl -emu_args_exit shows it), with beam.smp run directly so that
    # the emulator's log covers it; it still execs erl_child_setup, through binfmt_misc.
    return {
        "erlang": (lambda b, n: [str(erts / "beam.smp"), *ERLANG_FLAGS, "--", "-root", "/usr/lib/erlang",
                                 "-bindir", str(erts), "-progname", "erl", "--", "-home", os.environ.get("HOME", "/"),
                                 "-noshell", "-pa", str(BUILD / "erlang"), "-run", "peers", "main", b, str(n)],
                   erl_env),
        "go": (lambda b, n: [str(BUILD / "peers-go"), b, str(n)], {**os.environ, "GOMAXPROCS": "1"}),
        "tokio": (lambda b, n: [str(tokio), b, str(n)], dict(os.environ)),
    }


def write(results_path, results):
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench import write_results  # noqa: E402  (bench.py writes results.json and results.md)
    write_results(results_path, results)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", default=",".join(map(str, ROUNDS)), help="N1,N2 (default %(default)s)")
    parser.add_argument("--only", choices=PEERS, action="append", help="count only this peer (repeatable)")
    parser.add_argument("--bench", choices=BENCHES, action="append", help="only this benchmark (repeatable)")
    parser.add_argument("--counter", choices=("plugin", "log"), default="plugin",
                        help="count with the insn-count plugin (default) or from QEMU's execution log")
    args = parser.parse_args()
    n1, n2 = (int(x) for x in args.rounds.split(","))
    peers = args.only or list(PEERS)

    subprocess.run([str(ROOT / "scripts/setup.sh"), "--peers"], check=True)
    commands = build()
    count, shown_qemu = ((count_plugin, [str(QEMU_COUNTING.relative_to(ROOT)), "-plugin",
                                         f"{PLUGIN.relative_to(ROOT)},out=<file>"])
                         if args.counter == "plugin" else (count_log, [QEMU, "-d", LOG_ITEMS]))
    results_path = ROOT / "bench/results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    for name, _ in BENCHES.values():
        if name not in results:
            print(f"peers: {name} is not in bench/results.json (make bench BENCH=sched): no ratio for it")
    started = time.monotonic()
    figures = {}
    failed = []
    for peer in sorted(peers, key=lambda p: p == "erlang"):  # the slowest last
        command, env = commands[peer]
        for bench, (_, ops) in BENCHES.items():
            if args.bench and bench not in args.bench:
                continue
            try:
                tallies = []
                for n in (n1, n2):
                    t = time.monotonic()
                    tallies.append(count(command(bench, n), env))
                    print(f"peers: {peer} {bench} {n} rounds: {tallies[-1].insns} instructions, by thread "
                          f"{dict(sorted(tallies[-1].per_thread.items()))} ({time.monotonic() - t:.0f}s)", flush=True)
            except RuntimeError as error:
                # A runtime that dies under the log would die in its other benchmarks too.
                print(f"peers: {peer} could not be counted, skipping it: {error}", flush=True)
                failed.append(peer)
                break
            a, b = (t.per_thread for t in tallies)
            cpu = busiest_thread(a, b)
            value = round(per_operation(a[cpu], b[cpu], n1, n2, ops), 1)
            every = per_operation(sum(a.values()), sum(b.values()), n1, n2, ops)
            print(f"peers: {peer} {bench}: {value} on thread {cpu}, {every:.1f} on all threads", flush=True)
            shown = " ".join([*shown_qemu, *command(bench, f"{{{n1},{n2}}}")]).replace(str(ROOT) + "/", "")
            figures[f"peers.{peer}.{bench}"] = {"value": value, "unit": "instructions", "suite": "peers",
                                                "command": shown}
            print(f"bench: peers.{peer}.{bench} {value} instructions", flush=True)
    # Read again: another run (another --only) may have written its figures meanwhile.
    results = {**(json.loads(results_path.read_text()) if results_path.exists() else {}), **figures}
    for name, (value, over) in ratios(results).items():
        results[name] = {"value": value, "unit": "ratio", "suite": "peers",
                         "command": f"beamcore's sched.* over the fewest of peers.{{{','.join(over)}}}.*"}
        print(f"bench: {name} {value} ratio", flush=True)
    write(results_path, results)
    print(f"peers: wrote bench/results.json and bench/results.md ({time.monotonic() - started:.0f}s counting)")
    if failed:
        sys.exit(f"peers: not counted: {', '.join(failed)} (docs/benchmarks.md says why the BEAM may not be)")


if __name__ == "__main__":
    main()
