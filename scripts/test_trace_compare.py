#!/usr/bin/env python3
"""Host tests of scripts/trace_compare.py's pure parts: reading a kernel trace log (counter to
ns, the victim of a steal and a refusal, a push's source core, the report), the simulator's event lines, the
alignment on the workload's first spawn, one steal counted once for its processes, and the
windows. No QEMU, no simulator run needed.

    python3 scripts/test_trace_compare.py
"""

import importlib.util
import unittest
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("trace_compare", SCRIPTS / "trace_compare.py")
tc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tc)

# 62.5 MHz: one count is 16 ns. main's spawn at count 100, the workload's first at 1,000.
KERNEL_LOG = """trace: begin cores=4 counter_hz=62500000
trace: ev 0 100 spawn 0 0 0
trace: ev 0 1000 spawn 1 0 0
trace: ev 1 1010 refused 0 0 65538
trace: ev 1 1100 steal 1 0 0
trace: ev 1 1105 steal 2 0 0
trace: ev 2 1200 idle_end 0 0 0
trace: ev 2 1300 steal 3 0 1
trace: ev 3 1400 migrate 4 0 2
trace: ev 1 9000 exit 1 0 0
report: {"workload":"fib","cores":4,"next_tick_ns":[1,2,3,4],"elapsed_us":10}
""".splitlines()

SIM_LINES = """sim: costs: whatever
event: 0 3840 spawn 1
event: 1 4000 steal 0
event: 1 4000 steal 0
event: 1 9000 steal 0
report: {}
""".splitlines()


class TraceCompareTest(unittest.TestCase):
    def test_kernel_log_times_in_ns_and_victims(self):
        events, report = tc.parse_kernel_log(KERNEL_LOG)
        self.assertEqual(report["workload"], "fib")
        self.assertEqual(events[0], (1600, 0, "spawn", 0))
        self.assertIn((16160, 1, "refused", 65538), events)
        self.assertIn((20800, 2, "steal", 1), events, "a steal's arg is its victim")
        self.assertIn((22400, 3, "migrate", 2), events, "a push's arg is the core it came from")

    def test_aligned_on_the_workloads_first_spawn(self):
        events, _ = tc.parse_kernel_log(KERNEL_LOG)
        q = tc.aligned(events, 1)
        self.assertEqual(q[0], (0, 0, "spawn", 1))
        self.assertEqual(q[1], (160, 1, "refused", 65538))
        s = tc.aligned(tc.parse_sim_events(SIM_LINES), 0)
        self.assertEqual(s[0], (0, 0, "spawn", 1))
        with self.assertRaises(ValueError):
            tc.aligned(events[:1], 1)

    def test_one_steal_counted_once_for_its_processes(self):
        events, _ = tc.parse_kernel_log(KERNEL_LOG)
        names = [e[2] for e in tc.with_steal_ops(tc.aligned(events, 1))]
        # Core 1's two processes from victim 0 are one steal; core 2's from victim 1 another.
        self.assertEqual(names.count("steals"), 2)
        self.assertEqual(names.count("stolen"), 3)
        sim = [e[2] for e in tc.with_steal_ops(tc.aligned(tc.parse_sim_events(SIM_LINES), 0))]
        # The same victim 5 us later is another steal.
        self.assertEqual((sim.count("steals"), sim.count("stolen")), (2, 3))

    def test_windows_count_each_kind_where_it_fell(self):
        events = [(50_000, 1, "refused", 0), (150_000, 1, "steals", 0), (700_000, 3, "migrate", 0),
                  (2_500_000, 2, "sleep", 0), (3_000_000, 2, "exit", 7)]
        got = dict(tc.windows(events))
        self.assertEqual(got["0-0.1 ms"]["refused"], 1)
        self.assertEqual(got["0.1-1 ms"]["steals"], 1)
        self.assertEqual(got["0.1-1 ms"]["migrate"], 1)
        self.assertEqual(got["2-3 ms"]["sleep"], 1)
        self.assertEqual(got["last 2 ms"],
                         {"steals": 0, "stolen": 0, "migrate": 0, "refused": 0, "sleep": 1, "idle_end": 0})


if __name__ == "__main__":
    unittest.main()
