#!/usr/bin/env python3
"""Turns beamcore's scheduling trace (bootarg `trace=on`) into a Chrome/Perfetto trace and a picture.

The kernel prints, after its run, among other console lines:

    trace: begin cores=<n> counter_hz=<hz>
    trace: core=<c> recorded=<m> dropped=<d>
    trace: ev <core> <timestamp_counts> <event> <pid_index> <pid_generation> <arg>
    ...
    trace: end

Events: run, yield, preempt, block, exit (arg 0), spawn (arg: spawning core), wake (arg: waker's
core), steal (arg: victim core), migrate (arg: source core), sleep and idle_end (pid fields 0 0),
refused (a steal attempt a rule refused; arg: victim core + 65,536 x the refusal's number in
`REFUSALS`; pid fields 0 0).
<core> is the core the event is about, which is where it is drawn; the kernel records a wake or a
spawn in the causing core's buffer and a migration in the rebalancing core's, so `recorded=`
(what one core's buffer kept) is compared with the dump only in total. Timestamps are counter
ticks on one clock shared by all cores. Events with equal timestamps are taken in the order that
pairs them (the kernel's merge of the buffers does not keep their order).

A core's buffer keeps only its newest events, so its first slice may have begun before the
buffer did: a stop (yield/preempt/block/exit) with no run before it is drawn from the core's
first event, meaning the oldest event from its own buffer (run, a stop, sleep, idle_end, steal,
or a wake or spawn it caused itself); events other cores recorded about it may be older still.

Writes OUT_PREFIX.json (Chrome trace event format: open it in https://ui.perfetto.dev or
chrome://tracing, the view to explore it in) and OUT_PREFIX.png (the same timeline as a picture,
drawn with matplotlib; skipped with a warning where matplotlib is missing), and prints a one-line
summary.

Usage: trace.py INPUT [-o OUT_PREFIX]    (INPUT: a console log, or - for stdin; default prefix: trace)
"""

import argparse
import colorsys
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

STOPS = ("yield", "preempt", "block", "exit")
EVENTS = ("run", *STOPS, "spawn", "wake", "steal", "migrate", "sleep", "idle_end", "queue", "refused")
# Why a steal attempt was refused, by number (`Refusal` in crates/sched-policy, declaration order).
REFUSALS = ("empty", "below_threshold", "cooldown", "migration_limit", "not_allowed")


def refusal(arg):
    """(victim core, reason) of a `refused` event's arg."""
    number = arg >> 16
    return arg & 0xFFFF, REFUSALS[number] if number < len(REFUSALS) else f"refusal {number}"

BEGIN = re.compile(r"^trace: begin cores=(\d+) counter_hz=(\d+)$")
CORE = re.compile(r"^trace: core=(\d+) recorded=(\d+) dropped=(\d+)$")
EV = re.compile(r"^trace: ev (\d+) (\d+) (\S+) (\d+) (\d+) (\d+)$")
END = re.compile(r"^trace: end$")

# Chrome trace identities: one process, one thread per core. tid = core + 1 because Perfetto
# treats tid 0 as the idle task (swapper) of Linux traces.
TRACE_PID = 1


def tid_of(core):
    return core + 1


class TraceError(Exception):
    """The input holds no usable trace."""


@dataclass
class Event:
    core: int
    ts: int
    kind: str
    pid_index: int
    pid_gen: int
    arg: int
    line: int

    @property
    def pid(self):
        return f"<{self.pid_index}.{self.pid_gen}>"


@dataclass
class Trace:
    cores: int
    counter_hz: int
    recorded: dict = field(default_factory=dict)  # core -> header's recorded=
    dropped: dict = field(default_factory=dict)  # core -> header's dropped=
    events: dict = field(default_factory=dict)  # core -> [Event], sorted by time
    warnings: list = field(default_factory=list)
    complete: bool = False  # saw `trace: end`

    def all_events(self):
        return [e for core in sorted(self.events) for e in self.events[core]]


@dataclass
class Slice:
    """A process running on a core, or (pid None) the core idle."""
    core: int
    pid: object  # "<i.g>" or None for idle
    start: int
    end: int
    reason: str = ""
    truncated_start: bool = False  # began before the core's buffer
    open_end: bool = False  # still going when the trace was dumped


@dataclass
class Transfer:
    """A process moved between cores: a steal (pulled by `to_core`) or a push migration."""
    kind: str  # "steal" or "migrate"
    ts: int
    from_core: int
    to_core: int
    pid: str


@dataclass
class QueueSample:
    """A core's run-queue length (runnable processes, all levels), sampled on its tick."""
    core: int
    ts: int
    length: int


@dataclass
class Timeline:
    trace: Trace
    slices: list  # running slices
    idles: list  # idle slices
    instants: list  # Events: spawn, wake, exit, refused
    transfers: list
    origin: int  # earliest timestamp
    last: int  # latest timestamp
    anomalies: list
    samples: list = field(default_factory=list)  # QueueSamples, in time order per core

    def us(self, ticks):
        """Microseconds since the trace's first event."""
        return (ticks - self.origin) * 1e6 / self.trace.counter_hz


def read_lines(source):
    if source == "-":
        return sys.stdin.buffer.read().decode(errors="replace").splitlines()
    return Path(source).read_text(errors="replace").splitlines()


def parse(lines):
    """Finds the last `trace: begin` .. `trace: end` block among console lines."""
    blocks = []
    current = None
    bootarg_ignored = None
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if line.startswith("bootargs: trace") and "ignored" in line:
            bootarg_ignored = line
        if not line.startswith("trace:"):
            continue  # other console output, interleaved or not
        m = BEGIN.match(line)
        if m:
            current = Trace(cores=int(m.group(1)), counter_hz=int(m.group(2)))
            blocks.append(current)
            continue
        if current is None or current.complete:
            continue
        m = EV.match(line)
        if m:
            core, ts, kind, index, gen, arg = m.groups()
            core = int(core)
            if kind not in EVENTS:
                current.warnings.append(f"line {number}: unknown event {kind!r} ignored")
            elif core >= current.cores:
                current.warnings.append(f"line {number}: core {core} >= cores={current.cores}; ignored")
            else:
                current.events.setdefault(core, []).append(
                    Event(core, int(ts), kind, int(index), int(gen), int(arg), number))
            continue
        m = CORE.match(line)
        if m:
            core, recorded, dropped = map(int, m.groups())
            current.recorded[core] = recorded
            current.dropped[core] = dropped
            continue
        if END.match(line):
            current.complete = True
            continue
        if line.startswith("trace: ev "):
            current.warnings.append(f"line {number}: malformed event line ignored: {line[:80]!r}")
        else:  # e.g. "trace: out of memory merging the buffers; core 2 not dumped"
            current.warnings.append(f"line {number}: {line[7:]}")

    if not blocks:
        hint = f" ({bootarg_ignored})" if bootarg_ignored else " (was the kernel booted with trace=on?)"
        raise TraceError(f"no 'trace: begin' line found{hint}")
    trace = blocks[-1]
    if len(blocks) > 1:
        trace.warnings.append(f"{len(blocks)} trace dumps found; using the last")
    if trace.counter_hz <= 0:
        raise TraceError("trace: begin says counter_hz=0; cannot convert ticks to time")
    if not trace.complete:
        trace.warnings.append("no 'trace: end' line: the dump was cut short")
    for core, events in trace.events.items():
        if any(b.ts < a.ts for a, b in zip(events, events[1:])):
            trace.warnings.append(f"core {core}: timestamps not monotonic; events sorted by time")
            events.sort(key=lambda e: e.ts)  # stable: ties keep console order
    # `recorded=` counts what each core's buffer kept; the buffer also holds events about other
    # cores (a wake, a spawn, a migration), so only the totals compare.
    dumped = sum(len(events) for events in trace.events.values())
    if trace.recorded and dumped != sum(trace.recorded.values()):
        trace.warnings.append(f"{dumped} events dumped, the buffers' headers say {sum(trace.recorded.values())}")
    return trace


# Kinds only a core's own scheduler records, in its own ring buffer. A wake or spawn is recorded
# by the core that caused it (its arg), about the core that will run the process; a migrate by
# the rebalancing core.
OWN_KINDS = frozenset(("run", *STOPS, "sleep", "idle_end", "steal", "queue", "refused"))


def from_own_buffer(event):
    """Whether `event` came from the ring buffer of the core it is about."""
    return event.kind in OWN_KINDS or (event.kind in ("wake", "spawn") and event.arg == event.core)


def window_start(events):
    """When a core's own buffer begins: its oldest own record (or its first event of any kind)."""
    return next((e.ts for e in events if from_own_buffer(e)), events[0].ts)


class CoreState:
    """Pairs one core's events into run and idle slices."""

    def __init__(self, core, first, slices, idles, anomalies):
        self.core, self.first = core, first
        self.slices, self.idles, self.anomalies = slices, idles, anomalies
        self.running = None  # Slice being built
        self.idle = None
        self.known = False  # a run/stop/sleep/idle_end seen: what came before is no longer unknown

    def fits(self, e):
        """Whether `e` follows from the current state (used to order events with equal times)."""
        if e.kind == "run" or e.kind == "sleep":
            return self.running is None and self.idle is None
        if e.kind in STOPS:
            return (self.running is not None and self.running.pid == e.pid) or (
                self.running is None and self.idle is None and not self.known)
        if e.kind == "idle_end":
            return self.idle is not None or (self.running is None and not self.known)
        return True

    def note(self, e, what):
        self.anomalies.append(f"core {self.core} line {e.line}: {what}")

    def close_running(self, e, why):
        self.note(e, f"{why} while {self.running.pid} was running; {self.running.pid} closed")
        self.running.end, self.running.reason = e.ts, "unknown"
        self.slices.append(self.running)
        self.running = None

    def apply(self, e):
        if e.kind == "run":
            if self.idle is not None:
                self.note(e, f"run {e.pid} while the core was idle; idle closed")
                self.idle.end = e.ts
                self.idles.append(self.idle)
                self.idle = None
            if self.running is not None:
                self.close_running(e, f"run {e.pid}")
            self.running = Slice(self.core, e.pid, e.ts, e.ts)
            self.known = True
        elif e.kind in STOPS:
            if self.running is not None and self.running.pid == e.pid:
                self.running.end, self.running.reason = e.ts, e.kind
                self.slices.append(self.running)
                self.running = None
            elif self.running is None and not self.known:
                # The buffer began mid-slice: the process ran from before the core's first event.
                self.slices.append(Slice(self.core, e.pid, min(self.first, e.ts), e.ts, e.kind,
                                         truncated_start=True))
            elif e.kind != "exit":  # an exit may end a process that was not running (killed)
                now = self.running.pid if self.running else "nothing"
                self.note(e, f"{e.kind} {e.pid} while {now} was running; ignored")
            self.known = True
        elif e.kind == "sleep":
            if self.running is not None:
                self.close_running(e, "sleep")
            if self.idle is None:
                self.idle = Slice(self.core, None, e.ts, e.ts, "idle")
            else:
                self.note(e, "sleep while already asleep; ignored")
            self.known = True
        elif e.kind == "idle_end":
            if self.idle is not None:
                self.idle.end = e.ts
                self.idles.append(self.idle)
                self.idle = None
            elif not self.known:
                self.idles.append(Slice(self.core, None, min(self.first, e.ts), e.ts, "idle",
                                        truncated_start=True))
            else:
                self.note(e, "idle_end without a sleep; ignored")
            self.known = True

    def finish(self, last):
        if self.running is not None:
            self.running.end, self.running.reason, self.running.open_end = last, "running at end of trace", True
            self.slices.append(self.running)
        if self.idle is not None:
            self.idle.end, self.idle.open_end = last, True
            self.idles.append(self.idle)


def build(trace):
    """Pairs events into slices (run..stop, sleep..idle_end) and collects instants and transfers."""
    every = trace.all_events()
    origin = min((e.ts for e in every), default=0)
    last = max((e.ts for e in every), default=0)
    slices, idles, instants, transfers, anomalies, samples = [], [], [], [], [], []

    for core in sorted(trace.events):
        # Run-queue samples are a counter, not part of the run/idle state: set aside first.
        samples.extend(QueueSample(core, e.ts, e.arg) for e in trace.events[core] if e.kind == "queue")
        events = [e for e in trace.events[core] if e.kind != "queue"]
        state = CoreState(core, window_start(events), slices, idles, anomalies)
        i = 0
        while i < len(events):
            # Events with equal timestamps may come in any order (the kernel's merge of the
            # buffers is not stable): take them in an order the state machine accepts.
            j = i
            while j < len(events) and events[j].ts == events[i].ts:
                j += 1
            group = events[i:j]
            while group:
                e = group.pop(next((k for k, g in enumerate(group) if state.fits(g)), 0))
                state.apply(e)
                if e.kind in ("spawn", "wake", "exit", "refused"):
                    instants.append(e)
                elif e.kind in ("steal", "migrate"):
                    if e.arg >= trace.cores:
                        state.note(e, f"{e.kind} from core {e.arg} >= cores={trace.cores}; ignored")
                    else:
                        transfers.append(Transfer(e.kind, e.ts, e.arg, core, e.pid))
            i = j
        state.finish(last)
    return Timeline(trace, slices, idles, instants, transfers, origin, last, anomalies, samples)


# ---------------------------------------------------------------------------------------------
# Chrome trace event format


def _us(timeline, ticks):
    return round(timeline.us(ticks), 3)


def chrome_trace(timeline):
    """The Chrome trace event JSON object (a dict)."""
    trace = timeline.trace
    meta = [
        {"ph": "M", "name": "process_name", "pid": TRACE_PID, "tid": 0, "args": {"name": "beamcore"}},
        {"ph": "M", "name": "process_sort_index", "pid": TRACE_PID, "tid": 0, "args": {"sort_index": 0}},
    ]
    for core in range(trace.cores):
        meta.append({"ph": "M", "name": "thread_name", "pid": TRACE_PID, "tid": tid_of(core),
                     "args": {"name": f"core {core}"}})
        meta.append({"ph": "M", "name": "thread_sort_index", "pid": TRACE_PID, "tid": tid_of(core),
                     "args": {"sort_index": core}})

    timed = []  # (ts_counts, order, event): sorted by time, ties in insertion order

    def add(ticks, event):
        timed.append((ticks, len(timed), event))

    def base(core, ticks, ph, name, cat):
        return {"ph": ph, "name": name, "cat": cat, "pid": TRACE_PID, "tid": tid_of(core),
                "ts": _us(timeline, ticks)}

    def slice_event(s, name, cat):
        e = base(s.core, s.start, "X", name, cat)
        e["dur"] = round((s.end - s.start) * 1e6 / trace.counter_hz, 3)
        args = {"reason": s.reason}
        if s.truncated_start:
            args["start"] = "before the core's trace buffer began (older events dropped)"
        if s.open_end:
            args["end"] = "still going when the trace was dumped"
        e["args"] = args
        return e

    for s in timeline.slices:
        add(s.start, slice_event(s, s.pid, "run"))
    for s in timeline.idles:
        e = slice_event(s, "idle", "idle")
        e["cname"] = "grey"  # chrome://tracing's reserved colour; Perfetto ignores it
        add(s.start, e)
    # after the slices, so that at equal times it nests inside the first one
    for core in range(trace.cores):
        dropped = trace.dropped.get(core, 0)
        events = trace.events.get(core)
        if dropped and events:
            e = base(core, events[0].ts, "i", f"{dropped} older events dropped", "trace")
            e.update(s="t", args={"dropped": dropped})
            add(events[0].ts, e)

    for e in timeline.instants:
        if e.kind == "refused":
            victim, reason = refusal(e.arg)
            ev = base(e.core, e.ts, "i", f"refused by {victim}: {reason}", e.kind)
            ev.update(s="t", args={"victim_core": victim, "reason": reason})
            add(e.ts, ev)
            continue
        ev = base(e.core, e.ts, "i", f"{e.kind} {e.pid}", e.kind)
        ev["s"] = "t"
        ev["args"] = {"pid": e.pid}
        if e.kind == "spawn":
            ev["args"]["spawning_core"] = e.arg
        elif e.kind == "wake":
            ev["args"]["waker_core"] = e.arg
        add(e.ts, ev)
    for flow_id, t in enumerate(timeline.transfers, 1):
        # An instant on each track at the transfer's time gives the flow's ends a slice to bind
        # to even when the core runs nothing then; each flow event follows its instant.
        verb_from, verb_to = ("stolen", "steal") if t.kind == "steal" else ("migrated", "migrate")
        src = base(t.from_core, t.ts, "i", f"{verb_from} {t.pid}", t.kind)
        src.update(s="t", args={"pid": t.pid, "to_core": t.to_core})
        dst = base(t.to_core, t.ts, "i", f"{verb_to} {t.pid}", t.kind)
        dst.update(s="t", args={"pid": t.pid, "from_core": t.from_core})
        start = base(t.from_core, t.ts, "s", t.kind, t.kind)
        start["id"] = flow_id
        finish = base(t.to_core, t.ts, "f", t.kind, t.kind)
        finish.update(id=flow_id, bp="e")
        for event in (src, start, dst, finish):
            add(t.ts, event)

    # Run-queue lengths: a counter track per core ("ph": "C"; Perfetto keys a counter track by
    # its name within the process, so each core's name makes its own track).
    for q in timeline.samples:
        add(q.ts, {"ph": "C", "name": f"run queue core {q.core}", "cat": "queue", "pid": TRACE_PID,
                   "tid": tid_of(q.core), "ts": _us(timeline, q.ts), "args": {"runnable": q.length}})

    timed.sort(key=lambda item: (item[0], item[1]))
    other = {
        "source": "beamcore trace=on console dump",
        "cores": str(trace.cores),
        "counter_hz": str(trace.counter_hz),
        "time_origin_counts": str(timeline.origin),
        "dropped_per_core": ",".join(str(trace.dropped.get(c, 0)) for c in range(trace.cores)),
        "recorded_per_core": ",".join(str(trace.recorded.get(c, "?")) for c in range(trace.cores)),
        "complete": "yes" if trace.complete else "no (no 'trace: end')",
    }
    return {"traceEvents": meta + [event for _, _, event in timed], "displayTimeUnit": "ns",
            "otherData": other}


# ---------------------------------------------------------------------------------------------
# The timeline picture (matplotlib)


def pid_colour(pid):
    """A stable colour per pid: golden-angle hues, two lightness levels."""
    index, gen = (int(x) for x in pid.strip("<>").split("."))
    hue = ((index * 137.508 + gen * 41.0) % 360.0) / 360.0
    lightness = 0.50 if index % 2 == 0 else 0.62
    r, g, b = colorsys.hls_to_rgb(hue, lightness, 0.62)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def time_unit(span_us):
    if span_us >= 2e6:
        return "s", 1e6
    if span_us >= 2e3:
        return "ms", 1e3
    return "µs", 1.0


STEAL_COLOUR, MIGRATE_COLOUR, IDLE_COLOUR = "#d62728", "#1f5fbf", "#bdbdbd"
ROW_HEIGHT = 0.7  # of the 1.0 between two cores' rows


def timeline_figure(timeline):
    """The timeline as a matplotlib Figure: a row per core (core 0 on top), run slices coloured by
    pid (labelled where wide enough), idle slices grey, hatched before a core's own buffer begins,
    steals (solid red) and push migrations (dashed blue) as arrows from source row to
    destination row. Artists carry gids (`run-core<N>`, `idle-core<N>`, `unrecorded-core<N>`,
    `steal`, `migrate`) so a test can find what was drawn."""
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    trace = timeline.trace
    span_us = max(timeline.us(timeline.last), 1e-9)
    unit, per = time_unit(span_us)

    def x(ticks):
        return timeline.us(ticks) / per

    if timeline.samples:
        # Below the timeline, on the same time axis: each core's run-queue length (a step line
        # per core, from the tick samples).
        fig = Figure(figsize=(14, 3.6 + 0.45 * trace.cores), layout="constrained")
        ax, queues = fig.subplots(2, 1, sharex=True, height_ratios=[1.6 + 0.45 * trace.cores, 2.0])
    else:
        fig = Figure(figsize=(14, 1.6 + 0.45 * trace.cores), layout="constrained")
        ax, queues = fig.add_subplot(), None
    half = ROW_HEIGHT / 2
    for core in range(trace.cores):
        events = trace.events.get(core)
        first = window_start(events) if events else timeline.last
        if first > timeline.origin:
            ax.broken_barh([(0, x(first))], (core - half, ROW_HEIGHT), facecolors="#f4f4f4",
                           edgecolors="#d0d0d0", hatch="///", linewidth=0, gid=f"unrecorded-core{core}")
        idles = [s for s in timeline.idles if s.core == core]
        if idles:
            ax.broken_barh([(x(s.start), x(s.end) - x(s.start)) for s in idles], (core - half, ROW_HEIGHT),
                           facecolors=IDLE_COLOUR, gid=f"idle-core{core}")
        runs = sorted((s for s in timeline.slices if s.core == core), key=lambda s: s.start)
        if runs:
            ax.broken_barh([(x(s.start), x(s.end) - x(s.start)) for s in runs], (core - half, ROW_HEIGHT),
                           facecolors=[pid_colour(s.pid) for s in runs], gid=f"run-core{core}")
        for s in runs:
            if (s.end - s.start) >= (timeline.last - timeline.origin) / 25:  # room for the pid
                ax.text((x(s.start) + x(s.end)) / 2, core, s.pid, ha="center", va="center", fontsize=8,
                        color="white", clip_on=True)

    for kind, colour, style in (("steal", STEAL_COLOUR, "solid"), ("migrate", MIGRATE_COLOUR, "dashed")):
        moves = [t for t in timeline.transfers if t.kind == kind]
        if not moves:
            continue
        # From the source row's centre to just short of the destination's, and a head there.
        segments = [[(x(t.ts), t.from_core), (x(t.ts), t.to_core - 0.15 * (1 if t.to_core > t.from_core else -1))]
                    for t in moves]
        ax.add_collection(LineCollection(segments, colors=colour, linestyles=style, linewidths=1.2, gid=kind))
        for downwards in (True, False):
            heads = [seg[1] for seg, t in zip(segments, moves) if (t.to_core > t.from_core) == downwards]
            if heads:
                ax.scatter(*zip(*heads), marker="v" if downwards else "^", s=12, color=colour, zorder=3)

    ax.set_xlim(0, x(timeline.last))
    ax.set_ylim(trace.cores - 0.5, -0.5)  # core 0 on top
    labels = []
    for core in range(trace.cores):
        dropped = trace.dropped.get(core, 0)
        labels.append(f"core {core}" + (f"\n{dropped} dropped" if dropped else ""))
    ax.set_yticks(range(trace.cores), labels)
    ax.set_xlabel(f"time ({unit}) since the first recorded event")
    ax.grid(axis="x", alpha=0.25)
    ax.set_axisbelow(True)
    steals = sum(t.kind == "steal" for t in timeline.transfers)
    migrations = sum(t.kind == "migrate" for t in timeline.transfers)
    dropped = sum(trace.dropped.get(c, 0) for c in range(trace.cores))
    ax.set_title(f"beamcore scheduling trace: {trace.cores} cores; run slices: {len(timeline.slices)}, "
                 f"steals: {steals}, migrations: {migrations}; events dropped by the ring buffers: {dropped}",
                 fontweight="bold", loc="left")
    ax.legend(handles=[
        Patch(facecolor="#4c9f70", label="process running (colour = pid)"),
        Patch(facecolor=IDLE_COLOUR, label="core idle (sleep .. idle_end)"),
        Patch(facecolor="#f4f4f4", edgecolor="#d0d0d0", hatch="///", label="before the core's oldest kept event"),
        Line2D([], [], color=STEAL_COLOUR, label="steal (victim → thief)"),
        Line2D([], [], color=MIGRATE_COLOUR, linestyle="dashed", label="push migration (source → destination)"),
    ], loc="upper left", bbox_to_anchor=(0, -0.12 - 0.5 / max(trace.cores, 1)), ncols=5, fontsize=8, frameon=False)
    if queues is not None:
        for core in range(trace.cores):
            points = sorted((q.ts, q.length) for q in timeline.samples if q.core == core)
            if points:
                queues.step([x(ts) for ts, _ in points], [n for _, n in points], where="post",
                            label=f"core {core}", gid=f"queue-core{core}")
        queues.set_ylabel("run queue\n(runnable)")
        queues.set_ylim(bottom=0)
        queues.grid(alpha=0.25)
        queues.legend(loc="upper right", fontsize=8, ncols=min(trace.cores, 8))
        queues.set_xlabel(ax.get_xlabel())
    return fig


def write_timeline(timeline, path):
    """Saves the timeline as PNG; returns False (and says why) when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401  (only to tell a missing install apart)
    except ImportError:
        print(f"trace.py: warning: {sys.executable} cannot import matplotlib: {path} not drawn "
              "(`make setup` installs it; scripts/mpl-python.sh prints the Python that has it)", file=sys.stderr)
        return False
    timeline_figure(timeline).savefig(path, dpi=100)
    return True


# ---------------------------------------------------------------------------------------------


def summary(timeline, outputs):
    trace = timeline.trace
    per_core = " ".join(f"c{c}={len(trace.events.get(c, []))}" for c in range(trace.cores))
    steals = sum(t.kind == "steal" for t in timeline.transfers)
    migrations = sum(t.kind == "migrate" for t in timeline.transfers)
    dropped = sum(trace.dropped.get(c, 0) for c in range(trace.cores))
    dropped_cores = ", ".join(f"c{c}={trace.dropped[c]}" for c in sorted(trace.dropped) if trace.dropped[c])
    span_us = (timeline.last - timeline.origin) * 1e6 / trace.counter_hz
    return (f"trace: {trace.cores} cores, events per core {per_core}; {len(timeline.slices)} run slices, "
            f"{steals} steals, {migrations} migrations, {len(timeline.samples)} run-queue samples; dropped {dropped}"
            f"{f' ({dropped_cores})' if dropped_cores else ''}; {span_us:.1f} us; "
            f"wrote {' and '.join(str(o) for o in outputs)}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", help="console log file, or - for stdin")
    parser.add_argument("-o", "--out", default="trace", help="output prefix (writes PREFIX.json and PREFIX.png)")
    args = parser.parse_args(argv)
    try:
        lines = read_lines(args.input)
    except OSError as error:
        sys.exit(f"trace.py: cannot read {args.input}: {error.strerror}")
    try:
        trace = parse(lines)
    except TraceError as error:
        sys.exit(f"trace.py: {args.input}: {error}")
    timeline = build(trace)
    for warning in trace.warnings:
        print(f"trace.py: warning: {warning}", file=sys.stderr)
    if timeline.anomalies:
        shown = timeline.anomalies[:5]
        more = len(timeline.anomalies) - len(shown)
        print(f"trace.py: warning: {len(timeline.anomalies)} events did not pair up: " + "; ".join(shown)
              + (f"; and {more} more" if more > 0 else ""), file=sys.stderr)
    if not trace.events:
        print("trace.py: warning: the trace holds no events", file=sys.stderr)

    prefix = Path(args.out)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    json_path = prefix.with_name(prefix.name + ".json")
    png_path = prefix.with_name(prefix.name + ".png")
    json_path.write_text(json.dumps(chrome_trace(timeline), separators=(",", ":")) + "\n")
    outputs = [json_path] + ([png_path] if write_timeline(timeline, png_path) else [])
    print(summary(timeline, outputs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
