#!/usr/bin/env python3
"""Runs beamcore's benchmarks and gathers every `bench: <name> <value> <unit>` line into
bench/results.json (and bench/results.md).

Single-core micro-benchmarks run under `-icount shift=0,sleep=off`: guest time advances one
nanosecond per executed instruction, so their counter-derived figures are instruction counts
that repeat run to run. Host benchmarks run as ignored cargo tests on the host.

Usage: bench.py [--bench PREFIX]   (only suites or figures whose name starts with PREFIX)
"""

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINE = re.compile(r"^bench: (\S+) (\S+) (\S+)$")

# name -> (binary, qemu arguments, bootargs)
ICOUNT_ONE_CORE = ["-M", "virt", "-cpu", "cortex-a72", "-smp", "1", "-icount", "shift=0,sleep=off"]
QEMU_SUITES = {
    "deque": ("bench-deque", ICOUNT_ONE_CORE, "slice_us=1000000"),
    "sched": ("bench-sched", ICOUNT_ONE_CORE, "slice_us=1000000"),
    "sched.traced": ("bench-sched", ICOUNT_ONE_CORE, "slice_us=1000000 trace=on"),
}
# Multi-core balance: the `make run` kernel on each workload x strategy x core count, under
# -icount (deterministic instruction budgets per vCPU; see docs/balancer.md). Figures come from
# its `report:` JSON line.
BALANCE_CORES = [1, 2, 4, 8]
BALANCE_WORKLOADS = ["imbalanced", "fib"]
BALANCE_STRATEGIES = ["random", "load", "locality", "p2c", "adaptive"]
HOST_TARGET = subprocess.run(["rustc", "-vV"], capture_output=True, text=True).stdout.split("host: ")[1].split()[0]
HOST_SUITES = {
    "deque.host": ["cargo", "test", "--lib", "--release", "--target", HOST_TARGET, "sched::deque::tests::bench",
                   "--", "--ignored", "--nocapture", "--test-threads=1"],
}


# The other workloads, once each on 4 cores with the default strategy.
EXTRA_WORKLOADS = ["ring", "mixed", "nqueens", "uts", "bang", "big"]


def balance_runs():
    for workload in EXTRA_WORKLOADS:
        args = ["-M", "virt", "-cpu", "cortex-a72", "-smp", "4", "-icount", "shift=0,sleep=off"]
        yield 4, workload, "load", qemu_command("beamcore", args, f"workload={workload} strategy=load")
    for cores in BALANCE_CORES:
        for workload in BALANCE_WORKLOADS:
            for strategy in BALANCE_STRATEGIES if cores > 1 else ["load"]:
                args = ["-M", "virt", "-cpu", "cortex-a72", "-smp", str(cores), "-icount", "shift=0,sleep=off"]
                yield cores, workload, strategy, qemu_command("beamcore", args, f"workload={workload} strategy={strategy}")


def balance_figures(cores, workload, strategy, output):
    """The figures of one balance run, from its report line."""
    report = next((l.split("report: ", 1)[1] for l in output.splitlines() if l.startswith("report: ")), None)
    if report is None:
        return None
    data = json.loads(report)
    prefix = f"balance.{workload}.{strategy}.{cores}cores"
    per_core = data["per_core"]
    figures = {
        f"{prefix}.max_over_mean": (data["work_max_over_mean"], "ratio"),
        f"{prefix}.steals": (sum(c["steals"] for c in per_core), "count"),
        f"{prefix}.steal_attempts": (sum(c["steal_attempts"] for c in per_core), "count"),
        f"{prefix}.migrations": (sum(c["migrated_in"] for c in per_core), "count"),
        f"{prefix}.max_migrations_seen": (data["max_migrations_seen"], "count"),
    }
    for cause in ["empty", "below_threshold", "cooldown", "migration_limit", "lost_race"]:
        figures[f"{prefix}.fail_{cause}"] = (sum(c[f"fail_{cause}"] for c in per_core), "count")
    for c in per_core:
        figures[f"{prefix}.work.core{c['core']}"] = (c["work"], "units")
    # Speedup: useful work done in all over the busiest core's share — how many times faster the
    # run was than one core doing everything, if every core runs at the same speed (under -icount
    # they get the same instruction budget, so the busiest core's work bounds the run).
    works = [c["work"] for c in per_core]
    if max(works) > 0:
        figures[f"{prefix}.speedup"] = (round(sum(works) / max(works), 3), "x")
    for bucket in range(len(per_core[0]["steal_latency_buckets"])):
        figures[f"{prefix}.latency.b{bucket}"] = (sum(c["steal_latency_buckets"][bucket] for c in per_core), "steals")
    return figures


def qemu_command(binary, qemu_args, bootargs):
    elf = Path("target/aarch64-unknown-none/release") / binary
    cmd = ["qemu-system-aarch64", *qemu_args, "-m", "128M", "-nographic", "-semihosting", "-kernel", str(elf)]
    if bootargs:
        cmd += ["-append", bootargs]
    return cmd


def run(cmd, timeout):
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout.decode(errors="replace")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", default="", help="only suites/figures starting with this prefix")
    args = parser.parse_args()
    prefix = args.bench

    def wanted(suite):
        return not prefix or suite.startswith(prefix) or prefix.startswith(suite)

    suites = [s for s in QEMU_SUITES if wanted(s)] + [s for s in HOST_SUITES if wanted(s)]
    if wanted("balance"):
        suites.append("balance")
    if not suites:
        sys.exit(f"bench: no suite matches {prefix!r} (suites: {', '.join([*QEMU_SUITES, *HOST_SUITES])})")
    if any(s in QEMU_SUITES or s == "balance" for s in suites):
        print("bench: building release kernels", flush=True)
        subprocess.run(["cargo", "build", "--release", "--bins"], cwd=ROOT, check=True)

    results_path = ROOT / "bench/results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    failures = 0
    for step, suite in enumerate(suites, 1):
        print(f"[{step}/{len(suites)}] {suite}", flush=True)
        if suite == "balance":
            runs = list(balance_runs())
            for run_number, (cores, workload, strategy, cmd) in enumerate(runs, 1):
                status, output = run(cmd, timeout=600)
                figures = balance_figures(cores, workload, strategy, output) if status == 0 else None
                if figures is None:
                    failures += 1
                    print(f"  [{run_number}/{len(runs)}] {workload} {strategy} {cores} cores failed (status {status})")
                    continue
                for name, (value, unit) in figures.items():
                    results[name] = {"value": value, "unit": unit, "command": " ".join(cmd), "suite": suite}
                ratio = figures[f"balance.{workload}.{strategy}.{cores}cores.max_over_mean"][0]
                print(f"  [{run_number}/{len(runs)}] bench: balance.{workload}.{strategy}.{cores}cores.max_over_mean {ratio} ratio", flush=True)
            continue
        if suite in QEMU_SUITES:
            binary, qemu_args, bootargs = QEMU_SUITES[suite]
            cmd = qemu_command(binary, qemu_args, bootargs)
        else:
            cmd = HOST_SUITES[suite]
        started = time.monotonic()
        status, output = run(cmd, timeout=600)
        shown = " ".join(cmd)
        if status != 0:
            failures += 1
            print(f"bench: {suite} failed with status {status}:\n{output}")
            continue
        for line in output.splitlines():
            m = LINE.match(line.strip())
            if not m or (prefix and not m.group(1).startswith(prefix) and not suite.startswith(prefix)):
                continue
            name, value, unit = m.groups()
            print(f"  {line.strip()}")
            try:
                number = float(value)
            except ValueError:
                continue
            results[name] = {"value": number, "unit": unit, "command": shown, "suite": suite}
        print(f"  ({time.monotonic() - started:.1f}s)", flush=True)

    results_path.parent.mkdir(exist_ok=True)
    results_path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    table = ["| figure | value | unit | command |", "|---|---|---|---|"]
    for name in sorted(results):
        r = results[name]
        value = f"{r['value']:g}"
        table.append(f"| `{name}` | {value} | {r['unit']} | `{r['command']}` |")
    (ROOT / "bench/results.md").write_text("\n".join(table) + "\n")
    print(f"bench: wrote {results_path.relative_to(ROOT)} and bench/results.md")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
