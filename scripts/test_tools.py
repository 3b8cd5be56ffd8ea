#!/usr/bin/env python3
"""Host tests for scripts/trace.py, scripts/plot.py, scripts/bench.py's figures and
scripts/ksyms.py (the kernel's symbol table). The charts are checked as matplotlib draws them
(which bars, series, lines and slices each figure holds), not pixel by pixel.

    python3 scripts/test_tools.py

Under a python3 that cannot import matplotlib it runs itself again under one that can
(scripts/mpl-python.sh: Debian's /usr/bin/python3, where python3-matplotlib is installed).
"""

import importlib.util
import io
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
SVG = "{http://www.w3.org/2000/svg}"

try:
    import matplotlib  # noqa: F401  (plot.py and trace.py draw with it)
except ImportError:
    # Debian's python3-matplotlib is seen only by /usr/bin/python3, and `python3` may be another
    # (pyenv): run the tests under the one that has it rather than fail on the import.
    found = subprocess.run([str(SCRIPTS / "mpl-python.sh")], capture_output=True, text=True).stdout.strip()
    if not found or Path(found).resolve() == Path(sys.executable).resolve():
        sys.exit("test_tools.py: no Python here imports matplotlib; `make setup` installs python3-matplotlib")
    os.execv(found, [found, *sys.argv])


def load(name, file):
    # By path and under another name: `trace` is also a standard-library module.
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


trace_tool = load("beamcore_trace", "trace.py")
plot_tool = load("beamcore_plot", "plot.py")
bench_tool = load("beamcore_bench", "bench.py")
ksyms = load("beamcore_ksyms", "ksyms.py")
dwarf_inline = load("beamcore_dwarf_inline", "dwarf_inline.py")
linker = load("beamcore_link_kallsyms", "link-kallsyms.py")
structure = load("beamcore_check_structure", "check-structure.py")
profile_tool = load("beamcore_profile", "profile.py")
handoff = load("beamcore_check_handoff", "check-handoff.py")
suite_runner = load("beamcore_test_qemu", "test-qemu.py")
sim_policy = load("beamcore_check_sim_policy", "check-sim-policy.py")
calibrate = load("beamcore_sim_calibrate", "sim-calibrate.py")
sim_tool = load("beamcore_sim_figures", "sim.py")
steal_mix = load("beamcore_steal_mix", "steal_mix.py")
qemu_turns = load("beamcore_qemu_turns", "qemu_turns.py")

# Laid out as kernel/sched/record/trace.rs dumps it: every buffer's header, then all events merged in
# time order. counter_hz = 1 MHz: one tick is one microsecond, so times read straight off the log.
# <core> is the core an event is about; a wake or spawn is recorded by the core named in its arg.
# Core 0: runs <5.1> (110..120, yield) then <6.0> (120..200, preempt); at 120 the run of <6.0> is
#   listed before the yield of <5.1> (the kernel's merge is not stable); a push migration of
#   <7.0> from core 1; asleep from 210 to the end.
# Core 1: its buffer dropped 7 events and starts mid-slice: <9.0> blocks at 130 with no run
#   before it, so the slice starts at the oldest event of core 1's own buffer (its own wake of
#   <4.0> at 95), not at the older wake of <3.0> that core 0 recorded about it at 90. It sleeps
#   131..139, steals <5.1> from core 0 at 140 and runs it to its exit.
# Other console lines are interleaved before, inside and after the dump.
LOG = """\
qemu-run: <the QEMU command line> -M virt -cpu cortex-a72 -smp 2 ...
core 0 online el=1 mpidr=0x80000000
core 1 online el=1 mpidr=0x80000001
config: workload=fib trace=on
core      work  turns  local_pops
report: {"workload":"fib","cores":2}
trace: begin cores=2 counter_hz=1000000
trace: core=0 recorded=8 dropped=0
trace: core=1 recorded=8 dropped=7
trace: ev 1 90 wake 3 0 0
trace: ev 1 95 wake 4 0 1
trace: ev 0 100 spawn 5 1 0
trace: ev 0 110 run 5 1 0
core 1 printed this line in the middle of the dump
trace: ev 0 120 run 6 0 0
trace: ev 0 120 yield 5 1 0
trace: ev 1 130 block 9 0 0
trace: ev 1 131 sleep 0 0 0
trace: ev 1 139 idle_end 0 0 0
trace: ev 1 140 steal 5 1 0
trace: ev 1 141 run 5 1 0
trace: ev 1 170 exit 5 1 0
trace: ev 0 200 preempt 6 0 0
trace: ev 0 205 migrate 7 0 1
trace: ev 0 210 sleep 0 0 0
trace: ev 1 230 wake 8 0 1
trace: end
all done, exiting with status 0
"""


def run_trace(log_text, *extra):
    """Runs trace.py as a program on `log_text`; returns (status, stdout, stderr, out prefix)."""
    tmp = Path(tempfile.mkdtemp(prefix="trace-test-"))
    (tmp / "console.log").write_text(log_text)
    prefix = tmp / "out" / "t"
    proc = subprocess.run([sys.executable, str(SCRIPTS / "trace.py"), str(tmp / "console.log"), "-o", str(prefix),
                           *extra], capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr, prefix


class TraceParsing(unittest.TestCase):
    def setUp(self):
        self.trace = trace_tool.parse(LOG.splitlines())
        self.timeline = trace_tool.build(self.trace)

    def test_header_and_events_ignore_other_console_lines(self):
        self.assertEqual(self.trace.cores, 2)
        self.assertEqual(self.trace.counter_hz, 1_000_000)
        self.assertEqual({c: len(e) for c, e in self.trace.events.items()}, {0: 7, 1: 9})
        self.assertEqual(self.trace.recorded, {0: 8, 1: 8})
        self.assertEqual(self.trace.dropped, {0: 0, 1: 7})
        self.assertTrue(self.trace.complete)
        self.assertEqual(self.trace.warnings, [])

    def test_slices_pair_run_with_its_stop(self):
        got = sorted((s.core, s.pid, s.start, s.end, s.reason, s.truncated_start) for s in self.timeline.slices)
        self.assertEqual(got, [
            (0, "<5.1>", 110, 120, "yield", False),
            (0, "<6.0>", 120, 200, "preempt", False),  # the tie at 120 taken in the order that pairs
            (1, "<5.1>", 141, 170, "exit", False),
            (1, "<9.0>", 95, 130, "block", True),  # from the oldest event of core 1's own buffer
        ])
        self.assertEqual(self.timeline.anomalies, [])

    def test_idle_and_transfers(self):
        idles = sorted((s.core, s.start, s.end, s.open_end) for s in self.timeline.idles)
        # core 0 sleeps at 210 and never wakes: open until the trace's last timestamp (230)
        self.assertEqual(idles, [(0, 210, 230, True), (1, 131, 139, False)])
        transfers = [(t.kind, t.ts, t.from_core, t.to_core, t.pid) for t in self.timeline.transfers]
        self.assertEqual(sorted(transfers), [("migrate", 205, 1, 0, "<7.0>"), ("steal", 140, 0, 1, "<5.1>")])

    def test_unpaired_stop_after_a_run_is_reported_not_drawn(self):
        lines = LOG.replace("trace: ev 0 120 run 6 0 0", "trace: ev 0 120 run 3 0 0").splitlines()
        timeline = trace_tool.build(trace_tool.parse(lines))
        pids = sorted(s.pid for s in timeline.slices if s.core == 0)
        # <3.0> never stops (the preempt names <6.0>): it is closed by the sleep, flagged unknown
        self.assertEqual(pids, ["<3.0>", "<5.1>"])
        self.assertTrue(any("preempt <6.0>" in a for a in timeline.anomalies), timeline.anomalies)

    def test_last_dump_wins_and_missing_end_is_a_warning(self):
        lines = ("trace: begin cores=1 counter_hz=10\ntrace: ev 0 1 run 1 0 0\ntrace: end\n"
                 "trace: begin cores=1 counter_hz=20\ntrace: ev 0 2 run 2 0 0\n").splitlines()
        trace = trace_tool.parse(lines)
        self.assertEqual(trace.counter_hz, 20)
        self.assertFalse(trace.complete)
        self.assertTrue(any("using the last" in w for w in trace.warnings))
        self.assertTrue(any("trace: end" in w for w in trace.warnings))

    def test_malformed_and_out_of_range_lines_are_skipped_with_warnings(self):
        lines = LOG.replace("trace: end", "trace: ev 0 300 teleport 1 0 0\ntrace: ev 5 300 run 1 0 0\n"
                            "trace: ev 0 x run\ntrace: end").splitlines()
        trace = trace_tool.parse(lines)
        self.assertEqual(len(trace.events[0]), 7)
        self.assertEqual(len(trace.warnings), 3, trace.warnings)

    def test_totals_not_matching_the_headers_are_a_warning(self):
        trace = trace_tool.parse(LOG.replace("trace: ev 1 230 wake 8 0 1\n", "").splitlines())
        self.assertEqual(trace.warnings, ["15 events dumped, the buffers' headers say 16"])

    def test_kernel_notes_inside_the_dump_are_passed_on(self):
        lines = LOG.replace("trace: end", "trace: out of memory merging the buffers; core 1 not dumped\ntrace: end")
        trace = trace_tool.parse(lines.splitlines())
        self.assertTrue(any("core 1 not dumped" in w for w in trace.warnings), trace.warnings)

    def test_no_begin_is_an_error(self):
        with self.assertRaises(trace_tool.TraceError):
            trace_tool.parse(["core 0 online", "report: {}"])


# A fork-join tree on two cores, every event kept: main <1.0> (on core 0) spawns the root <2.0>
# at 1,000 us; the root spawns <3.0> and <4.0>; <3.0> spawns <5.0>. Core 1 steals <3.0> before it
# ran (a subtree of 2: <3.0> and <5.0>, which it spawns after the steal), then <2.0>, which ran
# and blocked and was woken by a message (what is left of it).
STEAL_LOG = """\
trace: begin cores=2 counter_hz=1000000
trace: core=0 recorded=10 dropped=0
trace: core=1 recorded=9 dropped=0
trace: ev 0 900 run 1 0 0
trace: ev 0 1000 spawn 2 0 0
trace: ev 0 1001 block 1 0 0
trace: ev 0 1002 run 2 0 0
trace: ev 0 1003 spawn 3 0 0
trace: ev 0 1004 spawn 4 0 0
trace: ev 0 1005 block 2 0 0
trace: ev 1 1010 steal 3 0 0
trace: ev 1 1011 run 3 0 0
trace: ev 1 1012 spawn 5 0 1
trace: ev 0 1013 run 4 0 0
trace: ev 0 1014 wake 2 0 0
trace: ev 0 1015 exit 4 0 0
trace: ev 1 1020 exit 3 0 0
trace: ev 1 1030 steal 2 0 0
trace: ev 1 1031 run 2 0 0
trace: ev 1 1032 exit 2 0 0
trace: ev 1 1040 run 5 0 0
trace: ev 1 1041 exit 5 0 0
trace: end
"""


class StealMix(unittest.TestCase):
    def test_fresh_and_resumed_steals_and_their_subtrees(self):
        mix = steal_mix.steal_mix(trace_tool.parse(STEAL_LOG.splitlines()))
        self.assertEqual((mix["steals"], mix["fresh"], mix["ran_before"], mix["unknown"]), (2, 1, 1, 0))
        # <3.0> with <5.0> below it; <2.0> with everything it spawned (<3.0>, <4.0>, <5.0>).
        self.assertEqual(mix["subtree_mean"], 3.0)
        first = mix["first"][0]
        self.assertEqual((first["thief"], first["victim"], first["subtree"]), (1, 0, 2))
        self.assertAlmostEqual(first["after_root_us"], 10.0)

    def test_a_trace_that_dropped_events_is_refused(self):
        log = STEAL_LOG.replace("trace: core=1 recorded=9 dropped=0", "trace: core=1 recorded=9 dropped=3")
        with self.assertRaises(steal_mix.Incomplete):
            steal_mix.steal_mix(trace_tool.parse(log.splitlines()))


# A `-d exec,nochain,in_asm` log: two blocks translated (3 and 2 instructions), then vCPU 0 runs
# the first twice, vCPU 1 the second once, vCPU 0 the second once.
EXEC_LOG = """IN: loop
0x40001000:  d2800000  movz     x0, #0
0x40001004:  91000400  add      x0, x0, #1
0x40001008:  17fffffe  b        #0x40001000

Trace 0: 0x7f0000000100 [00000000/0000000040001000/00000000/ff200000] loop
Trace 0: 0x7f0000000100 [00000000/0000000040001000/00000000/ff200000] loop
IN: idle
0x40002000:  d503207f  wfi
0x40002004:  17ffffff  b        #0x40002000

Trace 1: 0x7f0000000200 [00000000/0000000040002000/00000000/ff200000] idle
Trace 0: 0x7f0000000200 [00000000/0000000040002000/00000000/ff200000] idle
"""


class QemuTurns(unittest.TestCase):
    def test_turns_are_runs_of_one_vcpu_counted_in_instructions(self):
        turns = qemu_turns.parse_exec_log(EXEC_LOG.splitlines(keepends=True))
        self.assertEqual(turns, [(0, 0, 6, 2), (6, 1, 2, 1), (8, 0, 2, 1)])

    def test_a_block_translated_shorter_at_a_turns_end_leaves_the_full_one_its_size(self):
        # Under -icount a turn's budget ending inside a block makes QEMU translate a shorter
        # one at the same pc (a new host pointer); the full block, still cached, runs again.
        log = """IN: loop
0x40001000:  d2800000  movz     x0, #0
0x40001004:  91000400  add      x0, x0, #1
0x40001008:  17fffffe  b        #0x40001000

Trace 0: 0x7f0000000100 [00000000/0000000040001000/00000000/ff200000] loop
IN: loop
0x40001000:  d2800000  movz     x0, #0

Trace 0: 0x7f0000000300 [00000000/0000000040001000/00000000/ff200001] loop
Trace 1: 0x7f0000000100 [00000000/0000000040001000/00000000/ff200000] loop
"""
        turns = qemu_turns.parse_exec_log(log.splitlines(keepends=True))
        self.assertEqual(turns, [(0, 0, 4, 2), (4, 1, 3, 1)])

    def test_marks_are_found_inside_blocks_and_counted_in_their_vcpus_instructions(self):
        events = qemu_turns.marked(EXEC_LOG.splitlines(keepends=True), {0x40001004: "add", 0x40002000: "wfi"})
        # vCPU 0: the loop twice (the add is its second instruction), then the idle block;
        # vCPU 1: the idle block first.
        self.assertEqual(events, [(0, "add", 1), (0, "add", 4), (1, "wfi", 0), (0, "wfi", 6)])

    def test_tick_costs_tell_a_returning_tick_from_one_that_ends_the_slice(self):
        def returning(at, cost):
            return [(0, "irq", at), (0, "tick", at + 20), (0, "eret", at + cost - 1)]

        def switching(at, cost):
            return [(0, "irq", at), (0, "tick", at + 20), (0, "eret", at + 500),
                    (0, "to_scheduler", at + 501), (0, "resumed", at + cost)]
        events = returning(0, 369) + returning(1000, 369) + switching(2000, 818) + returning(5000, 400)
        events += switching(9000, 818) + switching(12000, 1469) + [(0, "irq", 20000), (0, "eret", 20100)]
        self.assertEqual(qemu_turns.tick_costs(events),
                         {"returning": 369, "returning_count": 3, "switching": 818, "switching_count": 3})

    def test_the_summary_counts_each_vcpu_in_a_window(self):
        turns = [(0, 0, 6, 2), (6, 1, 2, 1), (8, 0, 2, 1)]
        self.assertEqual(qemu_turns.summary(turns)[0], {"turns": 2, "instructions": 8, "median": 6})
        self.assertEqual(list(qemu_turns.summary(turns, 5, 8)), [1])


class TraceChromeJson(unittest.TestCase):
    def setUp(self):
        status, self.stdout, self.stderr, prefix = run_trace(LOG)
        self.assertEqual(status, 0, self.stderr)
        self.doc = json.loads(prefix.with_name("t.json").read_text())
        self.png_path = prefix.with_name("t.png")
        self.events = self.doc["traceEvents"]

    def tid_of_core(self):
        return {e["args"]["name"]: e["tid"] for e in self.events if e["ph"] == "M" and e["name"] == "thread_name"}

    def test_one_process_one_track_per_core(self):
        names = [e for e in self.events if e["ph"] == "M" and e["name"] == "process_name"]
        self.assertEqual([e["args"]["name"] for e in names], ["beamcore"])
        tracks = self.tid_of_core()
        self.assertEqual(set(tracks), {"core 0", "core 1"})
        self.assertEqual(len(set(tracks.values())), 2)
        self.assertEqual({e["pid"] for e in self.events}, {names[0]["pid"]})

    def test_run_slices_count_durations_and_reasons(self):
        tracks = self.tid_of_core()
        slices = sorted((e["tid"], e["name"], e["ts"], e["dur"], e["args"]["reason"])
                        for e in self.events if e["ph"] == "X" and e["name"] != "idle")
        # ts in microseconds from the first event (the wake at tick 90)
        c0, c1 = tracks["core 0"], tracks["core 1"]
        self.assertEqual(slices, sorted([
            (c0, "<5.1>", 20.0, 10.0, "yield"),
            (c0, "<6.0>", 30.0, 80.0, "preempt"),
            (c1, "<9.0>", 5.0, 35.0, "block"),
            (c1, "<5.1>", 51.0, 29.0, "exit"),
        ]))
        idle = sorted((e["tid"], e["ts"], e["dur"]) for e in self.events if e["ph"] == "X" and e["name"] == "idle")
        self.assertEqual(idle, sorted([(c0, 120.0, 20.0), (c1, 41.0, 8.0)]))

    def test_instants_for_spawn_wake_exit(self):
        instants = sorted(e["name"] for e in self.events if e["ph"] == "i" and e["cat"] in ("spawn", "wake", "exit"))
        self.assertEqual(instants, ["exit <5.1>", "spawn <5.1>", "wake <3.0>", "wake <4.0>", "wake <8.0>"])

    def test_flow_arrows_pair_victim_to_thief_at_the_steal_time(self):
        tracks = self.tid_of_core()
        flows = {}
        for e in self.events:
            if e["ph"] in ("s", "f"):
                flows.setdefault((e["cat"], e["id"]), {})[e["ph"]] = e
        self.assertEqual(len(flows), 2)
        by_kind = {cat: pair for (cat, _), pair in flows.items()}
        steal, migrate = by_kind["steal"], by_kind["migrate"]
        self.assertEqual((steal["s"]["tid"], steal["f"]["tid"]), (tracks["core 0"], tracks["core 1"]))
        self.assertEqual(steal["s"]["ts"], 50.0)
        self.assertEqual(steal["f"]["ts"], 50.0)
        self.assertEqual(steal["f"].get("bp"), "e")
        self.assertEqual(steal["s"]["name"], steal["f"]["name"])
        self.assertEqual((migrate["s"]["tid"], migrate["f"]["tid"]), (tracks["core 1"], tracks["core 0"]))
        self.assertEqual(migrate["s"]["ts"], 115.0)
        # each end of each arrow has a slice (an instant) on its track at that time to bind to,
        # placed before the flow event
        for pair in (steal, migrate):
            for end in pair.values():
                index = self.events.index(end)
                anchors = [e for e in self.events[:index] if e["ph"] in ("i", "X") and e["tid"] == end["tid"]
                           and e["ts"] <= end["ts"] <= e["ts"] + e.get("dur", 0)]
                self.assertTrue(anchors, f"no slice to bind {end}")

    def test_events_sorted_and_dropped_counts_recorded(self):
        timed = [e["ts"] for e in self.events if e["ph"] != "M"]
        self.assertEqual(timed, sorted(timed))
        self.assertEqual(self.doc["otherData"]["dropped_per_core"], "0,7")
        self.assertTrue(any(e["ph"] == "i" and e["name"] == "7 older events dropped" for e in self.events))

    def test_summary_line(self):
        lines = self.stdout.strip().splitlines()
        self.assertEqual(len(lines), 1, self.stdout)
        self.assertIn("c0=7 c1=9", lines[0])
        self.assertIn("1 steals", lines[0])
        self.assertIn("1 migrations", lines[0])
        self.assertIn("dropped 7", lines[0])

    def test_the_timeline_picture_is_written(self):
        self.assertEqual(self.png_path.read_bytes()[:8], b"\x89PNG\r\n\x1a\n")
        self.assertIn(str(self.png_path), self.stdout)


# Run-queue samples (`queue` events, taken on each core's tick; arg = runnable processes) among
# process events: a counter track per core in the Perfetto JSON and a step line per core below
# the timeline, never part of the run/idle pairing.
QUEUE_LOG = """\
trace: begin cores=2 counter_hz=1000000
trace: core=0 recorded=5 dropped=0
trace: core=1 recorded=3 dropped=0
trace: ev 0 100 queue 0 0 3
trace: ev 0 110 run 5 1 0
trace: ev 1 120 queue 0 0 0
trace: ev 0 150 yield 5 1 0
trace: ev 1 160 run 6 0 0
trace: ev 0 200 queue 0 0 2
trace: ev 1 220 queue 0 0 1
trace: ev 0 300 queue 0 0 0
trace: end
"""


class TraceQueueSamples(unittest.TestCase):
    def setUp(self):
        self.trace = trace_tool.parse(QUEUE_LOG.splitlines())
        self.timeline = trace_tool.build(self.trace)

    def test_samples_are_kept_apart_from_the_slices(self):
        self.assertEqual(self.trace.warnings, [])
        self.assertEqual([(q.core, q.ts, q.length) for q in self.timeline.samples],
                         [(0, 100, 3), (0, 200, 2), (0, 300, 0), (1, 120, 0), (1, 220, 1)])
        self.assertEqual(self.timeline.anomalies, [])
        runs = sorted((s.core, s.pid, s.start, s.end) for s in self.timeline.slices)
        self.assertEqual(runs, [(0, "<5.1>", 110, 150), (1, "<6.0>", 160, 300)])

    def test_one_counter_track_per_core_in_the_chrome_trace(self):
        doc = trace_tool.chrome_trace(self.timeline)
        counters = [e for e in doc["traceEvents"] if e["ph"] == "C"]
        by_track = {}
        for e in counters:
            by_track.setdefault(e["name"], []).append((e["ts"], e["args"]["runnable"]))
        self.assertEqual(by_track, {"run queue core 0": [(0.0, 3), (100.0, 2), (200.0, 0)],
                                    "run queue core 1": [(20.0, 0), (120.0, 1)]})
        self.assertEqual({e["pid"] for e in counters}, {trace_tool.TRACE_PID})
        timed = [e["ts"] for e in doc["traceEvents"] if e["ph"] != "M"]
        self.assertEqual(timed, sorted(timed))

    def test_the_timeline_draws_a_step_line_per_core(self):
        fig = trace_tool.timeline_figure(self.timeline)
        self.assertEqual(len(fig.axes), 2, "the timeline, and the run-queue panel below it")
        lines = {line.get_gid(): line for line in fig.axes[1].get_lines()}
        self.assertEqual(set(lines), {"queue-core0", "queue-core1"})
        core0 = lines["queue-core0"]
        self.assertEqual([round(float(v), 3) for v in core0.get_xdata()], [0.0, 100.0, 200.0])
        self.assertEqual(list(core0.get_ydata()), [3, 2, 0])
        self.assertEqual(list(lines["queue-core1"].get_ydata()), [0, 1])

    def test_no_samples_no_panel(self):
        fig = trace_tool.timeline_figure(trace_tool.build(trace_tool.parse(LOG.splitlines())))
        self.assertEqual(len(fig.axes), 1)


REFUSED_LOG = """\
trace: begin cores=3 counter_hz=1000000
trace: core=0 recorded=2 dropped=0
trace: core=1 recorded=5 dropped=0
trace: ev 1 90 sleep 0 0 0
trace: ev 1 100 idle_end 0 0 0
trace: ev 1 105 refused 0 0 2
trace: ev 1 110 refused 0 0 65536
trace: ev 1 115 refused 0 0 131074
trace: ev 0 120 run 5 1 0
trace: ev 0 150 yield 5 1 0
trace: end
"""


class TraceRefusedAttempts(unittest.TestCase):
    """A steal attempt a rule refused (`refused`, the kernel's `Event::Refused`): an instant on
    the thief's track naming the victim and the reason, and no change to the run/idle state."""

    def setUp(self):
        self.trace = trace_tool.parse(REFUSED_LOG.splitlines())
        self.timeline = trace_tool.build(self.trace)

    def test_arg_holds_the_victim_and_the_reason(self):
        self.assertEqual(trace_tool.refusal(2), (2, "empty"))
        self.assertEqual(trace_tool.refusal(65536), (0, "below_threshold"))
        self.assertEqual(trace_tool.refusal(131074), (2, "cooldown"))
        self.assertEqual(trace_tool.refusal(4 << 16 | 7), (7, "not_allowed"))
        self.assertEqual(trace_tool.refusal(9 << 16 | 1), (1, "refusal 9"))

    def test_refusals_are_instants_and_leave_the_slices_alone(self):
        self.assertEqual(self.trace.warnings, [])
        self.assertEqual(self.timeline.anomalies, [])
        self.assertEqual([(e.core, e.ts) for e in self.timeline.instants if e.kind == "refused"],
                         [(1, 105), (1, 110), (1, 115)])
        self.assertEqual([(s.core, s.start, s.end) for s in self.timeline.slices], [(0, 120, 150)])
        self.assertEqual([(s.core, s.start, s.end) for s in self.timeline.idles], [(1, 90, 100)])

    def test_chrome_trace_names_victim_and_reason(self):
        doc = trace_tool.chrome_trace(self.timeline)
        refused = [e for e in doc["traceEvents"] if e.get("cat") == "refused"]
        self.assertEqual([(e["tid"], e["args"]) for e in refused], [
            (trace_tool.tid_of(1), {"victim_core": 2, "reason": "empty"}),
            (trace_tool.tid_of(1), {"victim_core": 0, "reason": "below_threshold"}),
            (trace_tool.tid_of(1), {"victim_core": 2, "reason": "cooldown"}),
        ])
        self.assertEqual(refused[0]["name"], "refused by 2: empty")


class TraceTimelinePicture(unittest.TestCase):
    """What the matplotlib timeline shows, read back from its artists (times in µs from 90)."""

    def setUp(self):
        self.fig = trace_tool.timeline_figure(trace_tool.build(trace_tool.parse(LOG.splitlines())))
        self.ax = self.fig.axes[0]

    def boxes(self, gid):
        """(x0, x1, row) of each bar of the collection `gid`, or [] if there is none."""
        found = [c for c in self.ax.collections if c.get_gid() == gid]
        out = []
        for collection in found:
            for path in collection.get_paths():
                xs, ys = path.vertices[:, 0], path.vertices[:, 1]
                out.append((round(float(xs.min()), 3), round(float(xs.max()), 3), round(float(ys.mean()))))
        return sorted(out)

    def test_one_row_per_core_with_its_dropped_count(self):
        labels = [t.get_text() for t in self.ax.get_yticklabels()]
        self.assertEqual(labels, ["core 0", "core 1\n7 dropped"])
        self.assertIn("events dropped by the ring buffers: 7", self.ax.get_title(loc="left"))

    def test_run_and_idle_slices_in_place(self):
        self.assertEqual(self.boxes("run-core0"), [(20.0, 30.0, 0), (30.0, 110.0, 0)])
        self.assertEqual(self.boxes("run-core1"), [(5.0, 40.0, 1), (51.0, 80.0, 1)])
        # core 0 sleeps at 210 ticks and never wakes: open to the trace's end (230 = 140 us)
        self.assertEqual(self.boxes("idle-core0"), [(120.0, 140.0, 0)])
        self.assertEqual(self.boxes("idle-core1"), [(41.0, 49.0, 1)])
        colours = [c for c in self.ax.collections if c.get_gid() == "run-core0"][0].get_facecolors()
        self.assertEqual(len(colours), 2, "one colour per slice")
        self.assertFalse((colours[0] == colours[1]).all(), "pids <5.1> and <6.0> coloured apart")

    def test_before_each_buffer_is_hatched(self):
        # core 0's own buffer begins at 100 ticks, core 1's at 95
        self.assertEqual(self.boxes("unrecorded-core0"), [(0.0, 10.0, 0)])
        self.assertEqual(self.boxes("unrecorded-core1"), [(0.0, 5.0, 1)])

    def test_transfers_are_arrows_from_source_row_to_destination_row(self):
        def segments(gid):
            [collection] = [c for c in self.ax.collections if c.get_gid() == gid]
            return [[tuple(round(float(v), 2) for v in point) for point in seg] for seg in collection.get_segments()]

        steal, migrate = segments("steal"), segments("migrate")
        self.assertEqual(len(steal), 1)
        self.assertEqual(steal[0][0], (50.0, 0.0))  # from core 0 (the victim) at 140 ticks ...
        self.assertEqual(steal[0][1][0], 50.0)
        self.assertGreater(steal[0][1][1], 0.5)  # ... down to core 1's row
        self.assertEqual(migrate[0][0], (115.0, 1.0))  # from core 1 up to core 0
        self.assertLess(migrate[0][1][1], 0.5)

    def test_x_axis_in_microseconds_over_the_whole_trace(self):
        self.assertEqual(self.ax.get_xlim(), (0.0, 140.0))
        self.assertIn("µs", self.ax.get_xlabel())


class TraceCommandLine(unittest.TestCase):
    def test_reads_stdin_and_defaults_the_prefix_to_trace(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run([sys.executable, str(SCRIPTS / "trace.py"), "-"], input=LOG, text=True,
                                  capture_output=True, cwd=tmp)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertTrue((Path(tmp) / "trace.json").exists())
            self.assertTrue((Path(tmp) / "trace.png").exists())

    def test_fails_clearly_without_a_trace(self):
        status, stdout, stderr, prefix = run_trace("core 0 online\nreport: {}\n")
        self.assertNotEqual(status, 0)
        self.assertIn("no 'trace: begin'", stderr)
        self.assertFalse(prefix.with_name("t.json").exists())

    def test_names_an_ignored_bootarg(self):
        status, _, stderr, _ = run_trace("bootargs: trace=on ignored: unknown key\nreport: {}\n")
        self.assertNotEqual(status, 0)
        self.assertIn("bootargs: trace=on ignored", stderr)

    def test_in_process_main_matches(self):
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "c.log"
            log.write_text(LOG)
            out = io.StringIO()
            with redirect_stdout(out), redirect_stderr(io.StringIO()):
                self.assertEqual(trace_tool.main([str(log), "-o", str(Path(tmp) / "x")]), 0)
            self.assertIn("4 run slices", out.getvalue())


# ---------------------------------------------------------------------------------------------

def figure(value, unit):
    return {"value": value, "unit": unit, "command": "synthetic", "suite": "test"}


def synthetic_results():
    r = {
        "deque.asm.push": figure(22, "insns"), "deque.asm.pop": figure(25, "insns"),
        "deque.asm.steal": figure(27, "insns"), "deque.portable.push": figure(44, "insns"),
        "deque.portable.pop": figure(26, "insns"), "deque.portable.steal": figure(29, "insns"),
        "deque.loop_overhead": figure(3.0, "insns"),
        "deque.host.ours_over_crossbeam": figure(2.4, "ratio"),
        "sched.yield": figure(335, "insns"), "sched.message_hop": figure(737, "insns"),
        "sched.spawn_exit": figure(1359, "insns"), "sched.control_block": figure(352, "bytes"),
    }
    for strategy, works in (("load", [100, 200, 300, 400]), ("p2c", [250, 250, 250, 250])):
        for core, work in enumerate(works):
            r[f"balance.imbalanced.{strategy}.4cores.work.core{core}"] = figure(work, "units")
        r[f"balance.imbalanced.{strategy}.4cores.max_over_mean"] = figure(max(works) / (sum(works) / 4), "ratio")
        r[f"balance.imbalanced.{strategy}.4cores.steals"] = figure(12, "count")
    r["balance.imbalanced.load.8cores.max_over_mean"] = figure(1.3, "ratio")
    for k in range(10):
        r[f"balance.imbalanced.load.4cores.latency.b{k}"] = figure(k * 2, "steals")
        r[f"balance.imbalanced.load.8cores.latency.b{k}"] = figure(0, "steals")  # no steal: no chart
    # one core: nothing to balance, left out of every balance chart
    r["balance.imbalanced.load.1cores.work.core0"] = figure(1000, "units")
    r["balance.imbalanced.load.1cores.max_over_mean"] = figure(1.0, "ratio")
    r["balance.imbalanced.load.1cores.latency.b0"] = figure(0, "steals")
    # default against peers (scripts/bench.py's policies)
    for policy, speedups in (("default", {"fib": 3.5, "nqueens": 2.2}), ("peers", {"fib": 3.8, "nqueens": 3.1})):
        for workload, speedup in speedups.items():
            r[f"balance.{workload}.{policy}.4cores.speedup"] = figure(speedup, "x")
            r[f"balance.{workload}.{policy}.1cores.speedup"] = figure(1.0, "x")
    # the granularity sweep
    for size, efficiencies in ((1, (0.3, 0.2, 0.25)), (1000, (0.95, 0.9, 0.97))):
        one, default, peers = efficiencies
        r[f"grain.{size}us.1cores.efficiency"] = figure(one, "ratio")
        r[f"grain.{size}us.4cores.efficiency"] = figure(default, "ratio")
        r[f"grain.{size}us.4cores.peers.efficiency"] = figure(peers, "ratio")
        r[f"grain.{size}us.4cores.speedup"] = figure(4 * default, "x")
    return r


def bars(ax):
    """{(group label, series): height} of the grouped bars on `ax` (no entry where a bar is absent)."""
    groups = [t.get_text() for t in ax.get_xticklabels()]
    return {(groups[i], container.get_label()): float(v) for container in ax.containers
            for i, v in enumerate(container.datavalues) if not math.isnan(v)}


def lines(ax, gid):
    """The y of each horizontal line with gid `gid` on `ax`."""
    ys = [float(line.get_ydata()[0]) for line in ax.get_lines() if line.get_gid() == gid]
    ys += [float(seg[0][1]) for c in ax.collections if c.get_gid() == gid for seg in c.get_segments()]
    return ys


class Plots(unittest.TestCase):
    """The charts as plot.py builds them from a small results file: which files, and in each the
    groups, series and values drawn."""

    @classmethod
    def setUpClass(cls):
        charts, cls.skipped = plot_tool.render(synthetic_results())
        cls.charts = dict(charts)

    def axes(self, name):
        return self.charts[name].axes

    def test_every_chart_is_written_as_svg(self):
        tmp = Path(tempfile.mkdtemp(prefix="plot-test-"))
        (tmp / "results.json").write_text(json.dumps(synthetic_results()))
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(plot_tool.main(["--results", str(tmp / "results.json"), "--out", str(tmp / "plots")]), 0)
        written = sorted(p.name for p in (tmp / "plots").iterdir())
        self.assertEqual(written, ["grain_efficiency.svg", "hot_ops.svg", "max_over_mean_imbalanced.svg",
                                   "speedup_policies_4cores.svg", "steal_latency_imbalanced_4cores.svg",
                                   "work_imbalanced_4cores.svg"])
        for name in written:
            self.assertIn(name, out.getvalue())
            root = ET.parse(tmp / "plots" / name).getroot()  # raises if not well-formed
            self.assertEqual(root.tag, f"{SVG}svg")
        # the same figures give the same files (no date, fixed ids): a commit shows only changes
        first = (tmp / "plots" / "hot_ops.svg").read_bytes()
        with redirect_stdout(io.StringIO()):
            plot_tool.main(["--results", str(tmp / "results.json"), "--out", str(tmp / "again")])
        self.assertEqual((tmp / "again" / "hot_ops.svg").read_bytes(), first)

    def test_hot_ops_deque_and_scheduler_panels(self):
        deque, sched = self.axes("hot_ops.svg")
        asm, portable = plot_tool.DEQUE_LABELS["asm"], plot_tool.DEQUE_LABELS["portable"]
        self.assertEqual(bars(deque), {("push", asm): 22, ("pop", asm): 25, ("steal", asm): 27,
                                       ("push", portable): 44, ("pop", portable): 26, ("steal", portable): 29})
        label = plot_tool.SCHED_LABELS
        self.assertEqual(bars(sched), {(label["yield"], "beamcore scheduler"): 335,
                                       (label["message_hop"], "beamcore scheduler"): 737,
                                       (label["spawn_exit"], "beamcore scheduler"): 1359})
        self.assertEqual(deque.get_ylabel(), "instructions per operation (insns)")

    def test_traced_scheduler_figures_are_a_second_series(self):
        results = synthetic_results()
        results["sched.yield.traced"] = figure(400, "insns")
        results["sched.spawn_exit.traced"] = figure(1500, "insns")
        charts, _ = plot_tool.render(results)
        sched = dict(charts)["hot_ops.svg"].axes[1]
        got = bars(sched)
        label = plot_tool.SCHED_LABELS
        self.assertEqual(got[(label["yield"], "trace=off")], 335)
        self.assertEqual(got[(label["yield"], plot_tool.TRACED)], 400)
        self.assertEqual(got[(label["spawn_exit"], plot_tool.TRACED)], 1500)
        self.assertNotIn((label["message_hop"], plot_tool.TRACED), got)

    def test_work_per_core_groups_by_strategy_bars_by_core(self):
        [ax] = self.axes("work_imbalanced_4cores.svg")
        got = bars(ax)
        self.assertEqual(len(got), 8)
        self.assertEqual(got[("load", "core 3")], 400)
        self.assertEqual(got[("p2c", "core 0")], 250)
        self.assertEqual([t.get_text() for t in ax.get_xticklabels()], ["load", "p2c"], "strategy order")
        self.assertEqual(sorted(lines(ax, "mean")), [250.0, 250.0])
        self.assertEqual((ax.get_ylabel(), ax.get_xlabel()), ("work done (units)", "victim-selection strategy"))

    def test_max_over_mean_by_strategy_and_core_count(self):
        [ax] = self.axes("max_over_mean_imbalanced.svg")
        self.assertEqual(bars(ax), {("load", "4 cores"): 1.6, ("p2c", "4 cores"): 1.0, ("load", "8 cores"): 1.3})
        self.assertEqual(lines(ax, "ref"), [1.0])

    def test_policies_side_by_side_per_workload(self):
        [ax] = self.axes("speedup_policies_4cores.svg")
        self.assertEqual(bars(ax), {("fib", "default"): 3.5, ("fib", "peers"): 3.8,
                                    ("nqueens", "default"): 2.2, ("nqueens", "peers"): 3.1})
        self.assertEqual(lines(ax, "ref"), [4.0])
        self.assertNotIn("speedup_policies_1cores.svg", self.charts, "one core: nothing to compare")

    def test_grain_efficiency_by_task_size(self):
        [ax] = self.axes("grain_efficiency.svg")
        self.assertEqual(bars(ax), {("1 µs", "1 core, default"): 0.3, ("1 µs", "4 cores, default"): 0.2,
                                    ("1 µs", "4 cores, peers"): 0.25, ("1000 µs", "1 core, default"): 0.95,
                                    ("1000 µs", "4 cores, default"): 0.9, ("1000 µs", "4 cores, peers"): 0.97})

    def test_latency_histogram_has_ten_labelled_buckets(self):
        [ax] = self.axes("steal_latency_imbalanced_4cores.svg")
        got = bars(ax)
        self.assertEqual(len(got), 10)
        self.assertEqual(got[("≥32768", "load")], 18)
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        self.assertEqual((ticks[0], ticks[8], ticks[9]), ("<128", "<32768", "≥32768"))
        self.assertNotIn("steal_latency_imbalanced_8cores.svg", self.charts, "no steal: no histogram")

    def test_absent_data_skips_charts_and_says_so(self):
        only_sched = {k: v for k, v in synthetic_results().items() if k.startswith("sched.")}
        charts, skipped = plot_tool.render(only_sched)
        self.assertEqual([name for name, _ in charts], ["hot_ops.svg"])
        [sched] = dict(charts)["hot_ops.svg"].axes  # no deque panel
        self.assertEqual(len(bars(sched)), 3)
        notes = " | ".join(skipped)
        for chart in ("work_*.svg", "steal_latency_*.svg", "speedup_policies_*.svg", "grain_efficiency.svg"):
            self.assertIn(chart, notes)


def grain_report(works, elapsed_ns, tasks=120):
    per_core = [{"core": i, "work": w} for i, w in enumerate(works)]
    data = {"ok": True, "per_core": per_core, "grain_tasks": tasks, "grain_ns": 1_000_000, "grain_elapsed_ns": elapsed_ns}
    return "boot\nreport: " + json.dumps(data) + "\n"


class BenchFigures(unittest.TestCase):
    def test_grain_speedup_is_the_lower_of_the_balance_and_instruction_bounds(self):
        # Even balance, but four times the work in instructions: the instruction bound wins.
        f = bench_tool.grain_figures(4, 1, "default", grain_report([30, 30, 30, 30], 120))
        self.assertEqual(f["grain.1us.4cores.balance_speedup"][0], 4.0)
        self.assertEqual(f["grain.1us.4cores.overhead"][0], 1.0)
        self.assertEqual(f["grain.1us.4cores.speedup"][0], 4.0)
        f = bench_tool.grain_figures(4, 1, "default", grain_report([30, 30, 30, 30], 480))
        self.assertEqual(f["grain.1us.4cores.speedup"][0], 1.0)
        self.assertEqual(f["grain.1us.4cores.efficiency"][0], 0.25)
        # Little overhead, but core 0 did most: the balance bound wins; peers get a suffix.
        f = bench_tool.grain_figures(4, 1000, "peers", grain_report([90, 10, 10, 10], 130))
        self.assertEqual(f["grain.1000us.4cores.peers.speedup"][0], round(120 / 90, 3))
        self.assertEqual(f["grain.1000us.4cores.peers.core0_share"][0], 0.75)
        self.assertIsNone(bench_tool.grain_figures(4, 1, "default", "no report"))

    def test_idle_with_work_is_the_largest_share_of_any_core(self):
        cores = [{"core": c, "work": 10, "steals": 0, "steal_attempts": 0, "migrated_in": 0,
                  "idle_with_work_us": idle, "steal_latency_buckets": [0],
                  **{f"fail_{cause}": 0 for cause in ["empty", "below_threshold", "cooldown", "migration_limit",
                                                      "lost_race"]}}
                 for c, idle in enumerate([0, 30, 5, 0])]
        report = {"per_core": cores, "work_max_over_mean": 1.0, "max_migrations_seen": 0, "elapsed_us": 1000}
        f = bench_tool.balance_figures(4, "fib", "default", "report: " + json.dumps(report))
        self.assertEqual(f["balance.fib.default.4cores.idle_with_work_max_share"][0], 0.03)
        self.assertEqual(f["balance.fib.default.4cores.idle_with_work_us.max"][0], 30)

    def test_seeded_runs_fold_into_a_mean_per_policy(self):
        results = {}
        for policy, speedups in (("default", [2.0, 3.0, 4.0]), ("peers", [3.0, 3.0, 3.0])):
            for seed, value in zip(bench_tool.SEEDS, speedups):
                results[f"balance.fib.{policy}.seed{seed}.4cores.speedup"] = {**figure(value, "x"), "command": f"c{seed}"}
        bench_tool.add_seed_means(results)
        self.assertEqual(results["balance.fib.default.4cores.speedup_seed_mean"]["value"], 3.0)
        self.assertEqual(results["balance.fib.default.4cores.speedup_seed_min"]["value"], 2.0)
        self.assertEqual(results["balance.fib.peers.4cores.speedup_seed_max"]["value"], 3.0)
        self.assertNotIn("balance.fib.default.8cores.speedup_seed_mean", results, "no seeded 8-core runs")
        fib = next(line for line in bench_tool.seed_table(results) if line.startswith("| fib "))
        self.assertIn("3.00 (2.00-4.00) | 3.00 (3.00-3.00)", fib)

    def test_tables_put_policies_and_task_sizes_side_by_side(self):
        results = {"balance.fib.default.4cores.speedup": figure(3.2, "x"),
                   "balance.fib.peers.4cores.speedup": figure(3.6, "x"),
                   "grain.10us.4cores.speedup": figure(2.0, "x"), "grain.10us.4cores.efficiency": figure(0.5, "ratio")}
        fib = next(line for line in bench_tool.policy_table(results) if line.startswith("| fib "))
        self.assertIn("3.20 / 3.60", fib)
        ten = next(line for line in bench_tool.grain_table(results) if line.startswith("| 10 µs"))
        self.assertIn("2.00 (0.50)", ten)


def criterion_estimate(root, pattern, impl, median_ns, items=1024):
    """What criterion writes for one benchmark: new/estimates.json and new/benchmark.json."""
    new = Path(root) / pattern / impl / "new"
    new.mkdir(parents=True)
    point = {"confidence_interval": {"confidence_level": 0.95, "lower_bound": 0, "upper_bound": 0},
             "point_estimate": median_ns, "standard_error": 1.0}
    (new / "estimates.json").write_text(json.dumps({"mean": dict(point, point_estimate=median_ns * 1.5),
                                                     "median": point, "std_dev": point}))
    (new / "benchmark.json").write_text(json.dumps({"group_id": pattern, "function_id": impl,
                                                     "throughput": {"Elements": items}}))


class CriterionFigures(unittest.TestCase):
    """bench.py's deque.host figures from criterion's estimates (host-bench/benches/deque.rs)."""

    def test_ratios_per_pattern_and_their_geometric_mean(self):
        with tempfile.TemporaryDirectory() as root:
            criterion_estimate(root, "push_pop", "beamcore", 2048)  # 2 ns per item
            criterion_estimate(root, "push_pop", "crossbeam", 8192)  # 8 ns per item
            criterion_estimate(root, "owner_1_thief", "beamcore", 4096)
            criterion_estimate(root, "owner_1_thief", "crossbeam", 4096)
            f = bench_tool.criterion_figures(root, ["push_pop", "owner_1_thief"])
        self.assertEqual(f["deque.host.beamcore.push_pop"], (2.0, "ns"))
        self.assertEqual(f["deque.host.crossbeam.push_pop"], (8.0, "ns"))
        self.assertEqual(f["deque.host.ours_over_crossbeam.push_pop"], (4.0, "ratio"))
        self.assertEqual(f["deque.host.ours_over_crossbeam.owner_1_thief"], (1.0, "ratio"))
        self.assertEqual(f["deque.host.ours_over_crossbeam"], (2.0, "ratio"))  # sqrt(4 x 1), the median's

    def test_a_missing_or_stale_estimate_is_an_error(self):
        with tempfile.TemporaryDirectory() as root:
            criterion_estimate(root, "push_pop", "beamcore", 2048)
            with self.assertRaisesRegex(ValueError, "push_pop/crossbeam"):
                bench_tool.criterion_figures(root, ["push_pop"])
            criterion_estimate(root, "push_pop", "crossbeam", 2048)
            with self.assertRaisesRegex(ValueError, "earlier run"):
                bench_tool.criterion_figures(root, ["push_pop"], since=time.time() + 60)

    def test_the_suite_lists_every_group_of_the_bench(self):
        source = (SCRIPTS.parent / "host-bench" / "benches" / "deque.rs").read_text()
        for pattern in bench_tool.DEQUE_HOST_PATTERNS:
            self.assertIn(f'"{pattern}"', source)


# The symbols of tests/data/ksyms-sample.bin, which crates/kallsyms's host tests parse.
KSYMS_SAMPLE = [(0x1000, "_start"), (0x1040, "_RNvNtNtCs1234_8beamcore5sched3api5spawn"),
                (0x1100, "_ZN4core9panicking9panic_fmt17h0123456789abcdefE"), (0x1180, "trap_common")]

# The inline part of tests/data/ksyms-inline-sample.bin (the symbols above, then this):
# segments from 0x1040 (worker), 0x1060 (helper inlined into worker), 0x1080 (nothing inlined),
# 0x1100 (leaf); code ends at 0x1200.
KSYMS_INLINE_SEGMENTS = [(0x1040, 0), (0x1060, 1), (0x1080, None), (0x1100, 2)]
KSYMS_INLINE_NODES = [("_ZN3app6worker17h0123456789abcdefE", None), ("_ZN3app6helper17hfedcba9876543210E", 0),
                      ("_RNvCs1234_3app4leaf", None)]


class FakeElf:
    """What `ksyms.code_symbols` reads of an ELF: its sections and symbols."""

    def __init__(self, sections, symbols):
        self.sections = sections
        self._symbols = symbols

    def symbols(self):
        return iter(self._symbols)


class KernelSymbols(unittest.TestCase):
    def test_the_encoding_is_the_one_the_kernel_reads(self):
        fixture = (SCRIPTS.parent / "tests" / "data" / "ksyms-sample.bin").read_bytes()
        self.assertEqual(ksyms.encode(KSYMS_SAMPLE, 0x1200), fixture)
        self.assertEqual(ksyms.decode(fixture), (KSYMS_SAMPLE, 0x1200))

    def test_the_inline_encoding_is_the_one_the_kernel_reads(self):
        fixture = (SCRIPTS.parent / "tests" / "data" / "ksyms-inline-sample.bin").read_bytes()
        inline = ksyms.encode_inline(0x1000, KSYMS_INLINE_SEGMENTS, KSYMS_INLINE_NODES)
        table = ksyms.with_inline(ksyms.encode(KSYMS_SAMPLE, 0x1200), inline)
        self.assertEqual(table, fixture)
        self.assertEqual(ksyms.decode(fixture), (KSYMS_SAMPLE, 0x1200), "the symbol part reads as before")
        self.assertIn(b"_ZN3app6workerE", fixture, "legacy names are stored without their hash")
        with self.assertRaises(ValueError):
            ksyms.encode_inline(0x1000, [(0x1060, 0), (0x1040, 1)], KSYMS_INLINE_NODES)

    def test_inline_segments_take_the_innermost_inline(self):
        # Two DWARF inlines, one inside the other, flattened by the sweep: what dwarf_inline
        # does after reading; the reading itself is checked against llvm-addr2line (docs).
        reader = dwarf_inline.Reader({".debug_info": b"", ".debug_abbrev": b""})
        reader.inlined = [(0, [(0x1000, 0x1100)], 1, None), (1, [(0x1040, 0x1080)], 2, 0),
                          (1, [(0x10c0, 0x10d0)], 3, 0), (0, [(0, 0x40)], 3, None)]
        reader.names = {1: ("_ZN3app5outerE", None, None, "app"), 2: ("_ZN4core3ptr5writeE", None, None, "core"),
                        3: ("_ZN3app5innerE", None, None, "app")}
        segments, nodes = dwarf_inline.flatten(reader, (0x1000, 0x2000), dwarf_inline.LIBRARY_CRATES)
        self.assertEqual(nodes, [("_ZN3app5outerE", None), ("_ZN3app5innerE", 0)])
        self.assertEqual(segments, [(0x1000, 0), (0x10c0, 1), (0x10d0, 0), (0x1100, None)],
                         "core's write counts as part of outer; dropped code's range at 0 is left out")

    def test_addresses_must_be_ascending_and_distinct(self):
        with self.assertRaises(ValueError):
            ksyms.encode([(0x20, "b"), (0x10, "a")], 0x100)
        with self.assertRaises(ValueError):
            ksyms.encode([(0x10, "a"), (0x10, "b")], 0x100)

    def test_code_symbols_keep_functions_and_labels_of_code_only(self):
        text = {"flags": ksyms.SHF_ALLOC | ksyms.SHF_EXECINSTR, "addr": 0x1000, "size": 0x200}
        data = {"flags": ksyms.SHF_ALLOC, "addr": 0x2000, "size": 0x100}
        func, notype, obj = ksyms.STT_FUNC, ksyms.STT_NOTYPE, 1
        local, global_ = 0, ksyms.STB_GLOBAL
        symbols = [
            ("__kernel_start", 0x1000, notype, global_, 1),  # a linker-script marker ...
            ("_start", 0x1000, notype, global_, 1),  # ... loses to the label at its address
            ("$x", 0x1000, notype, local, 1),  # mapping symbol
            ("trap_common", 0x1080, notype, local, 1),
            ("helper", 0x1100, notype, local, 1),  # a label ...
            ("real_function", 0x1100, func, local, 1),  # ... loses to a function
            ("__text_end", 0x1200, notype, global_, 1),  # past the code
            ("STATIC", 0x2000, obj, global_, 2),  # data
            ("in_data", 0x2010, func, global_, 2),  # not in code
        ]
        listed, start, end = ksyms.code_symbols(FakeElf([{"flags": 0, "addr": 0, "size": 0}, text, data], symbols))
        self.assertEqual(listed, [(0x1000, "_start"), (0x1080, "trap_common"), (0x1100, "real_function")])
        self.assertEqual((start, end), (0x1000, 0x1200))

    def test_the_object_file_holds_the_table_in_its_kallsyms_section(self):
        payload = ksyms.encode(KSYMS_SAMPLE, 0x1200)
        elf = ksyms.Elf(ksyms.relocatable_object(payload))
        section = elf.section(".kallsyms")
        self.assertEqual(elf.section_bytes(".kallsyms"), payload)
        self.assertEqual(section["flags"], ksyms.SHF_ALLOC, "allocated, read-only, not code")
        self.assertEqual(struct.unpack_from("<HH", elf.data, 16), (1, 183), "relocatable, AArch64")

    def test_the_linker_finds_its_output_also_in_a_response_file(self):
        self.assertEqual(linker.output_path(["-flavor", "gnu", "a.o", "-o", "/t/kernel", "-T", "x.ld"]),
                         Path("/t/kernel"))
        self.assertEqual(linker.output_path(["-o/t/joined"]), Path("/t/joined"))
        with tempfile.TemporaryDirectory() as scratch:
            response = Path(scratch) / "linker-arguments"
            response.write_text("-flavor\ngnu\na.o\n-o\n/t/with\\ space\n")
            self.assertEqual(linker.output_path([f"@{response}"]), Path("/t/with space"))

    def test_the_linker_wants_a_script_given_directly_or_in_a_response_file(self):
        self.assertTrue(linker.has_linker_script(["-o", "k", "-Tbeamcore.ld"]))
        self.assertTrue(linker.has_linker_script(["-o", "k", "-T", "x.ld"]))
        self.assertFalse(linker.has_linker_script(["-flavor", "gnu", "a.o", "-o", "k", "--gc-sections"]))
        with tempfile.TemporaryDirectory() as scratch:
            response = Path(scratch) / "linker-arguments"
            response.write_text("-o\nk\n-Tbeamcore.ld\n")
            self.assertTrue(linker.has_linker_script([f"@{response}"]))

    def test_the_linker_explains_the_usual_mistakes_and_nothing_else(self):
        def hints(output):
            return [hint.split(".")[0] for hint in linker.hints_for(output)]
        self.assertEqual(hints("rust-lld: error: undefined symbol: __beamcore_main\n>>> referenced by x"),
                         ["beamcore: this program has no entry point"])
        self.assertEqual(hints("rust-lld: error: undefined symbol: BEAMCORE_ENTRY__ONE_PER_PROGRAM__NOT_IN_A_LIBRARY"),
                         ["beamcore: this program has no entry point"])
        self.assertEqual(hints("rust-lld: error: duplicate symbol: __beamcore_main\n"
                               "rust-lld: error: duplicate symbol: BEAMCORE_ENTRY__ONE_PER_PROGRAM__NOT_IN_A_LIBRARY"),
                         ["beamcore: this program has two entry points: `beamcore::entry!` appears in two crates "
                          "it links\n          (the `>>> defined at` lines above say where)"])
        self.assertEqual(len(linker.hints_for("rust-lld: error: undefined symbol: __bss_start")), 1)
        self.assertEqual(len(linker.hints_for("rust-lld: error: cannot find linker script beamcore.ld")), 1)
        self.assertEqual(linker.hints_for("rust-lld: error: undefined symbol: __beamcore_main_helper"), [])
        self.assertEqual(linker.hints_for("rust-lld: error: undefined symbol: memcpy"), [])


class StructureCheck(unittest.TestCase):
    def write(self, root, files):
        for name, text in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def test_a_cycle_through_a_directory_module_is_found_and_comments_are_not_imports(self):
        with tempfile.TemporaryDirectory() as scratch:
            sched = Path(scratch)
            self.write(sched, {
                "mod.rs": "mod a; mod b; mod c;",
                "a.rs": "use super::b::f;\n// super::c::g is only mentioned",
                "b/mod.rs": "mod inner;",
                "b/inner.rs": "use super::helper; use crate::a::x;",
                "c.rs": "use super::a;",
            })
            graph = structure.dependencies(sched)
            self.assertEqual(set(graph["a"]), {"b"}, "the comment names c, the code does not")
            self.assertEqual(set(graph["b"]), {"a"}, "super::helper inside b/ is b's own item")
            self.assertEqual(structure.cycles(graph), [["a", "b"]])

    def test_each_folder_level_has_its_own_graph_and_deep_paths_count_where_they_meet(self):
        with tempfile.TemporaryDirectory() as scratch:
            sched = Path(scratch)
            self.write(sched, {
                "mod.rs": "mod low; mod high; mod top;",
                "low/mod.rs": "pub(super) mod x; pub(super) mod y;",
                "low/x.rs": "use super::y::f;",
                "low/y.rs": "use super::x::{g, h};",
                "high/mod.rs": "pub(super) mod z; mod deep;",
                "high/z.rs": "use crate::low::x::g; use super::super::top::t;",
                "high/deep/mod.rs": "mod w;",
                "high/deep/w.rs": "use super::super::z; use super::helper;",
                "top.rs": "use super::high::z::k; use super::low::{x, y::f};",
            })
            graphs = structure.levels(sched)
            self.assertEqual({a: set(b) for a, b in graphs[""].items()},
                             {"low": set(), "high": {"low", "top"}, "top": {"high", "low"}})
            self.assertEqual(set(graphs["low"]["x"]), {"y"})
            self.assertEqual(set(graphs["low"]["y"]), {"x"}, "the items in braces name x")
            self.assertEqual(set(graphs["high"]["deep"]), {"z"}, "super::helper is deep's own item")
            self.assertEqual(structure.cycles(graphs["low"]), [["x", "y"]], "a cycle inside one folder")
            self.assertEqual(structure.cycles(graphs[""]), [["high", "top"]], "a cycle among the folders")
            self.assertEqual(structure.cycles(graphs["high"]), [])

    def test_a_layered_graph_has_no_cycle(self):
        self.assertEqual(structure.cycles({"api": {"wake": []}, "wake": {"percore": []}, "percore": {}}), [])

    def test_test_code_is_exempt_from_the_line_limit_and_nothing_else_is(self):
        for path in ["tests/03_sgi_all_pairs.rs", "crates/deque/src/tests/unit.rs",
                     "crates/repo-checks/tests/kill_model.rs", "crates/x/src/loom_models.rs"]:
            self.assertTrue(structure.is_test_code(path), path)
        for path in ["kernel/smp/mod.rs", "crates/bootargs/src/lib.rs", "crates/x/src/tests.rs",
                     "kernel/tests_helper.rs", "sim/src/engine.rs"]:
            self.assertFalse(structure.is_test_code(path), path)

    def test_a_long_file_fails_unless_it_is_test_code_or_allowed(self):
        lines = {"kernel/a.rs": 401, "kernel/b.rs": 400, "crates/c/src/tests/unit.rs": 900,
                 "sim/src/engine.rs": 1200}
        problems = structure.long_files(lines, allowed={"sim/src/engine.rs": "another branch"})
        self.assertEqual(len(problems), 1, problems)
        self.assertTrue(problems[0].startswith("kernel/a.rs: 401 lines"), problems)

    def test_an_allowance_no_longer_needed_fails(self):
        allowed = {"sim/src/engine.rs": "another branch", "apps/workloads.rs": "another branch"}
        problems = structure.long_files({"sim/src/engine.rs": 350}, allowed=allowed)
        self.assertEqual([p.split(":")[0] for p in problems], ["apps/workloads.rs", "sim/src/engine.rs"])
        self.assertIn("not in the tree", problems[0])
        self.assertIn("within 400 now", problems[1])

    def test_the_files_are_what_git_tracks_or_would_add(self):
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            self.write(root, {".gitignore": "target/\n", "src/lib.rs": "", "src/new.rs": "",
                              "target/debug/build/out.rs": "", "README.md": ""})
            git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
            subprocess.run([*git, "init", "-q"], cwd=root, check=True)
            subprocess.run([*git, "add", "src/lib.rs", ".gitignore"], cwd=root, check=True)
            self.assertEqual(structure.rust_files(root), ["src/lib.rs", "src/new.rs"],
                             "an untracked file is checked, an ignored one is not")
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            self.write(root, {"src/lib.rs": "", "target/out.rs": ""})
            if subprocess.run(["git", "rev-parse"], cwd=root, capture_output=True).returncode == 0:
                self.skipTest("the scratch directory lies inside a git checkout")
            self.assertEqual(structure.rust_files(root), ["src/lib.rs"], "outside git: all but target/")



class Profile(unittest.TestCase):
    def test_legacy_symbols_lose_their_hash(self):
        self.assertEqual(profile_tool.demangle("_ZN8beamcore5sched8dispatch8end_turn17h0123456789abcdefE"),
                         "beamcore::sched::dispatch::end_turn")
        self.assertEqual(profile_tool.demangle("next_turn_from_process"), "next_turn_from_process")
        self.assertEqual(profile_tool.demangle("beamcore_deque..overflow..WorkQueue$LT$A$GT$::push::h0123456789abcdef"),
                         "beamcore_deque::overflow::WorkQueue<A>::push")
        self.assertTrue(profile_tool.is_library("_RNvMs1n_NtNtCsbcsGJ9IzBgZ_4core4sync6atomic"))
        self.assertTrue(profile_tool.is_library("core::sync::atomic::atomic_load"))
        self.assertFalse(profile_tool.is_library("beamcore::sched::record::stats::add"))

    def test_an_instruction_counts_for_its_most_telling_purpose(self):
        purpose = profile_tool.purpose_of
        self.assertEqual(purpose("context_switch_from_process", []), profile_tool.SWITCH_PURPOSE)
        # A counter update inlined into the queue-wait histogram counts for the histogram.
        self.assertEqual(purpose("next_turn_from_process",
                                 ["beamcore::sched::record::stats::add", "beamcore::sched::record::stats::record_wait",
                                  "beamcore::sched::turn::dispatch::begin_turn", "next_turn_from_process"]),
                         "queue-wait stamp and histogram")
        # The deque inlined into the run queue's take counts for the deque.
        self.assertEqual(purpose("next_turn_from_process",
                                 ["core::sync::atomic::atomic_load", "beamcore_deque::chase_lev::Stealer<A>::steal",
                                  "beamcore::sched::run::runqueue::RunQueues::take_next", "next_turn_from_process"]),
                         "deque: push, FIFO take (LDXR/STXR)")
        self.assertEqual(purpose("next_turn_from_process", ["next_turn_from_process"]),
                         "the turn: end, pick, start (dispatch)")
        self.assertEqual(purpose("memset", ["compiler_builtins::mem::memset"]), "other (memset)")
        counter = {f"{0x40002000:016x}": 3, f"{0x40003000:016x}": 2}
        frames = {0x40002000: ["beamcore::sched::record::trace::process_event"], 0x40003000: []}
        symbols = [(0x40002000, "next_turn_from_process"), (0x40003000, "context_switch_from_process")]
        self.assertEqual(profile_tool.by_purpose(counter, frames, symbols),
                         {"trace switch (trace=off)": 3, profile_tool.SWITCH_PURPOSE: 2})

    def test_instructions_count_between_the_marks_only(self):
        def line(pc):
            return f"Trace 0: 0x7f0000000000 [00004000/{pc:016x}/00000521/ff022201] \n"
        begin, end = 0x40001000, 0x40001040
        marks = {f"{begin:016x}": "yield", f"{end:016x}": None}
        pcs = [0x40000000, begin, 0x40002000, 0x40002004, 0x40002000, end, 0x40002000]
        segments = profile_tool.count_segments([line(pc) for pc in pcs] + ["----\n"], marks)
        self.assertEqual(sum(segments["yield"].values()), 4, "the begin mark and three instructions")
        self.assertEqual(segments["yield"][f"{0x40002000:016x}"], 2)
        symbols = [(0x40001000, "profile_begin_yield"), (0x40002000, "_ZN8beamcore5sched4turn17h0123456789abcdefE")]
        functions = profile_tool.by_function(segments["yield"], symbols)
        self.assertEqual(functions, {"beamcore::sched::turn": 3, "profile_begin_yield": 1})
        table = profile_tool.table("heading", functions, 2, top=1)
        self.assertIn("| `beamcore::sched::turn` | 1.5 | 75% |", table)
        self.assertIn("| (the rest) | 0.5 | 25% |", table)


class HandoffShape(unittest.TestCase):
    # As llvm-objdump --no-show-raw-insn prints it.
    FRAMELESS = """
0000000040220d10 <next_turn_from_process>:
40220d10:      	stp	x29, x30, [sp, #-16]!
40220d14:      	mov	x29, sp
40220d18:      	ldr	w8, [x0, #1224]
40220d1c:      	cbnz	w8, 0x40220e00 <next_turn_from_process+0xf0>
40220d20:      	str	x2, [x9, #224]
40220d24:      	ldp	x29, x30, [sp], #16
40220d28:      	b	0x40221000 <_ZN8beamcore5sched8dispatch17next_turn_general17h0123456789abcdefE>
40220d2c:      	bl	0x40229fb8 <_RNvNtCsbcsGJ9IzBgZ_4core9panicking18panic_bounds_check>
40220d30:      	b	0x40220d18 <next_turn_from_process+0x8>
"""

    def test_a_frame_record_tail_calls_and_panics_pass(self):
        found, tail_calls = handoff.problems(handoff.instructions(self.FRAMELESS))
        self.assertEqual(found, [])
        self.assertEqual(tail_calls, ["_ZN8beamcore5sched8dispatch17next_turn_general17h0123456789abcdefE"],
                         "a branch inside the function is not a tail call")

    def test_saved_registers_and_calls_fail(self):
        with_saves = self.FRAMELESS.replace("\tmov\tx29, sp", "\tstp\tx20, x19, [sp, #48]").replace(
            "\tldr\tw8, [x0, #1224]", "\tstp\td8, d9, [sp, #96]")
        with_call = self.FRAMELESS.replace(
            "b\t0x40221000 <_ZN8beamcore5sched8dispatch17next_turn_general17h0123456789abcdefE>",
            "bl\t0x40221000 <_ZN8beamcore5sched8runqueue4slow13level_is_empty17h0123456789abcdefE>")
        found, _ = handoff.problems(handoff.instructions(with_saves))
        self.assertEqual(len(found), 2, found)
        self.assertTrue(all("callee-saved" in line for line in found))
        found, _ = handoff.problems(handoff.instructions(with_call))
        self.assertEqual(found, ["calls out of line: bl _ZN8beamcore5sched8runqueue4slow13level_is_empty"
                                 "17h0123456789abcdefE"])
        found, _ = handoff.problems(handoff.instructions(self.FRAMELESS + "40220d34:      \tblr\tx9\n"))
        self.assertEqual(found, ["calls through a register: blr x9"])


class SimPolicyCheck(unittest.TestCase):
    """scripts/check-sim-policy.py: sim/ restates no kernel constant and decides no policy."""

    def tree(self, scratch, sim):
        root = Path(scratch)
        for name, text in {
            "kernel/sched/steal.rs": "const REBALANCE_BATCH: usize = 16;\nfn f() {}\n",
            "crates/sched-policy/src/lib.rs": "pub const SEARCH_BUDGET_NS: u64 = 50_000;\n"
                                              "impl Q { pub const NAMES: [&str; 1] = [\"a\"]; }\n",
            "sim/src/engine.rs": sim,
        }.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        return root

    def test_copies_and_decisions_are_found(self):
        with tempfile.TemporaryDirectory() as scratch:
            root = self.tree(scratch, "const REBALANCE_BATCH: usize = 16;\n"
                                      "fn g(c: &Cfg) -> bool { high > c.rebalance_ratio * low }\n"
                                      "fn h(s: Strategy) -> bool { s == Strategy::Adaptive }\n")
            found = sim_policy.problems(root)
            self.assertEqual(len(found), 3, found)
            self.assertIn("REBALANCE_BATCH", found[0])
            self.assertIn("rebalance_ratio", found[1])
            self.assertIn("Strategy::Adaptive", found[2])

    def test_the_machine_model_statistics_and_tests_pass(self):
        with tempfile.TemporaryDirectory() as scratch:
            root = self.tree(scratch, "const LOOP_NS: u64 = 40;\n"
                                      "impl W { pub const NAMES: [&str; 1] = [\"fib\"]; }\n"
                                      "fn s(c: &Cfg) { if gap < c.cooldown_counts { n += 1 } // policy-check: a statistic\n}\n"
                                      "fn t(c: &Cfg) { c.rebalance(now); }\n"
                                      "#[cfg(test)]\nmod tests { const SEARCH_BUDGET_NS: u64 = 1; }\n")
            self.assertEqual(sim_policy.problems(root), [])


class CalibrationGate(unittest.TestCase):
    """scripts/sim-calibrate.py's statistics: paired differences and the regression gate."""

    def run_of(self, mm, steals, attempts=100, migrations=10):
        return {"max_over_mean": mm, "steals": steals, "attempts": attempts, "migrations": migrations}

    def test_paired_differences_and_log_ratios(self):
        qemu = [self.run_of(1.10, 99), self.run_of(1.20, 199)]
        sim = [self.run_of(1.15, 199), self.run_of(1.10, 99)]
        d = calibrate.differences(qemu, sim)
        self.assertAlmostEqual(d["max_over_mean"][0], 0.05)
        self.assertAlmostEqual(d["max_over_mean"][1], -0.10)
        self.assertAlmostEqual(d["steals"][0], math.log(2))
        self.assertAlmostEqual(d["steals"][1], -math.log(2))
        self.assertEqual(calibrate.mean_se([1.0, 3.0]), (2.0, 1.0))

    def summary(self, mm, se=0.01, steals=0.0):
        return {"max_over_mean": {"mean": mm, "se": se}, "steals": {"mean": steals, "se": 0.02},
                "attempts": {"mean": 0.0, "se": 0.02}, "migrations": {"mean": 0.0, "se": 0.02}}

    def test_noise_passes_and_a_real_move_fails(self):
        reference = {"fib.default.4cores": self.summary(0.05)}
        # 0.025 is below the 0.03 floor; 4 x hypot(0.01, 0.01) = 0.057 is wider still.
        self.assertEqual(calibrate.regression_problems({"fib.default.4cores": self.summary(0.075)}, reference), [])
        moved = calibrate.regression_problems({"fib.default.4cores": self.summary(0.15)}, reference)
        self.assertEqual([(k, n) for k, n, _ in moved], [("fib.default.4cores", "max_over_mean")])
        # Twice the steals (log 2 = 0.69) is far beyond 4 x hypot(0.02, 0.02) and the 0.15 floor.
        doubled = calibrate.regression_problems({"fib.default.4cores": self.summary(0.05, steals=0.69)}, reference)
        self.assertEqual([n for _, n, _ in doubled], ["steals"])
        # A noisy run widens its own tolerance: the same move within 4 of its standard errors passes.
        self.assertEqual(calibrate.regression_problems({"fib.default.4cores": self.summary(0.15, se=0.03)},
                                                       reference), [])

    def test_the_reference_spread_guards_a_lopsided_sample(self):
        # A bimodal case: 10 seeds that split 9 to 1 read a small spread (se 0.25); the
        # reference's 40-seed spread (sd 1.2) is the truer one, and a move of 1.4 (a different
        # split of the same two modes) passes: 4 x hypot(1.2 / sqrt(10), 0.19) = 1.69.
        reference = {"fib.default.4cores": self.summary(0.05)}
        reference["fib.default.4cores"]["steals"] = {"mean": 1.1, "se": 0.19, "sd": 1.2, "n": 40}
        now = self.summary(0.05, steals=2.5)
        now["steals"]["se"] = 0.25
        self.assertEqual(calibrate.regression_problems({"fib.default.4cores": now}, reference), [])
        # The same spread still catches a move of four times its standard error and more.
        far = self.summary(0.05, steals=3.0)
        self.assertEqual([n for _, n, _ in calibrate.regression_problems({"fib.default.4cores": far}, reference)],
                         ["steals"])

    def test_the_image_effect_widens_the_standard_error(self):
        # Six sets of ten seeds whose means spread by 0.022 (the image effect) though each set's
        # own standard error is 0.010: a harmless image moves a mean by 0.063, which passes
        # (4 x hypot(0.022, 0.009) = 0.095); a move of 0.15 still fails.
        reference = {"fib.default.8cores": self.summary(0.042)}
        reference["fib.default.8cores"]["max_over_mean"] = {"mean": 0.042, "se": 0.009, "sd": 0.030, "n": 60,
                                                             "set_sd": 0.022, "sets": 6}
        moved = self.summary(-0.021, se=0.010)
        self.assertEqual(calibrate.regression_problems({"fib.default.8cores": moved}, reference), [])
        far = self.summary(-0.11, se=0.010)
        self.assertEqual([n for _, n, _ in calibrate.regression_problems({"fib.default.8cores": far}, reference)],
                         ["max_over_mean"])

    def test_the_spread_between_images_widens_it_too(self):
        # The offsets' sets agree (set_sd 0.02) but images built with other code layouts spread
        # by 0.07 (nqueens/default/8 migrations moved 0.21 when the ids got types): a move of
        # 0.21 passes (4 x hypot(0.07, 0.03) = 0.30), one of 0.4 still fails.
        reference = {"nqueens.default.8cores": self.summary(0.0)}
        reference["nqueens.default.8cores"]["migrations"] = {"mean": -0.3, "se": 0.03, "sd": 0.1, "n": 110,
                                                             "set_sd": 0.02, "sets": 6, "image_sd": 0.07,
                                                             "images": 6}
        moved = self.summary(0.0, steals=0.0)
        moved["migrations"] = {"mean": -0.09, "se": 0.02, "sd": 0.06, "n": 10}
        self.assertEqual(calibrate.regression_problems({"nqueens.default.8cores": moved}, reference), [])
        moved["migrations"]["mean"] = 0.1
        self.assertEqual([n for _, n, _ in calibrate.regression_problems({"nqueens.default.8cores": moved},
                                                                         reference)], ["migrations"])

    def test_the_cache_keeps_each_images_runs(self):
        # The reference runs several images in turn: switching between them must not throw
        # away the runs of the others, and the cache as it was (one image) is read as one.
        with tempfile.TemporaryDirectory() as directory:
            saved = calibrate.CACHE
            calibrate.CACHE = Path(directory) / "qemu-runs.json"
            try:
                calibrate.CACHE.write_text(json.dumps({"image": "aa", "runs": {"x": 1}}))
                self.assertEqual(calibrate.load_cache(), {"images": {"aa": {"runs": {"x": 1}}}})
            finally:
                calibrate.CACHE = saved

    def test_a_case_without_reference_fails(self):
        missing = calibrate.regression_problems({"uts.peers.8cores": self.summary(0.0)}, {})
        self.assertEqual(len(missing), 1)
        self.assertIn("no reference", missing[0][2])


class SimFigures(unittest.TestCase):
    """scripts/sim.py: the sweep's efficiency is the one the simulator computed against the run's
    own bound min(N, W / S), recorded with W / S; nothing is divided by N here."""

    def sweep(self):
        def run(label, cores, speedup, efficiency, w_over_s):
            return {"label": label, "policy": "default", "cores": cores, "speedup": speedup,
                    "efficiency": efficiency, "w_over_s": w_over_s, "size": "n=22", "steals": 0,
                    "migrations": 0, "elapsed_us": 1}
        runs = [run("fib", 1, 1.0, 1.0, 20000.0), run("fib", 64, 60.0, 0.9375, 20000.0),
                run("nqueens", 64, 45.0, 0.9, 50.0)]
        return {"seed": 1, "costs": "c", "wall_s": 1.0, "runs": runs}

    def test_efficiency_and_w_over_s_are_recorded(self):
        data = self.sweep()
        f = sim_tool.figures(data, data["runs"])
        self.assertEqual(f["sim.fib.default.64cores.efficiency"], (0.9375, "ratio"))
        self.assertEqual(f["sim.fib.default.64cores.w_over_s"], (20000.0, "ratio"))
        # W / S below N: the bound is W / S, so 45x on 64 cores is 0.9, not 0.70.
        self.assertEqual(f["sim.nqueens.default.64cores.efficiency"], (0.9, "ratio"))

    def test_the_table_shows_efficiency_and_the_sizes(self):
        data = self.sweep()
        _, runs, workloads, policies, cores = sim_tool.load_data(data)
        table = sim_tool.markdown(data, runs, workloads, policies, cores)
        self.assertIn("| fib | default | 1.00 | 0.94 |", table)
        self.assertIn("20000 (n=22)", table)


class SuiteJudge(unittest.TestCase):
    """scripts/test-qemu.py's verdict on a finished run: the count a test kernel says itself."""

    def spec(self, count, regex):
        return {"exit": 0, "expect": [], "forbid": [], "expect_order": [],
                "expect_count": [(count, suite_runner.re.compile(regex))]}

    def test_a_said_count_must_match_the_lines(self):
        console = "process <1.0> on core 0 ended: panic: x\nprocess <2.0> on core 1 ended: fault\nsaid-count ended: 2\n"
        passed, why = suite_runner.judge(console, 0, self.spec("said:ended", r"^process .* ended: "), 4)
        self.assertTrue(passed, why)
        passed, why = suite_runner.judge(console.replace("said-count ended: 2", "said-count ended: 3"), 0,
                                         self.spec("said:ended", r"^process .* ended: "), 4)
        self.assertFalse(passed)
        self.assertIn("2 lines match", why)

    def test_a_missing_said_count_fails(self):
        passed, why = suite_runner.judge("process <1.0> ended: x\n", 0, self.spec("said:ended", r"^process .* ended: "), 1)
        self.assertFalse(passed)
        self.assertIn("said-count ended", why)

    def test_smp_and_numbers_still_count(self):
        console = "core 0 online\ncore 1 online\n"
        self.assertTrue(suite_runner.judge(console, 0, self.spec("smp", r"^core \d+ online"), 2)[0])
        self.assertFalse(suite_runner.judge(console, 0, self.spec("3", r"^core \d+ online"), 2)[0])


if __name__ == "__main__":
    unittest.main(verbosity=2)
