#!/usr/bin/env python3
"""What the thieves took: the steals of a complete scheduling trace, by what was stolen.

A steal's count says how often thieves ran dry; what they took says why. A thief that takes a
process that has not run yet (fresh from its spawn) takes its whole subtree of work to come; one
that takes a process that ran before (woken by a message through the inbox, or requeued) takes
what is left of it, often a send and an exit, and runs dry again at once. The simulator's
calibration (docs/simulator.md) compares these with the kernel's.

From a console log holding a dump of `trace=on` (`make trace`, or any boot with it), prints:
- steals, and how many took a fresh process and how many one that had run before;
- the size of what was stolen: the stolen process and every process spawned below it
  afterwards (a spawn's parent is the process running on the spawning core at that moment),
  mean and median;
- the first steals, in microseconds after the spawn of the workload's root (the stolen process's
  ancestor that the topmost one, the program's main, spawned), with their subtree sizes.

It needs every event: a core whose buffer dropped its oldest events makes the counts wrong, and
the script refuses such a trace (raise `trace_events=`, up to 262,144 per core: fib(18) at 4
cores records about 20,000 on its busiest core).

Usage: steal_mix.py LOG [--first 5]
"""

import argparse
import importlib.util
import statistics
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location("trace_tool", Path(__file__).resolve().parent / "trace.py")
trace_tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(trace_tool)

# What a process's last event before a steal says it is: fresh, or one that ran before.
RAN_BEFORE = frozenset(("run", "yield", "preempt", "block", "wake"))


class Incomplete(Exception):
    """The trace lost events: the mix would be wrong."""


def steal_mix(trace, first=5):
    """The steals of `trace` (trace.py's `Trace`), by what they took. Raises `Incomplete` when a
    core's buffer dropped events."""
    dropped = {core: d for core, d in trace.dropped.items() if d}
    if dropped:
        raise Incomplete(f"buffers dropped events ({', '.join(f'core {c}: {d}' for c, d in sorted(dropped.items()))}): "
                         "boot again with a larger trace_events=")
    events = sorted(trace.all_events(), key=lambda e: (e.ts, e.line))
    running = {}  # core -> pid running there
    parent, children, spawned_at, last = {}, {}, {}, {}
    steals = []
    for e in events:
        pid = (e.pid_index, e.pid_gen)
        if e.kind == "run":
            running[e.core] = pid
        elif e.kind in trace_tool.STOPS and running.get(e.core) == pid:
            running[e.core] = None
        if e.kind == "spawn":
            # Recorded by the spawning core (`arg`) about the core the child will run on.
            mother = running.get(e.arg)
            parent[pid] = mother
            children.setdefault(mother, []).append(pid)
            spawned_at[pid] = e.ts
            last[pid] = "spawn"
        elif e.kind == "steal":
            steals.append((e.ts, e.core, e.arg, pid, last.get(pid)))
        elif e.kind in RAN_BEFORE:
            last[pid] = e.kind

    def subtree(pid):
        size, stack = 0, [pid]
        while stack:
            size += 1
            stack.extend(children.get(stack.pop(), []))
        return size

    def root_spawn(pid):
        # Up to the ancestor the topmost one (the program's main) spawned: the workload's root.
        while parent.get(pid) is not None and parent.get(parent[pid]) is not None:
            pid = parent[pid]
        return spawned_at.get(pid)

    sizes = [subtree(pid) for _, _, _, pid, _ in steals]
    fresh = sum(1 for s in steals if s[4] == "spawn")
    firsts = []
    for (ts, thief, victim, pid, _), size in list(zip(steals, sizes))[:first]:
        root = root_spawn(pid)
        after = None if root is None else (ts - root) * 1e6 / trace.counter_hz
        firsts.append({"after_root_us": after, "thief": thief, "victim": victim, "subtree": size})
    return {
        "steals": len(steals),
        "fresh": fresh,
        "ran_before": sum(1 for s in steals if s[4] in RAN_BEFORE),
        "unknown": sum(1 for s in steals if s[4] is None),
        "subtree_mean": statistics.mean(sizes) if sizes else 0.0,
        "subtree_median": statistics.median(sizes) if sizes else 0,
        "first": firsts,
    }


def describe(mix):
    lines = [f"steals {mix['steals']}: {mix['fresh']} took a process not yet run, {mix['ran_before']} one that had "
             f"run before" + (f", {mix['unknown']} one spawned before the trace began" if mix["unknown"] else "")]
    if mix["steals"]:
        lines.append(f"stolen subtree (the process and what it spawned after): mean {mix['subtree_mean']:.1f}, "
                     f"median {mix['subtree_median']}")
    for f in mix["first"]:
        when = "?" if f["after_root_us"] is None else f"{f['after_root_us']:.0f} us"
        lines.append(f"  {when} after the workload's root spawn: core {f['thief']} took {f['subtree']} from core {f['victim']}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", help="console log file, or - for stdin")
    parser.add_argument("--first", type=int, default=5, help="how many of the first steals to list")
    args = parser.parse_args(argv)
    try:
        trace = trace_tool.parse(trace_tool.read_lines(args.input))
        print(describe(steal_mix(trace, args.first)))
    except (trace_tool.TraceError, Incomplete) as error:
        sys.exit(f"steal_mix: {error}")


if __name__ == "__main__":
    main()
