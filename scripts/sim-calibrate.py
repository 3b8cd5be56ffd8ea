#!/usr/bin/env python3
"""Calibration of the host simulator against the kernel in QEMU (`make sim-calibrate`).

Runs the `make run` kernel under `-icount shift=0,sleep=off` (as `make bench BENCH=balance`)
and the simulator on the same workload, policy and core count, and compares how the work was
shared between the cores: the report's per-core `work`, its busiest / mean (`max_over_mean`).
Each case runs with the bootarg `seed` at 1 to 10 on both sides, and compares the means. Two
simulations per case:

- `sim`: a real machine's equal cores (what `make sim` reports);
- `sim_icount`: QEMU's machine under `-icount`: the vCPUs take turns on one virtual clock, each
  with its own share of the turns among those awake (the simulator's `--shares`), and QEMU does
  not give them equal turns (docs/benchmarks.md, "A limit of speedup measured
  under -icount"). Each QEMU run ends with a share probe (`probe_ms=50`: one bound, always-busy
  process per core, nothing to balance), and its units per core are that case's shares: the
  machine is measured in the same boot; the policy's spreading of the work is what is compared.

Prints the comparison, records `sim.calibration.<workload>.<policy>.<N>cores.*` in
bench/results.json, and exits 1 when a gap (|sim_icount - qemu| of max_over_mean) exceeds
--max-gap (default 0.1, the project's bound; see docs/simulator.md for the measured gaps).

Usage: sim-calibrate.py [--cores 4,8] [--workloads fib,uts,imbalanced,nqueens]
                        [--policies default,peers] [--max-gap 0.1] [--jobs 2] [--no-record]
"""

import argparse
import concurrent.futures
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import bench  # noqa: E402  (the same QEMU command lines and report parsing as make bench)

HOST = bench.HOST_TARGET
SIM = ROOT / f"target/sim/{HOST}/release/beamcore-sim"
# Seeds both sides run with (the bootarg `seed` in QEMU, `--seed` in the simulator); each side's
# max/mean is averaged over them.
SEEDS = list(range(1, 11))


def summed(runs):
    """Per-core work summed over runs."""
    return [sum(col) for col in zip(*runs)]


def max_over_mean(works):
    mean = sum(works) / len(works)
    return max(works) / mean if mean else 0.0


def qemu_run(workload, policy, cores, seed):
    """The run's per-core work, its share probe's per-core units, and its command line."""
    args = bench.balance_args(workload, policy, seed)
    cmd = bench.qemu_command("beamcore", bench.icount_args(cores), args)
    status, output = bench.run(cmd, timeout=900)
    data = bench.report_of(output) if status == 0 else None
    if data is None or "probe_units" not in data:
        raise RuntimeError(f"QEMU {workload} {policy} {cores} cores failed (status {status}):\n{output[-2000:]}")
    if len(data["probe_units"]) != cores or min(data["probe_units"]) == 0:
        raise RuntimeError(f"QEMU {workload} {policy} {cores} cores: share probe {data['probe_units']}: "
                           "a core without units has no share to simulate")
    return [c["work"] for c in data["per_core"]], data["probe_units"], " ".join(cmd)


def sim_run(workload, policy, cores, probe=None, seed=1):
    cmd = [str(SIM), "run", "--workload", workload, "--policy", policy, "--cores", str(cores),
           "--seed", str(seed), "--per-core"]
    if probe:
        total = sum(probe)
        cmd += ["--shares", ",".join(f"{u / total:.5f}" for u in probe)]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    data = json.loads(next(l for l in out.splitlines() if l.startswith("report: "))[len("report: "):])
    return [c["work"] for c in data["per_core"]]


def shares(works):
    total = sum(works) or 1
    return "[" + ", ".join(f"{w / total:.2f}" for w in works) + "]"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", default="4,8")
    parser.add_argument("--workloads", default="fib,uts,imbalanced,nqueens")
    parser.add_argument("--policies", default="default,peers")
    parser.add_argument("--max-gap", type=float, default=0.1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    cases = [(w, p, int(n)) for n in args.cores.split(",") for w in args.workloads.split(",")
             for p in args.policies.split(",")]
    if not SIM.exists():
        sys.exit(f"sim-calibrate: {SIM} missing (make sim builds it)")
    runs = [(*case, seed) for case in cases for seed in SEEDS]
    print(f"sim-calibrate: {len(runs)} QEMU runs under -icount, {args.jobs} at a time", flush=True)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        qemu = dict(zip(runs, pool.map(lambda r: qemu_run(*r), runs)))
    rows, failures, figures, probes = [], 0, {}, {}
    for case in cases:
        workload, policy, cores = case
        # One QEMU run is one draw of QEMU's vCPU shares and of the thieves' random choices:
        # both sides run with the bootarg `seed` at each of SEEDS, and their max/mean are averaged.
        q_runs = [qemu[(*case, seed)][0] for seed in SEEDS]
        command = "; ".join(qemu[(*case, seed)][2] for seed in SEEDS)
        s_runs = [sim_run(workload, policy, cores, seed=seed) for seed in SEEDS]
        # The same machine as each QEMU run: every core as fast as that run's probe share.
        i_runs = [sim_run(workload, policy, cores, qemu[(*case, seed)][1], seed) for seed in SEEDS]
        probes[case] = summed([qemu[(*case, seed)][1] for seed in SEEDS])
        q_works = summed(q_runs)
        s_works, i_works = summed(s_runs), summed(i_runs)
        q = sum(map(max_over_mean, q_runs)) / len(q_runs)
        s = sum(map(max_over_mean, s_runs)) / len(s_runs)
        i = sum(map(max_over_mean, i_runs)) / len(i_runs)
        gap = abs(i - q)
        ok = gap <= args.max_gap
        failures += not ok
        rows.append((workload, policy, cores, q, s, i, gap, ok, q_works, s_works, i_works))
        prefix = f"sim.calibration.{workload}.{policy}.{cores}cores"
        for name, value in (("qemu_max_over_mean", q), ("sim_max_over_mean", s),
                            ("sim_icount_max_over_mean", i), ("gap", gap)):
            figures[f"{prefix}.{name}"] = (round(value, 3), "ratio", command)
    print("| workload | policy | cores | QEMU max/mean | sim (equal cores) | sim (-icount shares) | gap | within "
          f"{args.max_gap} |")
    print("|---|---|---|---|---|---|---|---|")
    for w, p, n, q, s, i, gap, ok, *_ in rows:
        print(f"| {w} | {p} | {n} | {q:.2f} | {s:.2f} | {i:.2f} | {gap:.2f} | {'yes' if ok else 'NO'} |")
    print()
    for w, p, n, q, s, i, gap, ok, qw, sw, iw in rows:
        print(f"{w} {p} {n} cores: work shares QEMU {shares(qw)}, sim {shares(sw)}, sim -icount {shares(iw)}, "
              f"probe {shares(probes[(w, p, n)])}")
    if not args.no_record:
        path = ROOT / "bench/results.json"
        results = json.loads(path.read_text()) if path.exists() else {}
        for name, (value, unit, command) in figures.items():
            results[name] = {"value": value, "unit": unit, "command": f"make sim-calibrate ({command})",
                             "suite": "sim.calibration"}
        bench.write_results(path, results)
    print(f"sim-calibrate: {len(rows) - failures} of {len(rows)} within {args.max_gap} of QEMU's max/mean")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
