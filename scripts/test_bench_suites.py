#!/usr/bin/env python3
"""Host tests of scripts/bench.py's suite table: every suite name goes through `main`'s dispatch
with QEMU and cargo stubbed out (each run answers with a console that has every line the suites
read), must finish without an exception and write figures of its own; a run of every suite, as
`make bench` with no BENCH makes, must end with status 0; `--bench` selects as documented.

    python3 scripts/test_bench_suites.py
"""

import importlib.util
import io
import json
import tempfile
import unittest
from contextlib import redirect_stdout
from pathlib import Path
from unittest import mock

SCRIPTS = Path(__file__).resolve().parent


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = load("suites_bench", "bench.py")


def console(cmd):
    """What the kernel `cmd` boots would print: a micro-benchmark kernel (bench-NAME) its `bench:`
    lines (one not a number), the `make run` kernel one `report:` line with the keys of every
    workload (balance, queues, grain, hold)."""
    kernel = Path(cmd[cmd.index("-kernel") + 1]).name
    if kernel.startswith("bench-"):
        # As apps/bench/sched.rs names its figures: by trace=on, else by the telemetry= level.
        name, words = kernel[len("bench-"):], cmd[-1].split()
        traced = ".traced" if "trace=on" in words else next(
            (f".{w.split('=')[1]}" for w in words if w in ("telemetry=counters", "telemetry=off")), "")
        extra = "bench: sched.bytes_per_process 512 bytes\n" if name == "sched" and not traced else ""
        return f"bench: config cores=1 rounds=10\nbench: {name}.op{traced} 120 insns\nbench: {name}.note n/a x\n{extra}"
    smp = int(cmd[cmd.index("-smp") + 1]) if "-smp" in cmd else 1
    per_core = [{"core": i, "work": 100 + 10 * i, "steals": 1, "steal_attempts": 3, "migrated_in": 1,
                 "idle_with_work_us": 5, "steal_latency_buckets": [1, 0, 0], "queue_lock_acquisitions": 4,
                 "queue_lock_contended": 1, **{f"fail_{c}": 0 for c in
                                              ("empty", "below_threshold", "cooldown", "migration_limit", "lost_race")}}
                for i in range(smp)]
    report = {"per_core": per_core, "work_max_over_mean": 1.1, "max_migrations_seen": 1, "elapsed_us": 1000,
              "ok": True, "grain_elapsed_ns": 200_000, "grain_tasks": 12, "hold_peak": 5000,
              "hold_bytes_per_process": 900, "hold_spawn_us": 20_000, "hold_end_us": 3000}
    return f"report: {json.dumps(report)}\n"


class SuiteDispatch(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        root = Path(self.dir.name)
        self.results = root / "bench" / "results.json"
        self.criterion = root / "criterion"
        self.runs, self.builds = [], []
        self.patches = [mock.patch.object(bench, "RESULTS", self.results),
                        mock.patch.object(bench, "CRITERION_DIR", self.criterion),
                        mock.patch.object(bench, "run", self.fake_run),
                        mock.patch.object(bench, "cargo", lambda args, env=None: self.builds.append(args))]
        for patch in self.patches:
            patch.start()

    def tearDown(self):
        for patch in self.patches:
            patch.stop()
        self.dir.cleanup()

    def fake_run(self, cmd, timeout, env=None):
        self.runs.append(cmd)
        if cmd[0] == "cargo":  # criterion, as `cargo bench` leaves its estimates
            for pattern in bench.DEQUE_HOST_PATTERNS:
                for impl, ns in (("beamcore", 900.0), ("crossbeam", 1000.0)):
                    new = self.criterion / pattern / impl / "new"
                    new.mkdir(parents=True, exist_ok=True)
                    (new / "estimates.json").write_text(json.dumps({"median": {"point_estimate": ns}}))
                    (new / "benchmark.json").write_text(json.dumps({"throughput": {"Elements": 100}}))
            return 0, "criterion done\n"
        return 0, console(cmd)

    def bench_main(self, *argv):
        out = io.StringIO()
        with redirect_stdout(out), self.assertRaises(SystemExit) as exit_:
            bench.main(list(argv))
        return exit_.exception.code, out.getvalue()

    def test_every_suite_dispatches_and_writes_its_figures(self):
        for suite in bench.SUITES:
            with self.subTest(suite=suite):
                self.results.unlink(missing_ok=True)
                status, out = self.bench_main("--bench", suite)
                self.assertEqual(status, 0, out)
                figures = json.loads(self.results.read_text())
                self.assertTrue(any(r["suite"] == suite for r in figures.values()), f"{suite}: no figure of its own")
                self.assertTrue(self.results.with_suffix(".md").exists())

    def test_the_full_run_reaches_every_suite(self):
        # Before the table, the full run stopped after `scale` with KeyError: 'scale'.
        status, out = self.bench_main()
        self.assertEqual(status, 0, out[-2000:])
        for step, suite in enumerate(bench.SUITES, 1):
            self.assertIn(f"[{step}/{len(bench.SUITES)}] {suite}\n", out)
        suites = {r["suite"] for r in json.loads(self.results.read_text()).values()}
        self.assertEqual(suites, set(bench.SUITES))
        # One build of the kernels, one of the suite built without frame pointers.
        self.assertEqual(self.builds, [["build", "--release", "--bins"],
                                       ["build", "--release", "--bin", "bench-sched"]])

    def test_a_failed_run_is_counted_not_raised(self):
        with mock.patch.object(bench, "run", lambda cmd, timeout, env=None: (1, "")):
            status, out = self.bench_main("--bench", "scale")
        self.assertEqual(status, 1)
        self.assertIn("scale at 1G failed", out)

    def test_selection_and_the_figure_filter(self):
        # Before the table, the balance and queues branches overwrote the filter with their
        # figures' names; now each runner gets the filter as it was given.
        self.assertEqual(bench.selected("sched.op"), ["sched"])
        self.assertEqual(bench.selected("balance"), ["balance", "queues"])
        self.assertEqual(bench.selected("balance.fib"), ["balance", "queues"])
        self.assertEqual(bench.selected("deque"), ["deque", "deque.host"])
        self.assertEqual(bench.selected(""), list(bench.SUITES))
        self.assertEqual(bench.selected("nothing"), [])
        status, _ = self.bench_main("--bench", "sched.op")
        self.assertEqual(status, 0)
        self.assertEqual(sorted(json.loads(self.results.read_text())), ["sched.op"])

    def test_sched_reports_every_telemetry_level(self):
        # BENCH=sched runs the default and both reduced levels, each its own figures.
        self.assertEqual(bench.QEMU_SUITES["sched.counters"][2], "slice_us=1000000 telemetry=counters")
        self.assertEqual(bench.QEMU_SUITES["sched.off"][2], "slice_us=1000000 telemetry=off")
        self.assertTrue({"sched", "sched.counters", "sched.off"} <= set(bench.selected("sched")))
        status, out = self.bench_main("--bench", "sched")
        self.assertEqual(status, 0, out)
        figures = json.loads(self.results.read_text())
        for name, suite in (("sched.op", "sched"), ("sched.op.counters", "sched.counters"),
                            ("sched.op.off", "sched.off")):
            self.assertEqual(figures[name]["suite"], suite, name)
        self.assertIn("telemetry=off", figures["sched.op.off"]["command"])

    def test_no_matching_suite_names_them_all(self):
        with self.assertRaises(SystemExit) as exit_:
            bench.main(["--bench", "nothing"])
        self.assertIn("scale", str(exit_.exception.code))


if __name__ == "__main__":
    unittest.main(verbosity=2)
