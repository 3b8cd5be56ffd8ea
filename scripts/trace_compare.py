#!/usr/bin/env python3
"""A traced QEMU run beside the simulator's turn model of the same run, event for event.

The calibration (`make sim-calibrate`) says how far the turn model's steals, attempts and
idle-with-work are from QEMU's; only the two timelines side by side say where. This script
reads a kernel trace (`make trace WORKLOAD=... ICOUNT=1 ARGS="seed=..."`, which writes
target/trace/<workload>.log), runs `beamcore-sim run --turns` on the same workload, cores,
seed, tick phases and rebalancing count (the log's report, `next_tick_ns` and
`rebalance_ticks_ago`) with `--events-until-us`, and prints:

- the events of the workload's first microseconds on both sides (who woke, refused, stole when);
- per window (the start, each millisecond, the last two milliseconds before each side's last
  exit), how many steals (and processes stolen), refused attempts, sleeps and wake-ups each
  side made.

Both timelines are aligned on the workload's first spawn (the kernel trace's second `spawn`
event: the first is main's own; the simulator's first). A traced run costs the kernel more
instructions per event than an untraced one, so its turns are not the calibration's runs';
read the shape, not the counts, of one pair.

Usage: trace_compare.py LOG --policy default|peers [--first 40] [--sim target/sim/.../beamcore-sim]
"""

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import bench  # noqa: E402  (the report line, the host target)
import trace  # noqa: E402  (the kernel trace's parser and its refusal numbers)

KINDS = ("steals", "stolen", "migrate", "refused", "sleep", "idle_end")
# A steal's processes are recorded one `steal` event each, back to back: events of one thief
# from one victim this close together are one steal.
ONE_STEAL_NS = 2_000


def parse_kernel_log(lines):
    """(events [(ns, core, name, arg)], report dict) of a kernel trace log, its events read by
    scripts/trace.py. A steal's, a refusal's and a migration's arg is the event's (the victim, or
    the core push rebalancing took the process from); a spawn's, a run's and an exit's is the
    process's slot, as the simulator notes them. Times are the counter's in ns
    (under -icount the counter is the virtual clock, as the simulator's ns are)."""
    parsed = trace.parse(lines)
    events = sorted((e.ts * 1_000_000_000 // parsed.counter_hz, e.core, e.kind,
                     e.arg if e.kind in ("refused", "steal", "migrate") else e.pid_index) for e in parsed.all_events())
    return events, bench.report_of("\n".join(lines))


def parse_sim_events(lines):
    """[(ns, core, name, arg)] of `beamcore-sim run --events-until-us` output."""
    out = []
    for line in lines:
        if line.startswith("event: "):
            core, ns, name, arg = line.split()[1:5]
            out.append((int(ns), int(core), name, int(arg)))
    return sorted(out)


def aligned(events, skip_spawns):
    """The events from the workload's first spawn on (after `skip_spawns` earlier ones), timed
    from it."""
    spawns = [e for e in events if e[2] == "spawn"]
    if len(spawns) <= skip_spawns:
        raise ValueError("no workload spawn in the events")
    t0 = spawns[skip_spawns][0]
    return [(ns - t0, core, name, arg) for ns, core, name, arg in events if ns >= t0]


def with_steal_ops(events):
    """The events with a `steals` event at the first process of each steal (see ONE_STEAL_NS),
    and every `steal` event renamed `stolen` (one per process taken)."""
    out, last = [], {}
    for ns, core, name, arg in events:
        if name == "steal":
            prev = last.get(core)
            if prev is None or prev[1] != arg or ns - prev[0] > ONE_STEAL_NS:
                out.append((ns, core, "steals", arg))
            last[core] = (ns, arg)
            name = "stolen"
        out.append((ns, core, name, arg))
    return out


def windows(events):
    """[(label, {kind: count})]: the first 100 us, the rest of the first millisecond, each
    millisecond after, and the last two milliseconds before the last exit."""
    if not events:
        return []
    end = max((ns for ns, _, name, _ in events if name == "exit"), default=events[-1][0])
    bounds = [("0-0.1 ms", 0, 100_000), ("0.1-1 ms", 100_000, 1_000_000)]
    ms = 1
    while ms * 1_000_000 < end:
        bounds.append((f"{ms}-{ms + 1} ms", ms * 1_000_000, (ms + 1) * 1_000_000))
        ms += 1
    bounds.append(("last 2 ms", end - 2_000_000, end + 1))
    out = []
    for label, lo, hi in bounds:
        counts = {k: sum(1 for ns, _, name, _ in events if name == k and lo <= ns < hi) for k in KINDS}
        out.append((label, counts))
    return out


def describe(event):
    ns, core, name, arg = event
    what = "victim {} {}".format(*trace.refusal(arg)) if name == "refused" else str(arg)
    return f"{ns / 1000:9.2f} c{core} {name} {what}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log")
    parser.add_argument("--policy", required=True, choices=["default", "peers"])
    parser.add_argument("--first", type=int, default=40, help="events of the start to list on each side")
    parser.add_argument("--sim", default=str(ROOT / f"target/sim/{bench.HOST_TARGET}/release/beamcore-sim"))
    args = parser.parse_args()
    lines = trace.read_lines(args.log)
    kernel, report = parse_kernel_log(lines)
    if report is None:
        sys.exit(f"trace_compare: {args.log} has no report line")
    config = next((l for l in lines if l.startswith("config: ")), "")
    seed = next((w.split("=")[1] for w in config.split() if w.startswith("seed=")), "1")
    ticks = ",".join(str(t) for t in report["next_tick_ns"])
    cmd = [args.sim, "run", "--workload", report["workload"], "--policy", args.policy, "--cores",
           str(report["cores"]), "--seed", seed, "--main-checks", "--turns", "--tick-ns", ticks,
           "--rebalance-ticks-ago", str(report.get("rebalance_ticks_ago", 0)),
           "--events-until-us", str(report["elapsed_us"] * 2)]
    sim = parse_sim_events(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines())
    q, s = with_steal_ops(aligned(kernel, 1)), with_steal_ops(aligned(sim, 0))
    print(f"trace_compare: {report['workload']} {args.policy} {report['cores']} cores seed {seed}; "
          f"simulator: {' '.join(cmd[1:])}")
    print(f"{'QEMU (traced)':<48} | simulator")
    shown = ("steals", "migrate", "refused", "sleep", "idle_end")
    start_q = [e for e in q if e[2] in shown][:args.first]
    start_s = [e for e in s if e[2] in shown][:args.first]
    for i in range(max(len(start_q), len(start_s))):
        left = describe(start_q[i]) if i < len(start_q) else ""
        right = describe(start_s[i]) if i < len(start_s) else ""
        print(f"{left:<48} | {right}")
    print()
    print("| window | " + " | ".join(f"{k} QEMU / sim" for k in KINDS) + " |")
    print("|---|" + "---|" * len(KINDS))
    wq, ws = dict(windows(q)), dict(windows(s))
    for label in dict.fromkeys([*wq, *ws]):
        a, b = wq.get(label, {}), ws.get(label, {})
        if not any(a.values()) and not any(b.values()):
            continue
        print(f"| {label} | " + " | ".join(f"{a.get(k, 0)} / {b.get(k, 0)}" for k in KINDS) + " |")


if __name__ == "__main__":
    main()
