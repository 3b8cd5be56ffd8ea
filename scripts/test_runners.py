#!/usr/bin/env python3
"""Host tests of the suite runner (scripts/test-qemu.py: which cases a filter selects, how a test
header reads, the verdict on a console, a deadline as a failure) and of the calibration gate
(scripts/sim-calibrate.py: paired differences and their standard errors, the gate's decision on
synthetic runs whose answer is known, the absolute interval check, which harmless variants a run
tries). Nothing is built or booted.

    python3 scripts/test_runners.py
"""

import importlib.util
import io
import math
import random
import re
import subprocess
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


runner = load("runners_test_qemu", "test-qemu.py")
calibrate = load("runners_sim_calibrate", "sim-calibrate.py")


class SuiteFiles(unittest.TestCase):
    """A temporary tests/ directory of test kernels with headers."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = Path(self.dir.name)
        (self.root / "tests").mkdir()

    def tearDown(self):
        self.dir.cleanup()

    def source(self, name, *header):
        path = self.root / "tests" / f"{name}.rs"
        path.write_text("".join(f"//! qemu-test: {line}\n" for line in header) + "fn main() {}\n")
        return path


class Selection(SuiteFiles):
    def test_configs_variants_and_memory_multiply(self):
        self.source("30_x", "configs=a72-smp1,a72-smp4", "variants=a=1;a=2", "memory=64M,1G")
        cases = runner.select_cases([self.root / "tests/30_x.rs"], [], [])
        self.assertEqual([(c[1], c[3], c[4]) for c in cases],
                         [(cfg, v, m) for cfg in ("a72-smp1", "a72-smp4") for m in ("64M", "1G") for v in ("a=1", "a=2")]
                         + [("rpi4", "", "128M")] * len(runner.IMAGE_CASES))

    def test_name_and_config_filters(self):
        sources = [self.source("01_boot_all_cores", "configs=all"), self.source("31_y")]
        names = lambda cases: sorted({(c[0], c[1]) for c in cases})  # noqa: E731
        self.assertEqual(names(runner.select_cases(sources, ["31"], [])), [("31_y", "a72-smp4")])
        # A test of RPI4_CASES runs on raspi4b too; `all` leaves out the configurations it says.
        boot = runner.select_cases(sources, ["01_boot"], [])
        self.assertEqual({c[1] for c in boot}, set(runner.ALL_CONFIGS) | {"rpi4"})
        self.assertNotIn("gicv3-smp64", {c[1] for c in boot})
        only = runner.select_cases(sources, [], ["a53-smp4"])
        self.assertEqual(names(only), [("01_boot_all_cores", "a53-smp4")])
        # The image checks come with the rpi4 configuration or a name filter that matches them.
        self.assertEqual([c[0] for c in runner.select_cases(sources, ["parks"], [])], ["rpi4_image_parks_every_core"])
        self.assertEqual(runner.select_cases(sources, ["nothing"], []), [])

    def test_header(self):
        spec = runner.parse_header(self.source(
            "32_z", "configs=all,gicv3-smp64", r"append=ticks=3 bad=\xff", "exit=1", "expect=^ok$", "forbid=PANIC",
            "expect-count=smp ^core", "expect-order=^a", "expect-order=^b", "timeout=9", "qemu-args=-device x",
            "gdb=break f; continue", "profile=release"))
        self.assertEqual(spec["configs"], runner.ALL_CONFIGS + ["gicv3-smp64"])
        self.assertTrue(spec["release"])
        self.assertFalse(runner.parse_header(self.source("34_y", "timeout=9"))["release"], "the suite's profile by default")
        self.assertEqual((spec["exit"], spec["timeout"], spec["qemu_args"], spec["gdb"]),
                         (1, 9, ["-device", "x"], ["break f", "continue"]))
        self.assertEqual([r.pattern for r in spec["expect_order"]], ["^a", "^b"])
        self.assertEqual(runner.raw_bytes(spec["append"]).encode("utf-8", "surrogateescape"), b"ticks=3 bad=\xff")
        for bad in ("configs=nowhere", "colour=blue", "profile=fast"):
            with self.subTest(bad=bad), self.assertRaises(SystemExit):
                runner.parse_header(self.source("33_bad", bad))


def spec(**checks):
    base = {"exit": 0, "expect": [], "forbid": [], "expect_order": [], "expect_count": [], "timeout": 5,
            "append": "", "qemu_args": []}
    for key in ("expect", "forbid", "expect_order"):
        base[key] = [re.compile(p) for p in checks.pop(key, [])]
    base["expect_count"] = [(n, re.compile(p)) for n, p in checks.pop("expect_count", [])]
    return {**base, **checks}


class Verdict(unittest.TestCase):
    CONSOLE = "core 0 online\r\ncore 1 online\r\nstep a\nstep b\ntest: ok\n"

    def test_a_run_that_says_everything_passes(self):
        ok, why = runner.judge(self.CONSOLE, 0, spec(expect=["^test: ok$"], forbid=["PANIC"],
                                                     expect_order=["^step a", "^step b"],
                                                     expect_count=[("smp", "^core \\d+ online$")]), 2)
        self.assertTrue(ok, why)

    def test_each_check_fails_on_its_own(self):
        for why_part, status, checks in (
                ("exit status 3, expected 0", 3, {}),
                ("no line matches /^gone$/", 0, {"expect": ["^gone$"]}),
                ("forbidden /online/", 0, {"forbid": ["online"]}),
                ("after the line matching /^step b/", 0, {"expect_order": ["^step b", "^step a"]}),
                ("2 lines match", 0, {"expect_count": [("smp*2", "online")]})):
            with self.subTest(why=why_part):
                ok, why = runner.judge(self.CONSOLE, status, spec(**checks), 2)
                self.assertFalse(ok)
                self.assertIn(why_part, why)

    def test_a_deadline_is_a_failure_with_the_console_kept(self):
        def hang(cmd, **kwargs):
            raise subprocess.TimeoutExpired(cmd, kwargs["timeout"], output=b"core 0 online\nstuck\n")
        with mock.patch.object(runner.subprocess, "run", hang):
            ok, why, output, _ = runner.run_case("K", "a72-smp4", spec(timeout=7), "")
        self.assertFalse(ok)
        self.assertEqual(why, "deadline of 7s passed; killed")
        self.assertIn("stuck", output)
        # Under gdb too: no status is a deadline.
        with mock.patch.object(runner, "run_under_gdb", lambda *a: (None, "gdb: waiting\n")):
            ok, why, _, _ = runner.run_case("K", "a72-smp4", spec(gdb=["bt"]), "")
        self.assertFalse(ok)
        self.assertIn("deadline", why)


class SuiteMain(SuiteFiles):
    def test_a_hung_test_fails_the_suite_and_is_named_at_the_end(self):
        self.source("40_hangs", "expect=^never$")
        self.source("41_passes", "expect=^test: fine$")

        def qemu(cmd, **kwargs):
            if "40_hangs" in cmd[cmd.index("-kernel") + 1]:
                raise subprocess.TimeoutExpired(cmd, kwargs["timeout"], output=b"halfway\n")
            return subprocess.CompletedProcess(cmd, 0, b"test: fine\n")
        out = io.StringIO()
        with mock.patch.object(runner, "ROOT", self.root), \
                mock.patch.object(runner, "build", lambda *a: {"40_hangs": "/k/40_hangs", "41_passes": "/k/41_passes"}), \
                mock.patch.object(runner.subprocess, "run", qemu), \
                mock.patch("sys.argv", ["test-qemu.py", "--test", "4", "--config", "a72-smp4"]), \
                redirect_stdout(out), self.assertRaises(SystemExit) as exit_:
            runner.main()
        self.assertEqual(exit_.exception.code, 1)
        text = out.getvalue()
        self.assertIn("FAIL 40_hangs @ a72-smp4", text)
        self.assertIn("PASS 41_passes @ a72-smp4", text)
        self.assertIn("1 passed, 1 failed", text)
        self.assertIn("failed: 40_hangs @ a72-smp4", text.splitlines()[-1])


def runs(values, steals=None):
    """Per-seed observables with these max/mean values (and steal counts)."""
    steals = steals or [100] * len(values)
    return [{"max_over_mean": v, "steals": s, "attempts": 10 * s, "migrations": s // 2} for v, s in zip(values, steals)]


class Calibration(unittest.TestCase):
    def test_paired_standard_error(self):
        # The seeds move QEMU by a lot; the simulator follows each by 0.05 +- 0.01: pairing sees
        # only the difference's spread, sd 0.01 * sqrt(10 / 9) over 10 seeds.
        qemu = [1.0 + 0.3 * i for i in range(10)]
        noise = [0.01 if i % 2 else -0.01 for i in range(10)]
        s = calibrate.summarise(runs(qemu), runs([q + 0.05 + e for q, e in zip(qemu, noise)]))
        self.assertAlmostEqual(s["max_over_mean"]["mean"], 0.05)
        self.assertAlmostEqual(s["max_over_mean"]["sd"], 0.01 * math.sqrt(10 / 9))
        self.assertAlmostEqual(s["max_over_mean"]["se"], 0.01 * math.sqrt(10 / 9) / math.sqrt(10))
        self.assertEqual(s["max_over_mean"]["n"], 10)
        # Counts compare as log ratios of (count + 1): 199 against 99 steals is log 2 each seed.
        s = calibrate.summarise(runs(qemu, [99] * 10), runs(qemu, [199] * 10))
        self.assertAlmostEqual(s["steals"]["mean"], math.log(2))
        self.assertAlmostEqual(s["steals"]["se"], 0.0)

    def draw(self, rng, shift=0.0, steal_factor=1.0):
        qemu = [rng.uniform(1.0, 2.0) for _ in calibrate.SEEDS]
        steals = [rng.randint(50, 150) for _ in calibrate.SEEDS]
        sim = [q + 0.02 + shift + rng.gauss(0, 0.02) for q in qemu]
        sim_steals = [round(s * steal_factor * rng.uniform(0.9, 1.1)) for s in steals]
        return calibrate.summarise(runs(qemu, steals), runs(sim, sim_steals))

    def test_the_gate_on_runs_whose_answer_is_known(self):
        rng = random.Random(31)
        reference = {"fib.default.4cores": self.draw(rng)}
        # Ten fresh draws of the same simulator: none moves beyond the gate.
        for _ in range(10):
            self.assertEqual(calibrate.regression_problems({"fib.default.4cores": self.draw(rng)}, reference), [])
        # A simulator whose max/mean is 0.1 higher, or that steals twice as often, fails on that
        # observable alone.
        moved = calibrate.regression_problems({"fib.default.4cores": self.draw(rng, shift=0.1)}, reference)
        self.assertEqual([name for _, name, _ in moved], ["max_over_mean"])
        doubled = calibrate.regression_problems({"fib.default.4cores": self.draw(rng, steal_factor=2.0)}, reference)
        self.assertEqual({name for _, name, _ in doubled}, {"steals", "attempts", "migrations"})

    def test_the_absolute_interval_check(self):
        t = calibrate.T95
        self.assertFalse(calibrate.gap_outside(0.0, 0.01))
        self.assertFalse(calibrate.gap_outside(0.12, 0.02))          # [0.075, 0.165] reaches 0.1
        self.assertTrue(calibrate.gap_outside(0.2, 0.01))            # [0.177, 0.223]
        self.assertTrue(calibrate.gap_outside(-0.2, 0.01))
        self.assertFalse(calibrate.gap_outside(0.1 + t * 0.01, 0.01))  # the interval just touches 0.1
        self.assertTrue(calibrate.gap_outside(0.1 + t * 0.01 + 1e-9, 0.01))

    def test_the_absolute_check_spans_the_image_effect(self):
        # Measured on a kernel whose change touched no calibration workload's path (image
        # 87daf4bfd9026620): fib/default/4's gap 0.126 with a seed standard error of 0.0104 lies
        # wholly beyond 0.1, but the reference's 10-seed means spread by 0.019 between boot_jitter
        # sets: one image is one draw, and within that spread the gap reaches 0.1.
        now = {"mean": 0.126, "se": 0.0104, "n": 10}
        then = {"mean": 0.096, "se": 0.0079, "sd": 0.0384, "set_sd": 0.0193, "image_sd": 0.0104}
        self.assertTrue(calibrate.gap_outside(now["mean"], calibrate.run_se(now, None)))
        self.assertAlmostEqual(calibrate.run_se(now, then), 0.0193)
        self.assertFalse(calibrate.gap_outside(now["mean"], calibrate.run_se(now, then)))
        # A gap far beyond every spread still fails.
        self.assertTrue(calibrate.gap_outside(0.2, calibrate.run_se(now, then)))

    def test_observables_of_a_report(self):
        report = {"per_core": [{"work": w, "steals": 1, "steal_attempts": 2, "migrated_in": 3, "idle_with_work_us": 4}
                               for w in (30, 10)]}
        o = calibrate.observe(report)
        self.assertEqual((o["max_over_mean"], o["steals"], o["attempts"], o["migrations"], o["idle_with_work_us"]),
                         (1.5, 2, 4, 6, 8))

    def test_the_counts_and_idle_with_work_are_the_workloads_own(self):
        # The report's per-core figures run from boot to the report; what they had reached at
        # the workload's start and end is in the `_before` and `_after` arrays.
        report = {"per_core": [{"work": 10, "steals": 9, "steal_attempts": 50, "migrated_in": 7, "idle_with_work_us": 900}
                               for _ in range(2)],
                  "steals_before": [0, 1], "steals_after": [3, 4],
                  "steal_attempts_before": [20, 30], "steal_attempts_after": [25, 40],
                  "migrated_in_before": [0, 0], "migrated_in_after": [5, 6],
                  "idle_with_work_us_before": [100, 0], "idle_with_work_us_after": [130, 45]}
        o = calibrate.observe(report)
        self.assertEqual((o["steals"], o["attempts"], o["migrations"], o["idle_with_work_us"]), (6, 15, 11, 75))


class HarmlessVariants(unittest.TestCase):
    """`make test` tries two of the five harmless variants; which two must follow the image."""

    def test_two_are_one_of_each_kind_and_all_five_are_reached(self):
        seen = set()
        for image in (f"{n:016x}" for n in range(12)):
            pair = calibrate.harmless_variants(2, image)
            self.assertEqual(len(pair), 2)
            self.assertTrue(pair[0][0] and not pair[0][1], pair)   # bootargs padding
            self.assertTrue(pair[1][1] and not pair[1][0], pair)   # boot jitter
            self.assertEqual(pair, calibrate.harmless_variants(2, image))
            seen.update(pair)
        self.assertEqual(seen, set(calibrate.HARMLESS))

    def test_all_of_them_when_asked_for_five_or_more(self):
        self.assertEqual(calibrate.harmless_variants(5, "0"), calibrate.HARMLESS)
        self.assertEqual(calibrate.harmless_variants(9, "ff"), calibrate.HARMLESS)


if __name__ == "__main__":
    unittest.main(verbosity=2)
