#!/usr/bin/env python3
"""Runs beamcore's benchmarks and gathers every `bench: <name> <value> <unit>` line into
bench/results.json (and bench/results.md).

Single-core micro-benchmarks run under `-icount shift=0,sleep=off`: guest time advances one
nanosecond per executed instruction, so their counter-derived figures are instruction counts
that repeat run to run. The host benchmark (host-bench/, criterion) runs on the host; its
figures come from criterion's estimates (`criterion_figures`).

Usage: bench.py [--bench PREFIX]   (only suites or figures whose name starts with PREFIX)
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import qemu  # noqa: E402  (scripts/qemu.py: the QEMU launcher)

LINE = re.compile(r"^bench: (\S+) (\S+) (\S+)$")

# name -> (binary, machine (scripts/qemu.py's `command` options), bootargs)
ICOUNT_ONE_CORE = {"smp": 1, "icount": True}
QEMU_SUITES = {
    "deque": ("bench-deque", ICOUNT_ONE_CORE, "slice_us=1000000"),
    "sched": ("bench-sched", ICOUNT_ONE_CORE, "slice_us=1000000"),
    "sched.traced": ("bench-sched", ICOUNT_ONE_CORE, "slice_us=1000000 trace=on"),
    # The same kernel without the per-turn accounting a user may turn off (bootarg telemetry=):
    # figures sched.*.counters and sched.*.off, beside sched.* (telemetry=full, the default).
    "sched.counters": ("bench-sched", ICOUNT_ONE_CORE, "slice_us=1000000 telemetry=counters"),
    "sched.off": ("bench-sched", ICOUNT_ONE_CORE, "slice_us=1000000 telemetry=off"),
    "sched.no_frame_pointers": ("bench-sched", ICOUNT_ONE_CORE, "slice_us=1000000"),
    "signals": ("bench-signals", ICOUNT_ONE_CORE, "slice_us=1000000"),
    "receive": ("bench-receive", ICOUNT_ONE_CORE, "slice_us=1000000"),
    "timers": ("bench-timers", ICOUNT_ONE_CORE, "slice_us=1000000"),
}
# Suites run on a build of their own: suite -> (cargo target directory, RUSTFLAGS, suffix added
# to every figure's name). The kernel keeps frame pointers (.cargo/config.toml) so it can print
# backtraces; this build leaves them out, so the two sched suites side by side give their cost.
# RUSTFLAGS replaces the config's rustflags, so the variant's are the config's with the one
# change (`variant_rustflags`): anything else (panic=unwind, the symbol names) stays as built.
VARIANT_BUILDS = {
    "sched.no_frame_pointers": (Path("target/no-frame-pointers"), ("force-frame-pointers=yes", "force-frame-pointers=no"),
                                ".no_frame_pointers"),
}


def variant_rustflags(change, config=Path(__file__).resolve().parent.parent / ".cargo" / "config.toml"):
    """The config's rustflags for the bare-metal target with `change` = (old, new) made in them."""
    import tomllib
    with open(config, "rb") as f:
        flags = tomllib.load(f)["target"]["aarch64-unknown-none"]["rustflags"]
    old, new = change
    if old not in flags:
        raise SystemExit(f"bench: {config} has no rustflag {old!r} to change into {new!r}")
    return " ".join(new if flag == old else flag for flag in flags)
# Multi-core balance: the `make run` kernel on each workload x policy x core count, under
# -icount (deterministic instruction budgets per vCPU; see docs/balancer.md). Figures come from
# its `report:` JSON line. Two policies side by side, on the same workloads in the same run:
# beamcore's defaults, and the policy Go's and Tokio's schedulers use (a random victim, steal
# half, no cooldown, no thresholds; `retries` as ours).
# Beyond 8 cores QEMU virt needs GICv3 (`-M virt,gic-version=3`). A 64-core run (MAX_CORES)
# takes 5 to 15 s of host time under -icount.
BALANCE_CORES = [1, 2, 4, 8, 16, 32, 64]
BALANCE_WORKLOADS = ["nqueens", "uts", "fib", "imbalanced", "mixed"]
POLICIES = {
    "default": "",
    "peers": "strategy=random steal=half cooldown=0 min_steal=1 imbalance=0",
}
# The policy comparison at 4 and 8 cores again with the bootarg `seed` at 1, 2 and 3: under
# -icount one run is one draw (QEMU's vCPU shares move with every change of timing), so the
# comparison is also reported as the mean over these seeds (`.speedup_seed_mean`, and the
# spread `.speedup_seed_min` / `_max`).
SEED_CORES = [4, 8]
# Each multi-core run of the comparison ends with a share probe of this many guest ms
# (apps/workloads/probe.rs): one bound busy process per core, nothing to balance. Its units per
# core are the shares of the machine QEMU gave this boot's vCPUs, which are unequal and change
# with the kernel image and the command line (docs/benchmarks.md); `make sim-calibrate` runs the
# simulator on that machine. No speedup is derived from them: a probe measured after the workload
# says neither how fast each core ran during it nor what the run would take on equal cores
# (`make sim` reports that, against each workload's own bound).
PROBE_MS = 50
SEEDS = [1, 2, 3]
# The victim-selection strategies, each with beamcore's other defaults, on two workloads.
STRATEGY_CORES = [1, 2, 4, 8]
STRATEGY_WORKLOADS = ["imbalanced", "fib"]
BALANCE_STRATEGIES = ["random", "load", "locality", "p2c", "adaptive"]
# The granularity experiment (workload=grain): 120 ms of work cut into tasks of each size, all
# spawned on core 0, at 1 core (the cost of tasks alone) and at 4 and 8.
GRAIN_SIZES_US = [1, 3, 10, 30, 100, 300, 1000]
GRAIN_CORES = [1, 4, 8]
GRAIN_TOTAL_MS = 120
HOST_TARGET = subprocess.run(["rustc", "-vV"], capture_output=True, text=True).stdout.split("host: ")[1].split()[0]
# The deque against crossbeam-deque on the host (host-bench/benches/deque.rs): one criterion group
# per pattern, both implementations in each. criterion writes its estimates under CRITERION_DIR.
HOST_SUITES = {
    "deque.host": ["cargo", "bench", "-p", "beamcore-host-bench", "--bench", "deque", "--target", HOST_TARGET,
                   "--", "--noplot"],
}
CRITERION_DIR = ROOT / "target/criterion"
RESULTS = ROOT / "bench/results.json"
DEQUE_HOST_PATTERNS = ["push_pop", "push_steal", "owner_1_thief", "owner_3_thieves"]

# Processes alive at once (workload=hold processes=0: as many as memory allows, each blocked
# in receive, then each messaged, answered and ended), on 4 cores at each RAM size, without
# -icount: the count depends on memory, not on timing. Figures: scale.processes_alive_<ram>,
# scale.bytes_per_process_<ram>, scale.spawn_ms_<ram>, scale.end_ms_<ram>; and, from the sched
# kernel, sched.bytes_per_process (1,000 idle processes on one core, under -icount).
SCALE_MEMORY = {"1g": "1G", "128m": "128M"}
SCALE_ARGS = {"smp": 4}

# Per-core deques against the shared-queue baseline (`queues=shared`: one lock-protected FIFO
# per priority level for the whole machine), every workload in both modes in the same run,
# under -icount. Part of BENCH=balance; BENCH=queues runs it alone.
QUEUES_CORES = [2, 4, 8]
QUEUES_WORKLOADS = ["nqueens", "uts", "fib", "imbalanced", "mixed", "bang"]
QUEUE_MODES = {"percore": "", "shared": "queues=shared"}
QUEUES_SHOWN = ("guest_ms", "busiest_share", "steals", "lock_acquisitions", "lock_contended")

# The other workloads, once each on 4 cores with the default strategy.
EXTRA_WORKLOADS = ["ring", "bang", "big"]


def icount_args(cores):
    """The machine of a multi-core run under -icount (GICv3 beyond GICv2's 8 cores)."""
    return {"machine_opts": "" if cores <= 8 else "gic-version=3", "smp": cores, "icount": True}


def balance_args(workload, policy, seed=None, probe=True):
    """The bootargs of a balance run: the workload, the policy's words, the bootarg `seed` when
    given, and the share probe (make sim-calibrate runs the same command lines)."""
    words = [f"workload={workload}", POLICIES[policy]]
    if seed is not None:
        words.append(f"seed={seed}")
    if probe:
        words.append(f"probe_ms={PROBE_MS}")
    return " ".join(word for word in words if word)


def balance_runs():
    """(cores, workload, label, command): label is the policy or strategy the figures are named by."""
    for cores in BALANCE_CORES:
        for workload in BALANCE_WORKLOADS:
            for policy in POLICIES:
                args = balance_args(workload, policy, probe=cores > 1)
                yield cores, workload, policy, qemu_command("beamcore", icount_args(cores), args)
    for cores in SEED_CORES:
        for workload in BALANCE_WORKLOADS:
            for policy in POLICIES:
                for seed in SEEDS:
                    args = balance_args(workload, policy, seed)
                    yield cores, workload, f"{policy}.seed{seed}", qemu_command("beamcore", icount_args(cores), args)
    for workload in EXTRA_WORKLOADS:
        yield 4, workload, "load", qemu_command("beamcore", icount_args(4), f"workload={workload} strategy=load")
    for cores in STRATEGY_CORES:
        for workload in STRATEGY_WORKLOADS:
            for strategy in BALANCE_STRATEGIES if cores > 1 else ["load"]:
                yield cores, workload, strategy, qemu_command("beamcore", icount_args(cores),
                                                              f"workload={workload} strategy={strategy}")


def queues_runs():
    """(cores, workload, mode, command) for the per-core against shared-queue comparison."""
    for cores in QUEUES_CORES:
        for workload in QUEUES_WORKLOADS:
            for mode, bootargs in QUEUE_MODES.items():
                args = f"workload={workload} {bootargs}".strip()
                yield cores, workload, mode, qemu_command("beamcore", icount_args(cores), args)


def queues_figures(cores, workload, mode, output):
    """One run's figures for the queue comparison: balance_figures under the mode's label, plus
    the busiest core's share of the work and the shared queue's lock acquisitions (all cores, and
    those that found it held)."""
    figures = balance_figures(cores, workload, mode, output)
    if figures is None:
        return None
    per_core = report_of(output)["per_core"]
    prefix = f"balance.{workload}.{mode}.{cores}cores"
    works = [c["work"] for c in per_core]
    if sum(works) > 0:
        figures[f"{prefix}.busiest_share"] = (round(max(works) / sum(works), 3), "ratio")
    figures[f"{prefix}.lock_acquisitions"] = (sum(c.get("queue_lock_acquisitions", 0) for c in per_core), "count")
    figures[f"{prefix}.lock_contended"] = (sum(c.get("queue_lock_contended", 0) for c in per_core), "count")
    return figures


def queues_ratio(results, workload, cores):
    """balance.<workload>.<N>cores.shared_over_percore: the shared-queue run's guest time over the
    per-core run's (under -icount, the instructions all cores executed: above 1 the shared queue
    cost more), or None when either run is missing."""
    shared = results.get(f"balance.{workload}.shared.{cores}cores.guest_ms")
    percore = results.get(f"balance.{workload}.percore.{cores}cores.guest_ms")
    if not shared or not percore or percore["value"] <= 0:
        return None
    return round(shared["value"] / percore["value"], 3)


def queues_table(results):
    """Markdown: per workload and core count, the guest-time ratio shared / per-core, the busiest
    core's share in each mode, and steals (per-core) against lock acquisitions (shared)."""
    lines = ["| workload | cores | shared / per-core guest time | busiest share per-core / shared | "
             "steals (per-core) | lock acquisitions, contended (shared) |", "|---|---|---|---|---|---|"]

    def value(name, fmt="{:.2f}"):
        entry = results.get(name)
        return "–" if entry is None else fmt.format(entry["value"])
    for workload in QUEUES_WORKLOADS:
        for n in QUEUES_CORES:
            base = f"balance.{workload}"
            lines.append(
                f"| {workload} | {n} | {value(f'{base}.{n}cores.shared_over_percore')} | "
                f"{value(f'{base}.percore.{n}cores.busiest_share')} / {value(f'{base}.shared.{n}cores.busiest_share')} | "
                f"{value(f'{base}.percore.{n}cores.steals', '{:.0f}')} | "
                f"{value(f'{base}.shared.{n}cores.lock_acquisitions', '{:.0f}')}, "
                f"{value(f'{base}.shared.{n}cores.lock_contended', '{:.0f}')} |")
    return lines


def grain_runs():
    """(cores, task size in us, policy, command) for the granularity sweep."""
    for size in GRAIN_SIZES_US:
        for cores in GRAIN_CORES:
            for policy, bootargs in POLICIES.items():
                if cores == 1 and policy != "default":
                    continue  # one core never steals: the policy changes nothing
                args = f"workload=grain grain_ns={size * 1000} grain_ms={GRAIN_TOTAL_MS} {bootargs}".strip()
                yield cores, size, policy, qemu_command("beamcore", icount_args(cores), args)


def criterion_figures(criterion_dir, patterns, since=None):
    """The deque.host figures from criterion's estimates of each pattern (a group holding a
    `beamcore` and a `crossbeam` benchmark): each one's median time per item (`deque.host.<impl>.
    <pattern>`, ns), crossbeam's time over ours per pattern (`deque.host.ours_over_crossbeam.
    <pattern>`: our throughput over theirs, since every iteration moves the same items) and the
    geometric mean of those (`deque.host.ours_over_crossbeam`). The median, not the mean: on a
    shared machine a few samples the host delayed would otherwise move the figure. Raises
    ValueError if an estimate is missing, or older than `since` (a timestamp: from an earlier run)."""
    figures, ratios = {}, []
    for pattern in patterns:
        per_item = {}
        for impl in ("beamcore", "crossbeam"):
            new = Path(criterion_dir) / pattern / impl / "new"
            try:
                estimates = json.loads((new / "estimates.json").read_text())
                benchmark = json.loads((new / "benchmark.json").read_text())
            except (OSError, ValueError) as error:
                raise ValueError(f"no criterion estimate for {pattern}/{impl} in {criterion_dir}: {error}")
            if since is not None and (new / "estimates.json").stat().st_mtime < since:
                raise ValueError(f"criterion's estimate for {pattern}/{impl} is from an earlier run")
            items = (benchmark.get("throughput") or {}).get("Elements")
            if not items:
                raise ValueError(f"{pattern}/{impl}: criterion recorded no element throughput")
            per_item[impl] = estimates["median"]["point_estimate"] / items
            figures[f"deque.host.{impl}.{pattern}"] = (round(per_item[impl], 3), "ns")
        ratio = per_item["crossbeam"] / per_item["beamcore"]
        figures[f"deque.host.ours_over_crossbeam.{pattern}"] = (round(ratio, 3), "ratio")
        ratios.append(ratio)
    figures["deque.host.ours_over_crossbeam"] = (round(math.prod(ratios) ** (1 / len(ratios)), 3), "ratio")
    return figures


def report_of(output):
    """The run's `report:` JSON, with the keys of its `probe:` line (the share probe, run after the
    report so that the report's counters are the workload's alone) added when there is one."""
    lines = output.splitlines()
    report = next((l.split("report: ", 1)[1] for l in lines if l.startswith("report: ")), None)
    if report is None:
        return None
    data = json.loads(report)
    probe = next((l.split("probe: ", 1)[1] for l in lines if l.startswith("probe: ")), None)
    if probe is not None:
        data.update(json.loads(probe))
    return data


def balance_figures(cores, workload, strategy, output):
    """The figures of one balance run, from its report line."""
    data = report_of(output)
    if data is None:
        return None
    prefix = f"balance.{workload}.{strategy}.{cores}cores"
    per_core = data["per_core"]
    figures = {
        f"{prefix}.max_over_mean": (data["work_max_over_mean"], "ratio"),
        f"{prefix}.steals": (sum(c["steals"] for c in per_core), "count"),
        f"{prefix}.steal_attempts": (sum(c["steal_attempts"] for c in per_core), "count"),
        f"{prefix}.migrations": (sum(c["migrated_in"] for c in per_core), "count"),
        f"{prefix}.max_migrations_seen": (data["max_migrations_seen"], "count"),
    }
    if "elapsed_us" in data:
        # Under -icount shift=0 the guest clock advances 1 ns per instruction of any core: the
        # instructions all cores executed during the workload, summed (idle cores in WFI add none).
        figures[f"{prefix}.guest_ms"] = (round(data["elapsed_us"] / 1000, 3), "ms")
        # Parallelism lost, measured rather than inferred: the largest share of the run any core
        # spent asleep or searching while another core held stealable work.
        idle = [c.get("idle_with_work_us", 0) for c in per_core]
        if data["elapsed_us"] > 0:
            figures[f"{prefix}.idle_with_work_max_share"] = (round(max(idle) / data["elapsed_us"], 4), "ratio")
        figures[f"{prefix}.idle_with_work_us.max"] = (max(idle), "us")
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


def add_seed_means(results):
    """balance.<workload>.<policy>.<N>cores.speedup_seed_{mean,min,max}: the seeded runs'
    speedups (SEEDS) folded into one figure per policy, for a comparison less at the mercy of
    one draw of QEMU's vCPU shares."""
    for cores in SEED_CORES:
        for workload in BALANCE_WORKLOADS:
            for policy in POLICIES:
                values = [results.get(f"balance.{workload}.{policy}.seed{seed}.{cores}cores.speedup") for seed in SEEDS]
                if any(v is None for v in values):
                    continue
                speedups = [v["value"] for v in values]
                command = "; ".join(v["command"] for v in values)
                for stat, value in (("mean", sum(speedups) / len(speedups)), ("min", min(speedups)),
                                    ("max", max(speedups))):
                    results[f"balance.{workload}.{policy}.{cores}cores.speedup_seed_{stat}"] = {
                        "value": round(value, 3), "unit": "x", "command": command, "suite": "balance"}


def seed_table(results):
    """Markdown: default against peers at SEED_CORES, the mean over SEEDS (min-max)."""
    head = "| workload | " + " | ".join(f"{n} cores default | {n} cores peers" for n in SEED_CORES) + " |"
    lines = [head, "|---|" + "---|---|" * len(SEED_CORES)]
    for workload in BALANCE_WORKLOADS:
        cells = []
        for n in SEED_CORES:
            for policy in POLICIES:
                stats = [results.get(f"balance.{workload}.{policy}.{n}cores.speedup_seed_{s}") for s in ("mean", "min", "max")]
                cells.append("–" if None in stats else
                             f"{stats[0]['value']:.2f} ({stats[1]['value']:.2f}-{stats[2]['value']:.2f})")
        lines.append(f"| {workload} | " + " | ".join(cells) + " |")
    return lines


def add_instruction_bound(results, workload, label, cores, command):
    """balance.<workload>.<label>.<N>cores.instruction_bound: N x the one-core run's guest time
    over this run's. Under -icount guest time is the instructions all cores executed, so a run of
    N cores lasts at least its guest time / N: the speedup can be no more than this, however even
    the work (counts) — stealing, idle polling and spawning elsewhere all cost instructions."""
    one = results.get(f"balance.{workload}.{label}.1cores.guest_ms")
    this = results.get(f"balance.{workload}.{label}.{cores}cores.guest_ms")
    if cores > 1 and one and this and this["value"] > 0:
        value = round(cores * one["value"] / this["value"], 3)
        results[f"balance.{workload}.{label}.{cores}cores.instruction_bound"] = {
            "value": value, "unit": "x", "command": command, "suite": "balance"}


def grain_figures(cores, size_us, policy, output):
    """The figures of one grain run. Its tasks' work is credited in ns (1 instruction each under
    -icount shift=0). Speedup over doing the work on one core without tasks is bounded twice: by
    balance (all the work over the busiest core's) and by the instructions spent (the work over
    the guest time of the run divided among the cores: spawning, stealing and idle polling
    count there); the figure is the lower bound of the two, an upper bound on a real machine's."""
    data = report_of(output)
    if data is None or "grain_elapsed_ns" not in data or not data.get("ok"):
        return None
    works = [c["work"] for c in data["per_core"]]
    useful = sum(works)
    elapsed = data["grain_elapsed_ns"]
    prefix = f"grain.{size_us}us.{cores}cores" + ("" if policy == "default" else f".{policy}")
    balance_bound = useful / max(works)
    time_bound = useful / (elapsed / cores)
    speedup = min(balance_bound, time_bound)
    return {
        f"{prefix}.speedup": (round(speedup, 3), "x"),
        f"{prefix}.efficiency": (round(speedup / cores, 3), "ratio"),
        f"{prefix}.balance_speedup": (round(balance_bound, 3), "x"),
        f"{prefix}.overhead": (round(elapsed / useful, 3), "ratio"),
        f"{prefix}.core0_share": (round(works[0] / useful, 3), "ratio"),
        f"{prefix}.tasks": (data["grain_tasks"], "count"),
    }


def grain_table(results):
    """Markdown: speedup and efficiency by task size, one column pair per core count and policy."""
    columns = [(n, p) for n in GRAIN_CORES for p in POLICIES if n > 1 or p == "default"]

    def cell(size, n, p, metric):
        suffix = "" if p == "default" else f".{p}"
        entry = results.get(f"grain.{size}us.{n}cores{suffix}.{metric}")
        return "–" if entry is None else f"{entry['value']:.2f}"

    head = "| task size | " + " | ".join(f"{n} cores {p}: speedup (efficiency)" for n, p in columns) + \
        " | overhead at 1 core |"
    lines = [head, "|---|" + "---|" * (len(columns) + 1)]
    for size in GRAIN_SIZES_US:
        row = [f"{cell(size, n, p, 'speedup')} ({cell(size, n, p, 'efficiency')})" for n, p in columns]
        lines.append(f"| {size} µs | " + " | ".join(row) + f" | {cell(size, 1, 'default', 'overhead')} |")
    return lines


def policy_table(results, metric="speedup", digits=2):
    """Markdown: speedup (or another figure) per workload, default against peers, at each core count."""
    head = "| workload | " + " | ".join(f"{n} cores default / peers" for n in BALANCE_CORES) + " |"
    lines = [head, "|---|" + "---|" * len(BALANCE_CORES)]
    for workload in BALANCE_WORKLOADS:
        cells = []
        for n in BALANCE_CORES:
            pair = [results.get(f"balance.{workload}.{p}.{n}cores.{metric}") for p in POLICIES]
            cells.append(" / ".join("–" if e is None else f"{e['value']:.{digits}f}" for e in pair))
        lines.append(f"| {workload} | " + " | ".join(cells) + " |")
    return lines


def qemu_command(binary, machine, bootargs, target_dir=Path("target"), memory="128M"):
    """QEMU booting a release binary on `machine` (options of scripts/qemu.py's `command`)."""
    return qemu.command(target_dir / "aarch64-unknown-none/release" / binary, **machine, memory=memory,
                        append=bootargs)


def run(cmd, timeout, env=None):
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                          stdin=subprocess.DEVNULL, env=env)
    return proc.returncode, proc.stdout.decode(errors="replace")


def write_results(results_path, results):
    """bench/results.json and bench/results.md (summary tables, then every figure)."""
    results_path.parent.mkdir(exist_ok=True)
    results_path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    table = []
    if any(name.startswith("balance.") and ".default." in name for name in results):
        table += ["## Speedup per workload: beamcore's defaults against the peers' policy", "",
                  f"`peers`: `{POLICIES['peers']}` (Go, Tokio). Speedup = all work / the busiest core's "
                  "work, under -icount.", "", *policy_table(results), "",
                  "Instruction bound (N x the one-core guest time over this run's: the speedup can be no "
                  "more, since guest time under -icount is the instructions all cores executed):", "",
                  *policy_table(results, "instruction_bound"), "",
                  "Idle while work waited (the largest share of the run, `elapsed_us`, that any one core "
                  "spent asleep or searching while another core held stealable work, `idle_with_work_us`):",
                  "", *policy_table(results, "idle_with_work_max_share", digits=4), "",
                  f"The same comparison with the bootarg `seed` at {', '.join(map(str, SEEDS))}: the mean "
                  "speedup over the seeds (lowest-highest):", "", *seed_table(results), ""]
    if any(name.endswith("shared_over_percore") for name in results):
        table += ["## Per-core deques against one shared queue", "",
                  "`queues=shared` against the default, same workloads, same run, under -icount "
                  "(`make bench BENCH=queues`).", "", *queues_table(results), ""]
    if any(name.startswith("grain.") for name in results):
        table += ["## Granularity: speedup (efficiency) by task size", "",
                  f"`workload=grain`, {GRAIN_TOTAL_MS} ms of work in tasks spawned on core 0, under -icount; "
                  "speedup over the work done on one core without tasks, at most the balance bound and the "
                  "instruction bound (scripts/bench.py `grain_figures`); overhead = guest instructions per "
                  "instruction of work.", "", *grain_table(results), ""]
    if table:
        table += ["## Every figure", ""]
    table += ["| figure | value | unit | command |", "|---|---|---|---|"]
    for name in sorted(results):
        r = results[name]
        value = f"{r['value']:g}"
        table.append(f"| `{name}` | {value} | {r['unit']} | `{r['command']}` |")
    results_path.with_suffix(".md").write_text("\n".join(table) + "\n")


def record(results, figures, cmd, suite, show=False):
    """Each of `figures` ({name: (value, unit)}) into `results`, with the command that measured it."""
    for name, (value, unit) in figures.items():
        results[name] = {"value": value, "unit": unit, "command": " ".join(cmd), "suite": suite}
        if show:
            print(f"  bench: {name} {value} {unit}", flush=True)


def cargo(args, env=None):
    subprocess.run(["cargo", *args], cwd=ROOT, check=True, env=env)


def run_grain(suite, results, prefix):
    runs, failures = list(grain_runs()), 0
    for name in [n for n in results if n.startswith("grain.")]:
        del results[name]
    for run_number, (cores, size, policy, cmd) in enumerate(runs, 1):
        status, output = run(cmd, timeout=600)
        figures = grain_figures(cores, size, policy, output) if status == 0 else None
        if figures is None:
            failures += 1
            print(f"  [{run_number}/{len(runs)}] grain {size} us {policy} {cores} cores failed (status {status})")
            continue
        record(results, figures, cmd, suite)
        shown = {k.rsplit(".", 1)[1]: v for k, (v, _) in figures.items()}
        print(f"  [{run_number}/{len(runs)}] grain {size} us {policy} {cores} cores: speedup "
              f"{shown['speedup']} (balance {shown['balance_speedup']}, overhead {shown['overhead']})", flush=True)
    return failures


def run_scale(suite, results, prefix):
    # The memory one idle process costs, measured by the sched kernel (1,000 of them on one
    # core): with the counts below, what the scale figures are about.
    failures, cmd = 0, qemu_command(*QEMU_SUITES["sched"])
    status, output = run(cmd, timeout=600)
    line = next((m for m in map(LINE.match, output.splitlines()) if m and m.group(1) == "sched.bytes_per_process"),
                None)
    if status != 0 or line is None:
        failures += 1
        print(f"  sched.bytes_per_process failed (status {status})")
    else:
        record(results, {"sched.bytes_per_process": (float(line.group(2)), line.group(3))}, cmd, "sched", show=True)
    for label, memory in SCALE_MEMORY.items():
        cmd = qemu_command("beamcore", SCALE_ARGS, "workload=hold processes=0", memory=memory)
        status, output = run(cmd, timeout=900)
        data = report_of(output) if status == 0 else None
        if data is None or "hold_peak" not in data:
            failures += 1
            print(f"  scale at {memory} failed (status {status}):\n{output[-3000:]}")
            continue
        record(results, {
            f"scale.processes_alive_{label}": (data["hold_peak"], "count"),
            f"scale.bytes_per_process_{label}": (data["hold_bytes_per_process"], "bytes"),
            f"scale.spawn_ms_{label}": (round(data["hold_spawn_us"] / 1000), "ms"),
            f"scale.end_ms_{label}": (round(data["hold_end_us"] / 1000), "ms"),
        }, cmd, suite, show=True)
    return failures


def run_host(suite, results, prefix):
    started = time.time()
    cmd = HOST_SUITES[suite]
    status, output = run(cmd, timeout=900, env=dict(os.environ, CRITERION_HOME=str(CRITERION_DIR)))
    try:
        if status != 0:
            raise ValueError(f"status {status}:\n{output[-3000:]}")
        figures = criterion_figures(CRITERION_DIR, DEQUE_HOST_PATTERNS, since=started)
    except ValueError as error:
        print(f"bench: {suite} failed: {error}")
        return 1
    # Figures of the benchmark this suite replaced (other names) would read as current.
    for name in [n for n in results if n.startswith("deque.host.")]:
        del results[name]
    record(results, figures, cmd, suite, show=True)
    return 0


def run_queues(suite, results, prefix):
    runs, failures = list(queues_runs()), 0
    for name in [n for n, r in results.items() if r.get("suite") == "queues"]:
        del results[name]
    for run_number, (cores, workload, mode, cmd) in enumerate(runs, 1):
        status, output = run(cmd, timeout=600)
        figures = queues_figures(cores, workload, mode, output) if status == 0 else None
        if figures is None:
            failures += 1
            print(f"  [{run_number}/{len(runs)}] {workload} {mode} {cores} cores failed (status {status})")
            continue
        record(results, figures, cmd, suite)
        label = f"balance.{workload}.{mode}.{cores}cores"
        shown = {k: figures[f"{label}.{k}"][0] for k in QUEUES_SHOWN if f"{label}.{k}" in figures}
        print(f"  [{run_number}/{len(runs)}] {label} {shown}", flush=True)
        ratio = queues_ratio(results, workload, cores)
        if mode == "shared" and ratio is not None:
            record(results, {f"balance.{workload}.{cores}cores.shared_over_percore": (ratio, "ratio")}, cmd, suite,
                   show=True)
    return failures


def run_balance(suite, results, prefix):
    runs = list(balance_runs())
    # Figures of runs this suite no longer makes (another size, another set) would be mistaken
    # for current ones: drop them.
    current = {" ".join(cmd) for *_, cmd in runs}
    for name in [n for n, r in results.items()
                 if n.startswith("balance.") and r.get("suite") == "balance" and r.get("command") not in current]:
        del results[name]
    failures = 0
    for run_number, (cores, workload, strategy, cmd) in enumerate(runs, 1):
        status, output = run(cmd, timeout=600)
        figures = balance_figures(cores, workload, strategy, output) if status == 0 else None
        if figures is None:
            failures += 1
            print(f"  [{run_number}/{len(runs)}] {workload} {strategy} {cores} cores failed (status {status})")
            continue
        record(results, figures, cmd, suite)
        label = f"balance.{workload}.{strategy}.{cores}cores"
        add_instruction_bound(results, workload, strategy, cores, " ".join(cmd))
        print(f"  [{run_number}/{len(runs)}] bench: {label} max_over_mean {figures[f'{label}.max_over_mean'][0]}, "
              f"speedup {figures.get(f'{label}.speedup', ('n/a',))[0]}", flush=True)
    add_seed_means(results)
    return failures


def run_qemu_suite(suite, results, prefix):
    """A micro-benchmark kernel: every `bench:` line it prints (those starting with `prefix`)."""
    binary, machine, bootargs = QEMU_SUITES[suite]
    target_dir, suffix = Path("target"), ""
    if suite in VARIANT_BUILDS:
        target_dir, change, suffix = VARIANT_BUILDS[suite]
        rustflags = variant_rustflags(change)
        print(f"bench: building {binary} with RUSTFLAGS={rustflags!r} in {target_dir}", flush=True)
        cargo(["build", "--release", "--bin", binary], env=dict(os.environ, CARGO_TARGET_DIR=str(target_dir),
                                                                 RUSTFLAGS=rustflags))
    cmd = qemu_command(binary, machine, bootargs, target_dir)
    status, output = run(cmd, timeout=600)
    if status != 0:
        print(f"bench: {suite} failed with status {status}:\n{output}")
        return 1
    for line in output.splitlines():
        m = LINE.match(line.strip())
        if not m or (prefix and not m.group(1).startswith(prefix) and not suite.startswith(prefix)):
            continue
        name, value, unit = m.groups()
        print(f"  bench: {name + suffix} {value} {unit}")
        try:
            record(results, {name + suffix: (float(value), unit)}, cmd, suite)
        except ValueError:
            pass
    return 0

# Every suite, in the order a full run takes them: name -> its runner, run(suite, results,
# prefix) -> failures. `make bench` with no BENCH runs them all.
SUITES = {**{name: run_qemu_suite for name in QEMU_SUITES}, **{name: run_host for name in HOST_SUITES},
          "balance": run_balance, "grain": run_grain, "scale": run_scale, "queues": run_queues}
# A suite also chosen by another's name: the queue comparison's figures are balance.*.
CHOSEN_WITH = {"queues": "balance"}


def selected(prefix):
    """The suites `--bench prefix` runs: those whose name (or CHOSEN_WITH's) starts with it or begins it."""
    return [s for s in SUITES if any(not prefix or n.startswith(prefix) or prefix.startswith(n)
                                     for n in (s, CHOSEN_WITH.get(s, s)))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", default="", help="only suites/figures starting with this prefix")
    prefix = parser.parse_args(argv).bench
    suites = selected(prefix)
    if prefix.startswith("peers"):  # beamcore against BEAM, Go and Tokio: only when asked for
        sys.exit(subprocess.run([sys.executable, str(ROOT / "scripts/peers.py")]).returncode)
    if not suites:
        sys.exit(f"bench: no suite matches {prefix!r} (suites: {', '.join(SUITES)})")
    if any(s not in HOST_SUITES for s in suites):
        print("bench: building release kernels", flush=True)
        cargo(["build", "--release", "--bins"])

    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    failures = 0
    for step, suite in enumerate(suites, 1):
        print(f"[{step}/{len(suites)}] {suite}", flush=True)
        started = time.monotonic()
        failures += SUITES[suite](suite, results, prefix)
        print(f"  ({time.monotonic() - started:.1f}s)", flush=True)

    write_results(RESULTS, results)
    print(f"bench: wrote {RESULTS} and {RESULTS.with_suffix('.md')}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
