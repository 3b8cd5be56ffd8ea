#!/usr/bin/env python3
"""Draws charts of bench/results.json (written by scripts/bench.py) with matplotlib, as SVG.

Charts, each written only when its figures are present:
  hot_ops.svg                        instructions per hot operation: deque push/pop/steal (asm vs
                                     portable) and the scheduler's yield, message hop, spawn+exit
                                     (with trace=on beside them when measured)
  work_<workload>_<N>cores.svg       work done per core, one group per strategy, one bar per core
                                     (balance.<workload>.<strategy>.<N>cores.work.core<K>)
  max_over_mean_<workload>.svg       busiest core's work over the mean, by strategy and core count
                                     (balance.<workload>.<strategy>.<N>cores.max_over_mean)
  steal_latency_<workload>_<N>cores.svg  steal-latency histogram by strategy
                                     (balance.<workload>.<strategy>.<N>cores.latency.b<K>)
  speedup_policies_<N>cores.svg      speedup per workload, beamcore's defaults against the peers'
                                     policy (balance.<workload>.{default,peers}.<N>cores.speedup)
  grain_efficiency.svg               efficiency (speedup / cores) by task size, per core count and
                                     policy (grain.<size>us.<N>cores[.peers].efficiency)
Balance charts leave out one-core runs (nothing to balance); a histogram without steals is skipped.
The balance suite names its policies `default` and `peers` where the strategies' names go, so the
work, max/mean and latency charts show them beside the strategies.

Each chart is built as a matplotlib Figure first (`render`), which the tests inspect, and saved
by `main`. The SVG files carry no date and fixed element ids, so charts of the same figures are
the same files and a commit shows only what changed.

Usage: plot.py [--results bench/results.json] [--out bench/plots]
"""

import argparse
import json
import re
import sys
from pathlib import Path

try:
    import matplotlib
    from matplotlib.figure import Figure
except ImportError:
    sys.exit(f"plot.py: {sys.executable} cannot import matplotlib: run `make setup` (Debian's python3-matplotlib), "
             "then run this under the Python that has it (scripts/mpl-python.sh prints it)")

ROOT = Path(__file__).resolve().parent.parent

# Reproducible SVG: no random ids, text kept as text (smaller, searchable).
matplotlib.rcParams.update({"svg.hashsalt": "beamcore", "svg.fonttype": "none", "font.size": 10})
SVG_METADATA = {"Date": None}

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
STRATEGY_ORDER = ["random", "load", "locality", "p2c", "adaptive", "default", "peers"]
POLICY_ORDER = ["default", "peers"]
GRAIN = re.compile(r"^grain\.(\d+)us\.(\d+)cores(?:\.([a-z]+))?\.efficiency$")
BALANCE = re.compile(r"^balance\.([^.]+)\.([^.]+)\.(\d+)cores\.(.+)$")
LATENCY_BUCKETS = 10


def colours(n):
    """n colours: the palette, then matplotlib's tab20 if there are more series than it holds."""
    if n <= len(PALETTE):
        return PALETTE[:n]
    extra = matplotlib.colormaps["tab20"]
    return PALETTE + [extra(i % 20) for i in range(n - len(PALETTE))]


def fmt(value):
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def grouped_bars(ax, groups, series, values, y_label, x_label=None, group_labels=None, ref_line=None,
                 ref_label=None, group_means=False, legend_title=None):
    """Grouped bars on `ax`: one group per entry of `groups` (x), one bar per series in each.

    values[(group, series)] -> number or None (no bar). Each series is one BarContainer labelled
    with its name, holding a bar for every group (NaN where there is none), so its values read
    back in group order. ref_line: a dashed horizontal line (gid `ref`); group_means: each
    group's mean of its bars as a short dashed line across the group (gid `mean`).
    """
    palette = colours(len(series))
    width = 0.8 / max(len(series), 1)
    labels = group_labels or {}
    for si, name in enumerate(series):
        heights = [values.get((g, name)) for g in groups]
        xs = [gi - 0.4 + width * (si + 0.5) for gi in range(len(groups))]
        bars = ax.bar(xs, [float("nan") if h is None else h for h in heights], width * 0.92, label=name,
                      color=palette[si])
        if len(groups) * len(series) <= 24:  # a label over each bar while they stay readable
            ax.bar_label(bars, labels=["" if h is None else fmt(h) for h in heights], fontsize=8, padding=2)
    if group_means:
        for gi, group in enumerate(groups):
            present = [values[(group, n)] for n in series if values.get((group, n)) is not None]
            if present:
                mean = sum(present) / len(present)
                ax.hlines(mean, gi - 0.4, gi + 0.4, colors="#222", linestyles="--", linewidth=1.2, gid="mean",
                          label="mean of the group" if gi == 0 else None)
    if ref_line is not None:
        ax.axhline(ref_line, color="#c00", linestyle="--", linewidth=1, label=ref_label, gid="ref")
    ax.set_xticks(range(len(groups)), [labels.get(g, g) for g in groups])
    ax.set_ylabel(y_label)
    if x_label:
        ax.set_xlabel(x_label)
    ax.set_ylim(bottom=0)
    ax.margins(y=0.12)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(title=legend_title, fontsize=8, ncols=min(len(series) + 1, 8), loc="upper left",
              bbox_to_anchor=(0, -0.14 if x_label else -0.08), frameon=False)


def grouped_chart(title, subtitle, groups, series, values, y_label, x_label, **options):
    """A complete single-panel grouped bar chart as a Figure."""
    fig = Figure(figsize=(9, 5.4), layout="constrained")
    ax = fig.add_subplot()
    fig.suptitle(title, fontweight="bold")
    ax.set_title(subtitle, fontsize=9, color="#555")
    grouped_bars(ax, groups, series, values, y_label, x_label, **options)
    return fig


# ---------------------------------------------------------------------------------------------
# The charts. Each returns a list of (file name, Figure) and a note on what it skipped.


def value_of(results, name):
    entry = results.get(name)
    if isinstance(entry, dict) and isinstance(entry.get("value"), (int, float)):
        return float(entry["value"])
    return None


def unit_of(results, names, default):
    units = {results[n].get("unit") for n in names if n in results and isinstance(results[n], dict)}
    units.discard(None)
    return units.pop() if len(units) == 1 else default


DEQUE_LABELS = {"asm": "hand-written LDXR/STXR (asm)", "portable": "portable core::sync::atomic"}
SCHED_LABELS = {"yield": "yield (switch to the next process)", "message_hop": "message hop (send + receive)",
                "spawn_exit": "spawn + run + exit"}
TRACED = "trace=on (recording events)"


def hot_ops_chart(results):
    deque_ops = ["push", "pop", "steal"]
    variants = [v for v in ("asm", "portable") if any(value_of(results, f"deque.{v}.{op}") is not None
                                                     for op in deque_ops)]
    sched_ops = [op for op in ("yield", "message_hop", "spawn_exit") if value_of(results, f"sched.{op}") is not None]
    if not variants and not sched_ops:
        return [], "hot_ops.svg: no deque.{asm,portable}.* or sched.* figures"
    panels = int(bool(variants)) + int(bool(sched_ops))
    fig = Figure(figsize=(9, 4.2 * panels), layout="constrained")
    fig.suptitle("Instructions per hot operation\n1 Cortex-A72 core under QEMU -icount shift=0,sleep=off "
                 "(1 ns of guest time per instruction)", fontsize=11)
    axes = iter(fig.subplots(panels, 1, squeeze=False)[:, 0])
    if variants:
        ax = next(axes)
        ax.set_title("Chase-Lev deque, one core, uncontended", fontweight="bold", loc="left")
        names = [DEQUE_LABELS[v] for v in variants]
        values = {(op, DEQUE_LABELS[v]): value_of(results, f"deque.{v}.{op}") for op in deque_ops for v in variants}
        unit = unit_of(results, [f"deque.{v}.{op}" for v in variants for op in deque_ops], "insns")
        grouped_bars(ax, deque_ops, names, values, f"instructions per operation ({unit})")
    if sched_ops:
        ax = next(axes)
        ax.set_title("Scheduler, one core, per operation", fontweight="bold", loc="left")
        traced = any(value_of(results, f"sched.{op}.traced") is not None for op in sched_ops)
        name = "trace=off" if traced else "beamcore scheduler"
        names = [name, TRACED] if traced else [name]
        values = {(op, name): value_of(results, f"sched.{op}") for op in sched_ops}
        if traced:
            values.update({(op, TRACED): value_of(results, f"sched.{op}.traced") for op in sched_ops})
        unit = unit_of(results, [f"sched.{op}" for op in sched_ops], "insns")
        grouped_bars(ax, sched_ops, names, values, f"instructions per operation ({unit})",
                     group_labels=SCHED_LABELS)
    return [("hot_ops.svg", fig)], None


def balance_figures(results):
    """{(workload, strategy, cores): {metric: value}} from the balance.* figures of runs on two
    cores or more (one core has nothing to balance: one bar, max/mean 1, no steals)."""
    table = {}
    for name in results:
        m = BALANCE.match(name)
        value = value_of(results, name)
        if m and value is not None and int(m.group(3)) >= 2:
            workload, strategy, cores, metric = m.groups()
            table.setdefault((workload, strategy, int(cores)), {})[metric] = value
    return table


def strategies_in(keys):
    found = {strategy for _, strategy, _ in keys}
    return [s for s in STRATEGY_ORDER if s in found] + sorted(found - set(STRATEGY_ORDER))


def work_charts(results, table):
    charts = []
    work = re.compile(r"^work\.core(\d+)$")
    for workload in sorted({w for w, _, _ in table}):
        for cores in sorted({n for w, _, n in table if w == workload}):
            keys = [k for k in table if k[0] == workload and k[2] == cores]
            per = {k[1]: {int(m.group(1)): v for metric, v in table[k].items() if (m := work.match(metric))}
                   for k in keys}
            per = {s: d for s, d in per.items() if d}
            if not per:
                continue
            strategies = [s for s in strategies_in(keys) if s in per]
            core_ids = sorted({c for d in per.values() for c in d})
            series = [f"core {c}" for c in core_ids]
            values = {(s, f"core {c}"): per[s].get(c) for s in strategies for c in core_ids}
            names = [f"balance.{workload}.{s}.{cores}cores.work.core{c}" for s in strategies for c in core_ids]
            unit = unit_of(results, names, "units")
            charts.append((f"work_{workload}_{cores}cores.svg", grouped_chart(
                f"Work per core: workload {workload}, {cores} cores",
                "units of work credited to the core that ran them; equal bars = even balance",
                strategies, series, values, f"work done ({unit})", "victim-selection strategy",
                group_means=True)))
    return charts, None if charts else "work_*.svg: no balance.*.work.core<K> figures"


def max_over_mean_charts(results, table):
    charts = []
    for workload in sorted({w for w, _, _ in table}):
        keys = [k for k in table if k[0] == workload and "max_over_mean" in table[k]]
        if not keys:
            continue
        strategies = strategies_in(keys)
        core_counts = sorted({k[2] for k in keys})
        series = [f"{n} cores" for n in core_counts]
        values = {(s, f"{n} cores"): table.get((workload, s, n), {}).get("max_over_mean")
                  for s in strategies for n in core_counts}
        charts.append((f"max_over_mean_{workload}.svg", grouped_chart(
            f"Balance: busiest core over the mean, workload {workload}",
            "max/mean of per-core work; 1.0 is perfect balance, lower is better",
            strategies, series, values, "max / mean work (ratio)", "victim-selection strategy",
            legend_title="cores", ref_line=1.0, ref_label="1.0 = perfect balance")))
    return charts, None if charts else "max_over_mean_*.svg: no balance.*.max_over_mean figures"


def bucket_label(k):
    if k == LATENCY_BUCKETS - 1:
        return f"≥{2 ** (k + 6)}"
    return f"<{2 ** (k + 7)}"


def latency_charts(results, table):
    charts = []
    bucket = re.compile(r"^latency\.b(\d+)$")
    for workload in sorted({w for w, _, _ in table}):
        for cores in sorted({n for w, _, n in table if w == workload}):
            keys = [k for k in table if k[0] == workload and k[2] == cores
                    and any(bucket.match(m) and v for m, v in table[k].items())]
            if not keys:  # no figures, or no steal at all
                continue
            strategies = strategies_in(keys)
            groups = [f"b{k}" for k in range(LATENCY_BUCKETS)]
            values = {}
            for s in strategies:
                metrics = table[(workload, s, cores)]
                for k in range(LATENCY_BUCKETS):
                    values[(f"b{k}", s)] = metrics.get(f"latency.b{k}", 0.0)
            labels = {f"b{k}": bucket_label(k) for k in range(LATENCY_BUCKETS)}
            charts.append((f"steal_latency_{workload}_{cores}cores.svg", grouped_chart(
                f"Steal latency: workload {workload}, {cores} cores",
                "successful steals per bucket; bucket K: below 2^(K+7) counts, the last: the rest",
                groups, strategies, values, "successful steals (count)", "steal latency (counts)",
                legend_title="strategy", group_labels=labels)))
    return charts, None if charts else "steal_latency_*.svg: no balance.*.latency.b<K> figures with steals"


def policy_charts(results, table):
    charts = []
    for cores in sorted({n for _, p, n in table if p in POLICY_ORDER}):
        keys = [k for k in table if k[2] == cores and k[1] in POLICY_ORDER and "speedup" in table[k]]
        if not keys:
            continue
        workloads = sorted({k[0] for k in keys})
        policies = [p for p in POLICY_ORDER if any(k[1] == p for k in keys)]
        values = {(w, p): table.get((w, p, cores), {}).get("speedup") for w in workloads for p in policies}
        charts.append((f"speedup_policies_{cores}cores.svg", grouped_chart(
            f"Speedup per workload on {cores} cores: beamcore's defaults and the peers' policy",
            "all work / the busiest core's work, under -icount; peers: random victim, steal half, "
            "no cooldown, no thresholds",
            workloads, policies, values, "speedup (x)", "workload", legend_title="policy",
            ref_line=float(cores), ref_label=f"{cores} = every core equally busy")))
    return charts, None if charts else "speedup_policies_*.svg: no balance.*.{default,peers}.*.speedup figures"


def grain_chart(results):
    values, sizes, series = {}, set(), set()
    for name in results:
        m = GRAIN.match(name)
        value = value_of(results, name)
        if m and value is not None:
            size, cores, policy = int(m.group(1)), int(m.group(2)), m.group(3) or "default"
            label = f"{cores} core{'s' if cores > 1 else ''}, {policy}"
            values[(f"{size}", label)] = value
            sizes.add(size)
            series.add((cores, POLICY_ORDER.index(policy) if policy in POLICY_ORDER else 99, label))
    if not values:
        return [], "grain_efficiency.svg: no grain.*.efficiency figures"
    groups = [f"{s}" for s in sorted(sizes)]
    labels = {g: f"{g} µs" for g in groups}
    names = [label for _, _, label in sorted(series)]
    return [("grain_efficiency.svg", grouped_chart(
        "Granularity: efficiency by task size",
        "speedup over the work on one core without tasks, divided by the cores; tasks spawned on core 0",
        groups, names, values, "efficiency (speedup / cores)", "work per task", legend_title="cores, policy",
        ref_line=1.0, ref_label="1.0 = perfect", group_labels=labels))], None


def render(results):
    """All charts for `results`: ([(file name, Figure)], [notes on skipped charts])."""
    table = balance_figures(results)
    written, skipped = [], []
    for make in (lambda: hot_ops_chart(results), lambda: work_charts(results, table),
                 lambda: max_over_mean_charts(results, table), lambda: latency_charts(results, table),
                 lambda: policy_charts(results, table), lambda: grain_chart(results)):
        charts, note = make()
        written += charts
        if note:
            skipped.append(note)
    return written, skipped


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", default=str(ROOT / "bench/results.json"), help="figures from scripts/bench.py")
    parser.add_argument("--out", default=str(ROOT / "bench/plots"), help="directory for the SVG files")
    args = parser.parse_args(argv)
    path = Path(args.results)
    try:
        results = json.loads(path.read_text())
    except FileNotFoundError:
        sys.exit(f"plot.py: {path} not found; run `make bench` first")
    except json.JSONDecodeError as error:
        sys.exit(f"plot.py: {path} is not valid JSON: {error}")
    if not isinstance(results, dict):
        sys.exit(f"plot.py: {path} should map figure names to {{value, unit, command, suite}}")
    charts, skipped = render(results)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, fig in charts:
        fig.savefig(out / name, metadata=SVG_METADATA)
    for note in skipped:
        print(f"plot: skipped {note}")
    if charts:
        print(f"plot: wrote {len(charts)} chart(s) in {out}: {', '.join(name for name, _ in charts)}")
    else:
        print(f"plot: no chart written: {path} holds none of the figures the charts need")
    return 0


if __name__ == "__main__":
    sys.exit(main())
