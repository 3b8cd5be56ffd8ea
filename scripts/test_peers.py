#!/usr/bin/env python3
"""Host tests of scripts/peers.py's pure parts: reading the insn-count plugin's report (per
vCPU, the started process's lines only), tallying a QEMU `-d in_asm,exec,nochain` log (block
lengths, executions, logs fed in arbitrary pieces), the difference between two runs and the
ratio against the best peer. No QEMU, no peer runtime needed.

    python3 scripts/test_peers.py
"""

import importlib.util
import sys
import unittest
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("peers", SCRIPTS / "peers.py")
peers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peers)


def block(pc, length, symbol=""):
    lines = [f"0x{pc + 4 * i:08x}:  d503201f  nop" for i in range(length)]
    return "----------------\nIN: " + symbol + "\n" + "\n".join(lines) + "\n\n"


def executed(pc, cpu=0, cflags=0x200):
    return f"Trace {cpu}: 0x7f96ef400100 [81009331/{pc:016x}/00000001/{cflags:08x}] sym\n"


LOG = (block(0x400000, 3, "_start") + executed(0x400000) + block(0x40000C, 5) + executed(0x40000C)
       + executed(0x400000) + executed(0x40000C, cpu=1) + executed(0x40000C, cpu=1))


class TallyLog(unittest.TestCase):
    def test_sums_block_lengths_over_executions(self):
        tally = peers.Tally()
        tally.feed(LOG.encode(), final=True)
        self.assertEqual(tally.insns, 3 + 5 + 3 + 5 + 5)
        self.assertEqual(tally.blocks, 5)
        self.assertEqual(dict(tally.per_thread), {0: 11, 1: 10})
        self.assertEqual((tally.unknown, tally.resized), (0, 0))

    def test_any_split_of_the_log_gives_the_same_count(self):
        data = LOG.encode()
        for size in (1, 7, 50, 200, len(data)):
            tally = peers.Tally()
            for i in range(0, len(data), size):
                tally.feed(data[i:i + size])
            tally.feed(b"", final=True)
            self.assertEqual((tally.insns, tally.blocks), (21, 5), f"pieces of {size} bytes")

    def test_retranslation_applies_from_where_it_appears(self):
        log = block(0x1000, 4) + executed(0x1000) + block(0x1000, 2) + executed(0x1000) + executed(0x1000)
        tally = peers.Tally()
        tally.feed(log.encode(), final=True)
        self.assertEqual((tally.insns, tally.resized), (4 + 2 + 2, 1))

    def test_limited_translation_counts_its_limit_and_keeps_the_length(self):
        # QEMU re-translates one instruction alone (cflags count 1): it must not shorten the block.
        log = (block(0x2000, 6) + executed(0x2000) + block(0x2000, 1) + executed(0x2000, cflags=0x201)
               + executed(0x2000))
        tally = peers.Tally()
        tally.feed(log.encode(), final=True)
        self.assertEqual((tally.insns, tally.resized), (6 + 1 + 6, 0))

    def test_a_log_piece_may_begin_with_a_block(self):
        tally = peers.Tally()
        tally.feed(("IN: f\n0x00005000:  d503201f  nop\n0x00005004:  d65f03c0  ret\n\n"
                    + executed(0x5000) + block(0x6000, 3) + executed(0x6000)).encode(), final=True)
        self.assertEqual((tally.insns, tally.unknown), (2 + 3, 0))

    def test_execution_of_an_untranslated_block_is_reported(self):
        tally = peers.Tally()
        tally.feed(executed(0x3000).encode(), final=True)
        self.assertEqual((tally.unknown, tally.insns), (1, 0))

    def test_stream(self):
        import io
        tally = peers.tally_stream(io.BytesIO(LOG.encode()), chunk=16)
        self.assertEqual(tally.insns, 21)


class PluginReport(unittest.TestCase):
    REPORT = ("insn-count pid=41 vcpu=0 insns=1000\n"
              "insn-count pid=41 vcpu=2 insns=35\n"
              "insn-count pid=77 vcpu=0 insns=999999\n"  # a fork of 41 that exited without exec
              "insn-count pid=41 vcpu=2 insns=5\n")      # an index reused: adds up

    def test_counts_per_vcpu_of_the_started_process_only(self):
        self.assertEqual(dict(peers.plugin_counts(self.REPORT, 41)), {0: 1000, 2: 40})
        self.assertEqual(dict(peers.plugin_counts(self.REPORT, 77)), {0: 999999})

    def test_nothing_for_another_pid(self):
        self.assertEqual(dict(peers.plugin_counts(self.REPORT, 5)), {})

    def test_a_line_it_does_not_know_is_an_error(self):
        with self.assertRaises(ValueError):
            peers.plugin_counts("insn-count pid=1 vcpu=0 insns=12x\n", 1)
        with self.assertRaises(ValueError):
            peers.plugin_counts("CPU0: insns: 5\n", 1)

    def test_counted_sums_threads(self):
        self.assertEqual(peers.Counted(peers.plugin_counts(self.REPORT, 41)).insns, 1040)


class Arithmetic(unittest.TestCase):
    def test_start_up_cancels(self):
        start_up, per_round = 1_234_567, 700
        n1, n2 = 4000, 14000
        self.assertEqual(peers.per_operation(start_up + n1 * per_round, start_up + n2 * per_round, n1, n2, 2), 350)

    def test_rounds_must_grow(self):
        with self.assertRaises(ValueError):
            peers.per_operation(10, 20, 5, 5, 1)

    def test_busiest_thread_is_the_one_that_grew_most(self):
        # Thread 1 ran more in all (start-up) but thread 0 grew with the rounds.
        self.assertEqual(peers.busiest_thread({0: 100, 1: 900, 2: 5}, {0: 800, 1: 950}), 0)
        self.assertEqual(peers.busiest_thread({0: 100}, {0: 150, 3: 400}), 3)

    def test_ratio_over_the_fewest_peer(self):
        def fig(v):
            return {"value": v}
        results = {"sched.yield": fig(200), "peers.erlang.yield": fig(400), "peers.go.yield": fig(800),
                   "peers.tokio.yield": fig(500), "sched.message_hop": fig(300), "peers.go.hop": fig(100)}
        self.assertEqual(peers.ratios(results), {"peers.yield.beamcore_over_best": (0.5, ["erlang", "go", "tokio"]),
                                                 "peers.hop.beamcore_over_best": (3.0, ["go"])})


if __name__ == "__main__":
    sys.exit(unittest.main(verbosity=2))
