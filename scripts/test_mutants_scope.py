#!/usr/bin/env python3
"""Host test of `make mutants`' scope (.cargo/mutants.toml): every glob it examines must name
Rust files that are not excluded. A scope that matches nothing made `make mutants` report
"Found 0 mutants to test" and pass; scripts/mutants.py now refuses such a scope, and this test
fails on it before anyone runs the (long) mutation run.

    python3 scripts/test_mutants_scope.py
"""

import importlib.util
import tempfile
import unittest
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("scope_mutants", SCRIPTS / "mutants.py")
mutants = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mutants)


class MutantsScope(unittest.TestCase):
    def test_the_committed_scope_names_files(self):
        self.assertEqual(mutants.scope_problems(), [])

    def test_the_run_examines_the_workspace_members(self):
        # From the root cargo-mutants examines the root package only, and none of the scope's
        # files is in it: without --workspace the run found 0 mutants.
        self.assertIn("--workspace", mutants.mutants_command(2))

    def test_a_glob_that_names_nothing_is_a_problem(self):
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            (root / "crates/a/src").mkdir(parents=True)
            (root / "crates/a/src/lib.rs").write_text("pub fn f() {}\n")
            (root / "crates/a/src/tests").mkdir()
            (root / "crates/a/src/tests/unit.rs").write_text("#[test] fn t() {}\n")
            config = root / "mutants.toml"
            config.write_text('examine_globs = ["crates/a/src/*.rs"]\n')
            self.assertEqual(mutants.scope_problems(config, root), [])
            config.write_text('examine_globs = ["crates/a/src/*.rs", "crates/gone/src/lib.rs"]\n')
            self.assertEqual(len(mutants.scope_problems(config, root)), 1, "a moved file")
            config.write_text('examine_globs = ["crates/a/src/tests/*.rs"]\nexclude_globs = ["crates/a/src/tests/**"]\n')
            self.assertEqual(len(mutants.scope_problems(config, root)), 1, "only excluded files")
            config.write_text("exclude_globs = []\n")
            self.assertEqual(len(mutants.scope_problems(config, root)), 1, "no scope at all")


if __name__ == "__main__":
    unittest.main(verbosity=2)
