#!/usr/bin/env python3
"""Host tests of scripts/qemu.py, the one QEMU launcher: each caller gets the command line it built
itself before the launcher existed (the old lines are written out below), the runner
scripts/qemu-run.sh turns its environment into the same, and nothing else in scripts/, the
Makefile, template/ or examples/ names the emulator.

    python3 scripts/test_launcher.py

QEMU is never started: a stand-in named like it, first on PATH, records its arguments.
"""

import ast
import importlib.util
import os
import shlex
import subprocess
import sys
import tempfile
import unittest
from unittest import mock
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
ROOT = SCRIPTS.parent
sys.path.insert(0, str(SCRIPTS))
import qemu  # noqa: E402

Q = qemu.QEMU
VIRT_A72 = [Q, "-M", "virt", "-cpu", "cortex-a72"]


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def groups(argv):
    """The options of a command line as a sorted list of (option, its value or None): the same
    options in another order compare equal."""
    out, i = [], 1
    while i < len(argv):
        if i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            out.append((argv[i], argv[i + 1]))
            i += 2
        else:
            out.append((argv[i], None))
            i += 1
    return [argv[0]] + sorted(out, key=repr)


class FakeQemu:
    """A directory holding an executable named like QEMU that writes its arguments, one per line,
    into the file $FAKE_QEMU_OUT; `env` puts it first on PATH."""

    def __enter__(self):
        self.dir = tempfile.TemporaryDirectory()
        path = Path(self.dir.name)
        fake = path / Q
        fake.write_text('#!/bin/sh\nif [ "$1" = --version ]; then echo "QEMU emulator version 10.0.2"; exit 0; fi\n'
                        'for a in "$0" "$@"; do printf "%s\\n" "$a"; done > "$FAKE_QEMU_OUT"\n')
        fake.chmod(0o755)
        self.out = path / "argv"
        self.env = dict(os.environ, PATH=f"{path}:{os.environ['PATH']}", FAKE_QEMU_OUT=str(self.out))
        for name in ("BOARD", "SMP", "CPU", "MACHINE_OPTS", "MEM", "ARGS", "TIMEOUT", "ICOUNT", "GDB", "RPI4_DTB"):
            self.env.pop(name, None)
        return self

    def argv(self):
        lines = self.out.read_text().splitlines()
        return [Path(lines[0]).name, *lines[1:]]

    def __exit__(self, *exc):
        self.dir.cleanup()


class Runner(unittest.TestCase):
    """scripts/qemu-run.sh (make run, make gdb, make trace, the cargo runner)."""

    def boot(self, env, *extra):
        with FakeQemu() as fake:
            proc = subprocess.run([str(SCRIPTS / "qemu-run.sh"), "K", *extra], env={**fake.env, **env},
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            return fake.argv(), proc.stderr

    def test_virt_with_the_environment(self):
        # Before: ICOUNT=1 came as the extra arguments `-icount shift=0,sleep=off`, at the end.
        old = [Q, "-M", "virt,gic-version=3", "-cpu", "max", "-smp", "2", "-m", "1G", "-nographic", "-semihosting",
               "-kernel", "K", "-append", "a=1 b=2", "-icount", "shift=0,sleep=off"]
        new, shown = self.boot({"SMP": "2", "CPU": "max", "MACHINE_OPTS": "gic-version=3", "MEM": "1G",
                                "ARGS": "a=1 b=2", "ICOUNT": "1"})
        self.assertEqual(groups(new), groups(old))
        self.assertIn(f"qemu-run: {' '.join(new)}", shown)

    def test_defaults_and_extra_arguments_last(self):
        old = [*VIRT_A72, "-smp", "4", "-m", "128M", "-nographic", "-semihosting", "-kernel", "K",
               "-device", "x"]
        self.assertEqual(self.boot({"ICOUNT": "0"}, "-device", "x")[0], old)

    def test_rpi4_and_gdb(self):
        old = [Q, "-M", "raspi4b", "-nographic", "-semihosting", "-kernel", "K", "-dtb", "D", "-append", "w=1",
               "-s", "-S"]
        self.assertEqual(self.boot({"BOARD": "rpi4", "RPI4_DTB": "D", "ARGS": "w=1", "GDB": "1"})[0], old)

    def test_a_dash_leading_command_line_stays_the_kernels(self):
        self.assertEqual(self.boot({"ARGS": "-x=1"})[0][-2:], ["-append", "-x=1"])


# Each shell caller's call of the launcher, as its script writes it (checked to be there), what
# is replaced in it here (its variables; the end of a call the script continues on the next
# line), and the command line the script built itself before.
SHELL_CALLERS = [
    ("shared-wake-check.sh", 'python3 scripts/qemu.py --smp 4 --icount --append="$2" "$1"', {"$2": "V", "$1": "K"},
     [*VIRT_A72, "-smp", "4", "-m", "128M", "-nographic", "-semihosting", "-icount", "shift=0,sleep=off",
      "-kernel", "K", "-append", "V"]),
    ("deque-barrier-check.sh", 'python3 scripts/qemu.py --smp 2 "$kernel"', {"$kernel": "K"},
     [*VIRT_A72, "-smp", "2", "-m", "128M", "-nographic", "-semihosting", "-kernel", "K"]),
    ("signal-queue-stxr-failure-check.sh", 'python3 scripts/qemu.py --smp 4 "$kernel"', {"$kernel": "K"},
     [*VIRT_A72, "-smp", "4", "-m", "128M", "-nographic", "-semihosting", "-kernel", "K"]),
    ("deque-stxr-failure-check.sh", 'python3 scripts/qemu.py --cpu "$cpu" --smp "$smp" "$kernel"',
     {"$cpu": "max", "$smp": "4", "$kernel": "K"},
     [Q, "-M", "virt", "-cpu", "max", "-smp", "4", "-m", "128M", "-nographic", "-semihosting", "-kernel", "K"]),
    ("deque-stxr-failure-check.sh", 'python3 scripts/qemu.py --smp 4 --append="workload=imbalanced"', {"": " K"},
     [*VIRT_A72, "-smp", "4", "-m", "128M", "-nographic", "-semihosting", "-kernel", "K", "-append",
      "workload=imbalanced"]),
    ("test-examples.sh", 'python3 "$root/scripts/qemu.py" --board rpi4 --no-semihosting --dtb "$dtb"',
     {"$root/": "", '"$dtb"': "D --append=slice_us=500 K"},
     [Q, "-M", "raspi4b", "-nographic", "-kernel", "K", "-dtb", "D", "-append", "slice_us=500"]),
]


class ShellCallers(unittest.TestCase):
    def test_each_call_gives_the_old_command_line(self):
        for script, call, values, old in SHELL_CALLERS:
            with self.subTest(script=script, call=call):
                self.assertIn(call, (SCRIPTS / script).read_text())
                for name, value in values.items():
                    call = call.replace(name, value) if name else call + value
                words = shlex.split(call)[2:]
                with FakeQemu() as fake:
                    subprocess.run(["python3", str(SCRIPTS / "qemu.py"), *words], env=fake.env, check=True)
                    self.assertEqual(groups(fake.argv()), groups(old))

    def test_print_and_version(self):
        printed = subprocess.run(["python3", str(SCRIPTS / "qemu.py"), "--print", "--append", "a b", "K", "--", "-x"],
                                 capture_output=True, text=True, check=True).stdout
        self.assertEqual(shlex.split(printed), qemu.command("K", append="a b", extra=["-x"]))
        with FakeQemu() as fake:
            out = subprocess.run(["python3", str(SCRIPTS / "qemu.py"), "--version"], env=fake.env,
                                 capture_output=True, text=True, check=True).stdout
        self.assertIn("version 10", out)


class PythonCallers(unittest.TestCase):
    def test_bench_command_lines_are_recorded_unchanged(self):
        # bench/results.json holds these strings: the order is part of the figure's name.
        bench = load("launcher_bench", "bench.py")
        self.assertEqual(bench.qemu_command("bench-sched", *bench.QEMU_SUITES["sched"][1:]),
                         [*VIRT_A72, "-smp", "1", "-icount", "shift=0,sleep=off", "-m", "128M", "-nographic",
                          "-semihosting", "-kernel", "target/aarch64-unknown-none/release/bench-sched",
                          "-append", "slice_us=1000000"])
        self.assertEqual(bench.qemu_command("beamcore", bench.icount_args(16), "workload=fib"),
                         [Q, "-M", "virt,gic-version=3", "-cpu", "cortex-a72", "-smp", "16", "-icount",
                          "shift=0,sleep=off", "-m", "128M", "-nographic", "-semihosting", "-kernel",
                          "target/aarch64-unknown-none/release/beamcore", "-append", "workload=fib"])
        self.assertEqual(bench.qemu_command("beamcore", bench.SCALE_ARGS, "workload=hold processes=0", memory="1G"),
                         [*VIRT_A72, "-smp", "4", "-m", "1G", "-nographic", "-semihosting", "-kernel",
                          "target/aarch64-unknown-none/release/beamcore", "-append", "workload=hold processes=0"])

    def test_profile_soak_and_the_suite_runner(self):
        profile = load("launcher_profile", "profile.py")
        self.assertEqual(qemu.command("E", **profile.QEMU_MACHINE, exec_log="F", append=profile.BOOTARGS),
                         [*VIRT_A72, "-smp", "1", "-icount", "shift=0,sleep=off", "-m", "128M", "-nographic",
                          "-semihosting", "-accel", "tcg,one-insn-per-tb=on", "-d", "exec,nochain", "-D", "F",
                          "-kernel", "E", "-append", "slice_us=1000000"])
        soak = load("launcher_soak", "soak.py")
        self.assertEqual(qemu.command(soak.KERNEL, smp=8, memory="1G", append="soak_s=5"),
                         [*VIRT_A72, "-smp", "8", "-m", "1G", "-nographic", "-semihosting", "-kernel",
                          str(soak.KERNEL), "-append", "soak_s=5"])
        runner = load("launcher_test_qemu", "test-qemu.py")
        spec = {"append": "ticks=3", "qemu_args": ["-device", "x"], "timeout": 1, "exit": 0, "expect": [],
                "forbid": [], "expect_count": []}
        seen = []
        with mock.patch.object(runner.subprocess, "run",
                               lambda cmd, **_: seen.append(cmd) or subprocess.CompletedProcess(cmd, 0, b"")):
            runner.run_case("T", "gicv3-smp16", spec, "a=1", memory="1G")
            runner.run_case("T", runner.RPI4_CONFIG, spec, "", dtb="D")
        self.assertEqual(seen[0], [Q, "-M", "virt,gic-version=3", "-cpu", "cortex-a72", "-smp", "16", "-m", "1G",
                                   "-nographic", "-semihosting", "-kernel", "T", "-append", "ticks=3 a=1",
                                   "-device", "x"])
        old_rpi4 = [Q, "-M", "raspi4b", "-nographic", "-kernel", "T", "-dtb", "D", "-semihosting", "-append",
                    "ticks=3", "-device", "x"]
        self.assertEqual(groups(seen[1]), groups(old_rpi4))
        self.assertEqual(qemu.gdb_wait(1234), ["-S", "-gdb", "tcp:127.0.0.1:1234"])


class OneLauncher(unittest.TestCase):
    def test_only_the_launcher_names_the_emulator(self):
        files = [ROOT / "Makefile", *(p for d in ("scripts", "template", "examples") for p in (ROOT / d).rglob("*")
                                      if p.is_file() and "target" not in p.parts)]
        naming = [str(p.relative_to(ROOT)) for p in files
                  if p.suffix in ("", ".sh", ".py", ".toml") and Q in p.read_text(errors="replace")]
        self.assertEqual(naming, ["scripts/qemu.py"])

    def test_no_caller_shadows_the_launcher(self):
        # A local named `qemu` in a module that imports the launcher makes every use of
        # `qemu.command` in that function an UnboundLocalError, found only when it runs.
        for path in SCRIPTS.glob("*.py"):
            tree = ast.parse(path.read_text())
            if not any(isinstance(n, ast.Import) and any(a.name == "qemu" for a in n.names) for n in tree.body):
                continue
            bound = [f"{path.name}:{n.lineno}" for n in ast.walk(tree)
                     if (isinstance(n, ast.Name) and n.id == "qemu" and isinstance(n.ctx, ast.Store))
                     or (isinstance(n, ast.arg) and n.arg == "qemu")]
            self.assertEqual(bound, [], "name the QEMU process or value otherwise")


if __name__ == "__main__":
    unittest.main(verbosity=2)
