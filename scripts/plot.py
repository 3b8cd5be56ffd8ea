#!/usr/bin/env python3
"""Draws SVG charts from bench/results.json (written by scripts/bench.py); hand-written SVG,
standard library only.

Charts, each written only when its figures are present:
  hot_ops.svg                        instructions per hot operation: deque push/pop/steal (asm vs
                                     portable) and the scheduler's yield, message hop, spawn+exit
  work_<workload>_<N>cores.svg       work done per core, one group per strategy, one bar per core
                                     (balance.<workload>.<strategy>.<N>cores.work.core<K>)
  max_over_mean_<workload>.svg       busiest core's work over the mean, by strategy and core count
                                     (balance.<workload>.<strategy>.<N>cores.max_over_mean)
Balance charts leave out one-core runs (nothing to balance); a histogram without steals is skipped.
  steal_latency_<workload>_<N>cores.svg  steal-latency histogram by strategy
                                     (balance.<workload>.<strategy>.<N>cores.latency.b<K>)
  speedup_policies_<N>cores.svg      speedup per workload, beamcore's defaults against the peers'
                                     policy (balance.<workload>.{default,peers}.<N>cores.speedup)
  grain_efficiency.svg               efficiency (speedup / cores) by task size, per core count and
                                     policy (grain.<size>us.<N>cores[.peers].efficiency)
The balance suite names its policies `default` and `peers` where the strategies' names go, so the
work, max/mean and latency charts show them beside the strategies.

Usage: plot.py [--results bench/results.json] [--out bench/plots]
"""

import argparse
import json
import math
import re
import sys
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parent.parent

WIDTH = 800
# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
STRATEGY_ORDER = ["random", "load", "locality", "p2c", "adaptive", "default", "peers"]
POLICY_ORDER = ["default", "peers"]
GRAIN = re.compile(r"^grain\.(\d+)us\.(\d+)cores(?:\.([a-z]+))?\.efficiency$")
BALANCE = re.compile(r"^balance\.([^.]+)\.([^.]+)\.(\d+)cores\.(.+)$")
LATENCY_BUCKETS = 10


def colours(n):
    """n colours: the palette, then evenly spaced hues if there are more series than it holds."""
    if n <= len(PALETTE):
        return PALETTE[:n]
    out = list(PALETTE)
    for i in range(n - len(PALETTE)):
        hue = (i * 137.508) % 360
        out.append(f"hsl({hue:.0f},60%,45%)")
    return out


def fmt(value):
    if value is None:
        return "n/a"
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def nice_ticks(top, count=5):
    """Tick values from 0 to at least `top`, at a 1/2/2.5/5 x 10^k step."""
    if top <= 0 or not math.isfinite(top):
        return [0.0, 1.0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    ticks = [0.0]
    while ticks[-1] < top * (1 - 1e-9):
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


class Svg:
    """A list of SVG elements with a header and the document's size."""

    def __init__(self, height, title, subtitle=""):
        self.height = height
        self.parts = ['<rect width="100%" height="100%" fill="white"/>',
                      f'<text class="title" x="{WIDTH / 2}" y="28" text-anchor="middle" font-size="19" '
                      f'font-weight="bold">{escape(title)}</text>']
        if subtitle:
            self.parts.append(f'<text class="subtitle" x="{WIDTH / 2}" y="48" text-anchor="middle" '
                              f'font-size="12" fill="#555">{escape(subtitle)}</text>')

    def add(self, element):
        self.parts.append(element)

    def text(self):
        return "\n".join([
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{self.height}" '
            f'viewBox="0 0 {WIDTH} {self.height}" font-family="sans-serif" font-size="13">',
            *self.parts, "</svg>"]) + "\n"


def legend(svg, x, y, series, palette, title=None):
    """A horizontal legend starting at (x, y), wrapping at the chart's width."""
    cx = x
    if title:
        svg.add(f'<text x="{cx}" y="{y}" font-weight="bold">{escape(title)}</text>')
        cx += 9 * len(title) + 12
    for name, colour in zip(series, palette):
        width = 26 + 8 * len(name)
        if cx + width > WIDTH - 20:
            cx, y = x, y + 20
        svg.add(f'<g class="legend-item" data-series="{escape(name)}"><rect x="{cx}" y="{y - 11}" width="14" '
                f'height="14" fill="{colour}"/><text x="{cx + 20}" y="{y}">{escape(name)}</text></g>')
        cx += width + 14
    return y


def bar_panel(svg, box, groups, series, values, palette, y_label, x_label=None, ref_line=None,
              group_labels=None, group_means=False):
    """Grouped bars in box = (x, y, w, h), the plotting area: axes, ticks, labels and bars.

    values[(group, series)] -> number or None (no bar). Each bar carries data-group,
    data-series and data-value attributes and a tooltip. group_means: a dashed line across each
    group at the mean of its bars.
    """
    x0, y0, w, h = box
    present = [v for v in values.values() if v is not None]
    top = max(present + [ref_line or 0, 0]) or 1.0
    ticks = nice_ticks(top)
    y_max = ticks[-1]

    def y_of(v):
        return y0 + h - v / y_max * h

    for t in ticks:
        ty = y_of(t)
        svg.add(f'<line x1="{x0}" y1="{ty:.1f}" x2="{x0 + w}" y2="{ty:.1f}" stroke="#000" '
                f'stroke-opacity="{0.5 if t == 0 else 0.1}"/>')
        svg.add(f'<text class="ytick" x="{x0 - 6}" y="{ty + 4:.1f}" text-anchor="end">{fmt(t)}</text>')
    svg.add(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y0 + h}" stroke="#333"/>')
    svg.add(f'<text class="ylabel" transform="translate({x0 - 58},{y0 + h / 2}) rotate(-90)" '
            f'text-anchor="middle">{escape(y_label)}</text>')

    group_w = w / max(len(groups), 1)
    inner = group_w * 0.8
    bar_w = inner / max(len(series), 1)
    labels = group_labels or {}
    for gi, group in enumerate(groups):
        gx = x0 + gi * group_w + (group_w - inner) / 2
        for si, name in enumerate(series):
            value = values.get((group, name))
            if value is None:
                continue
            bx = gx + si * bar_w
            by = y_of(max(value, 0))
            bh = y0 + h - by
            tip = f"{labels.get(group, group)}, {name}: {fmt(value)}"
            svg.add(f'<rect class="bar" data-group="{escape(group)}" data-series="{escape(name)}" '
                    f'data-value="{value:g}" x="{bx + 1:.2f}" y="{by:.2f}" width="{max(bar_w - 2, 1):.2f}" '
                    f'height="{bh:.2f}" fill="{palette[si]}"><title>{escape(tip)}</title></rect>')
            if 6.5 * len(fmt(value)) + 2 <= bar_w:  # the label fits over its bar
                svg.add(f'<text class="value" x="{bx + bar_w / 2:.2f}" y="{by - 4:.2f}" text-anchor="middle" '
                        f'font-size="11">{fmt(value)}</text>')
        present_here = [values[(group, n)] for n in series if values.get((group, n)) is not None]
        if group_means and present_here:
            mean = sum(present_here) / len(present_here)
            svg.add(f'<line class="mean" data-group="{escape(group)}" data-value="{mean:g}" x1="{gx:.2f}" '
                    f'y1="{y_of(mean):.2f}" x2="{gx + inner:.2f}" y2="{y_of(mean):.2f}" stroke="#222" '
                    f'stroke-width="1.5" stroke-dasharray="5 3"><title>mean {fmt(mean)}</title></line>')
        svg.add(f'<text class="xtick" x="{x0 + gi * group_w + group_w / 2:.2f}" y="{y0 + h + 18}" '
                f'text-anchor="middle">{escape(labels.get(group, group))}</text>')
    if ref_line is not None:
        ry = y_of(ref_line)
        svg.add(f'<line class="ref" x1="{x0}" y1="{ry:.1f}" x2="{x0 + w}" y2="{ry:.1f}" stroke="#c00" '
                f'stroke-dasharray="6 4"/>')
    if x_label:
        svg.add(f'<text class="xlabel" x="{x0 + w / 2}" y="{y0 + h + 40}" text-anchor="middle">'
                f'{escape(x_label)}</text>')


def grouped_chart(title, subtitle, groups, series, values, y_label, x_label, legend_title=None,
                  ref_line=None, ref_label=None, group_labels=None, group_means=False):
    """A complete single-panel grouped bar chart."""
    svg = Svg(480, title, subtitle)
    palette = colours(len(series))
    legend_y = legend(svg, 80, 74, series, palette, legend_title)
    top = legend_y + 22
    bar_panel(svg, (80, top, WIDTH - 110, 480 - top - 60), groups, series, values, palette, y_label,
              x_label, ref_line, group_labels, group_means)
    if ref_line is not None and ref_label:
        svg.add(f'<text x="{WIDTH - 32}" y="{top - 6}" text-anchor="end" fill="#c00" font-size="12">'
                f'- - - {escape(ref_label)}</text>')
    if group_means:
        svg.add(f'<text x="{WIDTH - 32}" y="{top - 6}" text-anchor="end" fill="#222" font-size="12">'
                f'- - - mean of the group</text>')
    return svg.text()


# ---------------------------------------------------------------------------------------------
# The charts. Each returns a list of (file name, svg text) and a note on what it skipped.


def value_of(results, name):
    entry = results.get(name)
    if isinstance(entry, dict) and isinstance(entry.get("value"), (int, float)):
        return float(entry["value"])
    return None


def unit_of(results, names, default):
    units = {results[n].get("unit") for n in names if n in results and isinstance(results[n], dict)}
    units.discard(None)
    return units.pop() if len(units) == 1 else default


def hot_ops_chart(results):
    deque_ops = ["push", "pop", "steal"]
    variants = [v for v in ("asm", "portable") if any(value_of(results, f"deque.{v}.{op}") is not None
                                                     for op in deque_ops)]
    sched_ops = [op for op in ("yield", "message_hop", "spawn_exit") if value_of(results, f"sched.{op}") is not None]
    if not variants and not sched_ops:
        return [], "hot_ops.svg: no deque.{asm,portable}.* or sched.* figures"
    svg = Svg(0, "Instructions per hot operation",
              "1 Cortex-A72 core under QEMU -icount shift=0,sleep=off (1 ns of guest time per instruction)")
    top = 80
    panel_h = 230
    if variants:
        svg.add(f'<text x="20" y="{top}" font-size="15" font-weight="bold">'
                f'Chase-Lev deque, one core, uncontended</text>')
        palette = colours(len(variants))
        labels = {"asm": "hand-written LDXR/STXR (asm)", "portable": "portable core::sync::atomic"}
        names = [labels[v] for v in variants]
        legend_y = legend(svg, 90, top + 24, names, palette)
        values = {(op, labels[v]): value_of(results, f"deque.{v}.{op}") for op in deque_ops for v in variants}
        unit = unit_of(results, [f"deque.{v}.{op}" for v in variants for op in deque_ops], "insns")
        bar_panel(svg, (90, legend_y + 26, WIDTH - 120, panel_h), deque_ops, names, values, palette,
                  f"instructions per operation ({unit})")
        top = legend_y + 26 + panel_h + 60
    if sched_ops:
        svg.add(f'<text x="20" y="{top}" font-size="15" font-weight="bold">'
                f'Scheduler, one core, per operation</text>')
        traced = any(value_of(results, f"sched.{op}.traced") is not None for op in sched_ops)
        name = "trace=off" if traced else "beamcore scheduler"
        names = [name, "trace=on (recording events)"] if traced else [name]
        palette = colours(len(names))
        legend_y = legend(svg, 90, top + 24, names, palette)
        values = {(op, name): value_of(results, f"sched.{op}") for op in sched_ops}
        if traced:
            values.update({(op, names[1]): value_of(results, f"sched.{op}.traced") for op in sched_ops})
        unit = unit_of(results, [f"sched.{op}" for op in sched_ops], "insns")
        labels = {"yield": "yield (switch to the next process)", "message_hop": "message hop (send + receive)",
                  "spawn_exit": "spawn + run + exit"}
        bar_panel(svg, (90, legend_y + 26, WIDTH - 120, panel_h), sched_ops, names, values, palette,
                  f"instructions per operation ({unit})", group_labels=labels)
        top = legend_y + 26 + panel_h + 60
    svg.height = top - 20
    return [("hot_ops.svg", svg.text())], None


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
            legend_title="cores:", ref_line=1.0, ref_label="1.0 = perfect balance")))
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
                "successful steals per bucket; bucket K: below 2^(K+7) counter cycles, the last: the rest",
                groups, strategies, values, "successful steals (count)", "steal latency (counter cycles)",
                legend_title="strategy:", group_labels=labels)))
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
            workloads, policies, values, "speedup (x)", "workload", legend_title="policy:",
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
        groups, names, values, "efficiency (speedup / cores)", "work per task", legend_title="cores:",
        ref_line=1.0, ref_label="1.0 = perfect", group_labels=labels))], None


def render(results):
    """All charts for `results`: ([(file name, svg)], [notes on skipped charts])."""
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
    for name, text in charts:
        (out / name).write_text(text)
    for note in skipped:
        print(f"plot: skipped {note}")
    if charts:
        print(f"plot: wrote {len(charts)} chart(s) in {out}: {', '.join(name for name, _ in charts)}")
    else:
        print(f"plot: no chart written: {path} holds none of the figures the charts need")
    return 0


if __name__ == "__main__":
    sys.exit(main())
