#!/usr/bin/env python3
"""make soak: the soak kernel (apps/soak.rs) at 4 and 8 cores, one boot each, under plain
MTTCG (real concurrency between vCPUs, which is what shakes out races; -icount would serialise
them). Each boot runs every workload and a steal storm under every victim strategy for SOAK_S
seconds of guest time, checking exactly-once after every run. Until the boots together have
made --steals steals (default 10^6), it boots again, the same core counts in turn, up to
--max-boots boots in all. Under plain MTTCG guest time is host time, so a busy or small host
makes fewer steals per boot and needs more boots. Prints each boot's totals and the sums, and
writes soak.steals, soak.processes, soak.lost and soak.duplicated (sums over all boots) into
bench/results.json, keeping its other figures.

Usage: soak.py [--seconds N] [--cores 4,8] [--steals N] [--max-boots N] [--args 'bootargs']
               [--no-write]
Bootargs default to cooldown=0 (no steal cooldown), to make the most steal traffic.
"""

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import qemu  # noqa: E402  (scripts/qemu.py: the QEMU launcher)

KERNEL = ROOT / "target/aarch64-unknown-none/release/soak"
BENCH_LINE = re.compile(r"^bench: soak\.(\d+)cores\.(\w+) (\d+) count$")


def run(cores, seconds, args):
    bootargs = f"soak_s={seconds} {args}".strip()
    cmd = qemu.command(KERNEL, smp=cores, memory="1G", append=bootargs)
    print(f"==> soak: {cores} cores, {seconds} s of guest time: {' '.join(cmd)}", flush=True)
    # The last round always completes: allow for one long round past the soak's length.
    deadline = seconds * 3 + 600
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=deadline, cwd=ROOT)
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout or ""
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        print(out[-4000:])
        sys.exit(f"soak: {cores} cores: no end within {deadline} s")
    figures = {}
    for line in done.stdout.splitlines():
        if line.startswith("soak:") or line.startswith("PANIC") or line.startswith("watchdog"):
            print(f"    {line}")
        match = BENCH_LINE.match(line)
        if match:
            figures[match.group(2)] = int(match.group(3))
    if done.returncode != 0 or not figures:
        print(done.stdout[-4000:])
        sys.exit(f"soak: {cores} cores: QEMU exited with status {done.returncode}")
    return bootargs, figures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=200)
    parser.add_argument("--cores", default="4,8")
    parser.add_argument("--args", default="cooldown=0")
    parser.add_argument("--steals", type=int, default=1_000_000)
    parser.add_argument("--max-boots", type=int, default=6)
    parser.add_argument("--no-write", action="store_true")
    options = parser.parse_args()
    subprocess.run(["cargo", "build", "--release", "--bin", "soak"], check=True, cwd=ROOT)
    totals = {"steals": 0, "processes": 0, "lost": 0, "duplicated": 0}
    runs = []
    core_counts = [int(c) for c in options.cores.split(",")]
    boots = 0
    while boots < len(core_counts) or (totals["steals"] < options.steals and boots < options.max_boots):
        cores = core_counts[boots % len(core_counts)]
        boots += 1
        bootargs, figures = run(cores, options.seconds, options.args)
        runs.append(f"{cores} cores: {bootargs}")
        for key in totals:
            totals[key] += figures.get(key, 0)
        if figures.get("failed_runs", 0):
            sys.exit(f"soak: {cores} cores: {figures['failed_runs']} failed runs")
    print(f"soak: total over {boots} boots: {totals['steals']} steals, {totals['processes']} processes, "
          f"{totals['lost']} lost, {totals['duplicated']} duplicated")
    if totals["steals"] < options.steals:
        print(f"soak: fewer steals than the {options.steals} asked for after {boots} boots")
    if not options.no_write:
        path = ROOT / "bench/results.json"
        results = json.loads(path.read_text()) if path.exists() else {}
        command = (f"scripts/soak.py --seconds {options.seconds} --steals {options.steals} "
                   f"({boots} boots: {'; '.join(runs)}; plain MTTCG, -m 1G)")
        for key, value in totals.items():
            results[f"soak.{key}"] = {"command": command, "suite": "soak", "unit": "count", "value": value}
        path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
        print(f"soak: figures written to {path.relative_to(ROOT)}")
    if totals["lost"] or totals["duplicated"]:
        sys.exit("soak: processes were lost or duplicated")


if __name__ == "__main__":
    main()
