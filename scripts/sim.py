#!/usr/bin/env python3
"""Turns the simulator's sweep (target/sim/sweep.json, written by `beamcore-sim sweep`) into
what `make sim` promises: the table (printed, and bench/sim.md), the figures in
bench/results.json as sim.<workload>.<policy>.<N>cores.{speedup,efficiency,w_over_s}
(bench/results.md follows; efficiency = speedup / min(N, W / S), the run's own bound), and the plots bench/plots/sim_speedup.svg, sim_efficiency.svg and
sim_grain_efficiency.svg (matplotlib).

Usage: sim.py [--sweep target/sim/sweep.json] [--no-plots]
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

COMMAND = "make sim (beamcore-sim sweep --seed {seed})"


def load(path):
    return load_data(json.loads(path.read_text()))


def load_data(data):
    runs = data["runs"]
    workloads = list(dict.fromkeys(r["label"] for r in runs if not r["label"].startswith("grain_")))
    policies = list(dict.fromkeys(r["policy"] for r in runs if not r["label"].startswith("grain_")))
    cores = sorted({r["cores"] for r in runs if not r["label"].startswith("grain_")})
    return data, runs, workloads, policies, cores


def lookup(runs):
    """(label, policy, cores) -> run; one-core runs serve every policy."""
    table = {}
    for r in runs:
        table[(r["label"], r["policy"], r["cores"])] = r
    ones = {r["label"]: r for r in runs if r["cores"] == 1}

    def get(label, policy, cores):
        if cores == 1:
            return ones.get(label)
        return table.get((label, policy, cores))
    return get


def figures(data, runs):
    """name -> (value, unit) of every figure the sweep gives."""
    out = {}
    for r in runs:
        prefix = f"sim.{r['label']}.{r['policy']}.{r['cores']}cores"
        out[f"{prefix}.speedup"] = (r["speedup"], "x")
        out[f"{prefix}.efficiency"] = (r["efficiency"], "ratio")
        out[f"{prefix}.w_over_s"] = (r["w_over_s"], "ratio")
    return out


def markdown(data, runs, workloads, policies, cores):
    get = lookup(runs)
    lines = ["# Simulated speedup (`make sim`)", "",
             "Written by `make sim` (scripts/sim.py from `beamcore-sim sweep`): the host simulator "
             "(docs/simulator.md) running the kernel's own policy code. Speedup = T1 / Tp (the workload's "
             "one-core makespan over this run's; for `grain`, the tasks' work over the makespan); efficiency = "
             "speedup / min(N, W / S), W the workload's total work and S its critical path, both at the "
             "operations' costs without switches or latencies (Brent: no schedule on N equal cores beats "
             f"max(W / N, S)). Seed {data['seed']}; {len(runs)} runs took {data['wall_s']} s on this machine.", "",
             f"Cost model: {data['costs']}", ""]
    head = "| workload | policy | " + " | ".join(f"{n}" for n in cores) + " |"
    for title, metric, digits in (("Efficiency (speedup / min(N, W / S)) by core count", "efficiency", 2),
                                  ("Speedup by core count", "speedup", 2)):
        lines += [f"## {title}", "", head, "|---|---|" + "---|" * len(cores)]
        for w in workloads:
            for p in policies:
                cells = []
                for n in cores:
                    r = get(w, p, n)
                    cells.append("–" if r is None else f"{r[metric]:.{digits}f}")
                lines.append(f"| {w} | {p} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## The workloads' parallelism W / S and sizes, by core count", "",
              "Each run is sized (`beamcore-sim sweep`, `sweep_size`) so that W / S is at least 10 x N where "
              "its shape allows; the size is the arguments of `apps/workloads.rs`'s function.", "",
              "| workload | " + " | ".join(f"{n}" for n in cores) + " |", "|---|" + "---|" * len(cores)]
    for w in workloads:
        cells = []
        for n in cores:
            r = get(w, policies[0], n)
            cells.append("–" if r is None else f"{r['w_over_s']:.0f} ({r.get('size', '')})")
        lines.append(f"| {w} | " + " | ".join(cells) + " |")
    lines += ["", "## Steals and migrations at 64 / 256 / 1024 cores", "",
              "| workload | policy | steals | migrations | makespan µs |", "|---|---|---|---|---|"]
    for w in workloads:
        for p in policies:
            parts = [get(w, p, n) for n in (64, 256, 1024)]
            if any(x is None for x in parts):
                continue
            lines.append(f"| {w} | {p} | " + " / ".join(str(x["steals"]) for x in parts) + " | " +
                         " / ".join(str(x["migrations"]) for x in parts) + " | " +
                         " / ".join(str(x["elapsed_us"]) for x in parts) + " |")
    grain = sorted({r["label"] for r in runs if r["label"].startswith("grain_")},
                   key=lambda l: int(l.split("_")[1][:-2]))
    if grain:
        columns = sorted({(r["cores"], r["policy"]) for r in runs if r["label"].startswith("grain_") and r["cores"] > 1})
        lines += ["", "## Granularity: efficiency by task size", "",
                  "`grain`: 120 ms of work in tasks of each size, spawned on core 0 by one spawner; efficiency = "
                  "the tasks' work / makespan / min(N, W / S) (the one spawner's chain of spawns is most "
                  "of S).", "",
                  "| task size | " + " | ".join(f"{n} cores {p}" for n, p in columns) + " |",
                  "|---|" + "---|" * len(columns)]
        for label in grain:
            cells = []
            for n, p in columns:
                r = get(label, p, n)
                cells.append("–" if r is None else f"{r['efficiency']:.2f}")
            lines.append(f"| {label.split('_')[1]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plots(runs, workloads, policies, cores):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    get = lookup(runs)
    out = ROOT / "bench/plots"
    out.mkdir(parents=True, exist_ok=True)
    for metric, name, ylabel in (("speedup", "sim_speedup.svg", "speedup (T1 / Tp)"),
                                 ("efficiency", "sim_efficiency.svg", "efficiency (speedup / min(N, W/S))")):
        cols = 4
        rows = (len(workloads) + cols - 1) // cols
        fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
        for i, w in enumerate(workloads):
            ax = axes[i // cols][i % cols]
            for p in policies:
                xs, ys = [], []
                for n in cores:
                    r = get(w, p, n)
                    if r is not None:
                        xs.append(n)
                        ys.append(r[metric])
                ax.plot(xs, ys, marker="o", markersize=3, label=p)
            if metric == "speedup":
                ax.plot(cores, cores, color="grey", linestyle=":", linewidth=1, label="ideal")
                ax.set_yscale("log", base=2)
            else:
                ax.set_ylim(0, 1.05)
            ax.set_xscale("log", base=2)
            ax.set_title(w)
            ax.set_xlabel("cores")
            ax.set_ylabel(ylabel)
            ax.grid(True, alpha=0.3)
        for j in range(len(workloads), rows * cols):
            axes[j // cols][j % cols].axis("off")
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower right", ncol=2)
        fig.suptitle(f"beamcore simulated {metric} by core count, per policy (make sim)")
        fig.tight_layout()
        fig.savefig(out / name)
        plt.close(fig)
    grain = [r for r in runs if r["label"].startswith("grain_") and r["cores"] > 1]
    if grain:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for n, p in sorted({(r["cores"], r["policy"]) for r in grain}):
            pts = sorted((int(r["label"].split("_")[1][:-2]), r["efficiency"]) for r in grain
                         if r["cores"] == n and r["policy"] == p)
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", markersize=3,
                    linestyle="-" if p == "default" else "--", label=f"{n} cores, {p}")
        ax.set_xscale("log")
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("task size (µs)")
        ax.set_ylabel("efficiency")
        ax.set_title("Granularity (simulated): efficiency by task size")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "sim_grain_efficiency.svg")
        plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sweep", default=str(ROOT / "target/sim/sweep.json"))
    parser.add_argument("--no-plots", action="store_true")
    args = parser.parse_args()
    data, runs, workloads, policies, cores = load(Path(args.sweep))
    table = markdown(data, runs, workloads, policies, cores)
    print(table)
    (ROOT / "bench/sim.md").write_text(table)
    results_path = ROOT / "bench/results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    # The sweep's own figures are replaced; `make sim-calibrate`'s (sim.calibration.*) are not its.
    for name in [n for n in results if n.startswith("sim.") and not n.startswith("sim.calibration.")]:
        del results[name]
    command = COMMAND.format(seed=data["seed"])
    for name, (value, unit) in figures(data, runs).items():
        results[name] = {"value": value, "unit": unit, "command": command, "suite": "sim"}
    import bench  # writes bench/results.json and bench/results.md the way `make bench` does
    bench.write_results(results_path, results)
    if not args.no_plots:
        plots(runs, workloads, policies, cores)
    print(f"sim: wrote bench/sim.md, {len(runs) * 3} figures into bench/results.json (and results.md)"
          + ("" if args.no_plots else ", bench/plots/sim_*.svg"))


if __name__ == "__main__":
    main()
