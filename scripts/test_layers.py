#!/usr/bin/env python3
"""Tests of scripts/check-layers.py: the stack as it stands passes, and each kind of violation a
new dependency could bring fails (the check is seen to fail, not merely to run)."""

import importlib.util
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("beamcore_check_layers", HERE / "check-layers.py")
layers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(layers)


class Layers(unittest.TestCase):
    def test_the_tree_as_it_stands_passes(self):
        found = layers.manifests()
        self.assertEqual(layers.problems_of(found), [])
        names = {name for name, _ in found.values()}
        for name in ("beamcore", "beamcore-hal", "beamcore-mm", "beamcore-smp", "beamcore-boot"):
            self.assertIn(name, names)

    def test_a_lower_layer_naming_a_higher_one_fails(self):
        found = layers.manifests()
        name, deps = found["kernel/mm"]
        found["kernel/mm"] = (name, deps + ["beamcore-smp"])
        problems = layers.problems_of(found)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("beamcore-mm", problems[0])
        self.assertIn("a layer above it", problems[0])

    def test_two_crates_of_one_layer_may_not_lean_on_each_other(self):
        found = layers.manifests()
        name, deps = found["boot"]
        found["boot"] = (name, deps + ["beamcore-mm"])
        problems = layers.problems_of(found)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("its own layer", problems[0])

    def test_a_pure_crate_naming_the_kernel_fails(self):
        found = layers.manifests()
        name, deps = found["crates/deque"]
        found["crates/deque"] = (name, deps + ["beamcore-hal"])
        problems = layers.problems_of(found)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("below the kernel", problems[0])

    def test_a_new_kernel_crate_must_be_placed(self):
        found = layers.manifests()
        found["kernel/net"] = ("beamcore-net", ["beamcore-hal"])
        problems = layers.problems_of(found)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("in no layer", problems[0])


if __name__ == "__main__":
    unittest.main()
