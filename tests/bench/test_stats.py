#!/usr/bin/env python3
"""tests/bench/test_stats.py SOURCE_DIR - ps-bench's statistics
(bench/ps_bench/stats.py), without starting anything: the percentile
bootstrap interval of a ratio of means is deterministic under a seed
(pinned to the values ps-bench has always given, so that a change in how
it resamples cannot pass unnoticed), holds the ratio itself, and is None
with fewer than two samples on both sides; aggregate() makes one row per
configuration in the plan's order with the medians over its repetitions,
the speedup over the reference and its interval over the repetitions
(over the iterations with one repetition), and keeps failed runs' reasons.
"""

import os
import random
import sys
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(sys.argv[1] if len(sys.argv) > 1 else
                                os.path.join(os.path.dirname(
                                    os.path.abspath(__file__)), "..", ".."),
                                "bench"))
from ps_bench import stats  # noqa: E402 (after the path is set)

BASE = [100.0, 104.0, 98.0, 101.0]
OTHER = [80.0, 83.0, 79.0, 82.0]


class Bootstrap(unittest.TestCase):
    def test_pinned(self):
        self.assertEqual(stats.bootstrap_ratio(BASE, OTHER, random.Random(1)),
                         (1.2103658536585367, 1.28125))
        self.assertEqual(stats.bootstrap_ratio(BASE, OTHER, random.Random(1),
                                               n=200),
                         (1.2073170731707317, 1.279503105590062))
        self.assertEqual(stats.bootstrap_ratio([5.0], [4.0, 4.5],
                                               random.Random(7)),
                         (1.1111111111111112, 1.25))

    def test_deterministic(self):
        a = stats.bootstrap_ratio(BASE, OTHER, random.Random(3))
        b = stats.bootstrap_ratio(BASE, OTHER, random.Random(3))
        self.assertEqual(a, b)
        lo, hi = a
        ratio = (sum(BASE) / len(BASE)) / (sum(OTHER) / len(OTHER))
        self.assertLess(lo, ratio)
        self.assertLess(ratio, hi)

    def test_constant_samples(self):
        self.assertEqual(stats.bootstrap_ratio([2.0, 2.0], [1.0, 1.0],
                                               random.Random(1)), (2.0, 2.0))

    def test_too_few(self):
        self.assertIsNone(stats.bootstrap_ratio([1.0], [2.0],
                                                random.Random(1)))


def record(preset, rep, iter_ms, status="ok"):
    rec = {"model": "m", "bw": 1.0, "transport": "tcp", "preset": preset,
           "rep": rep, "status": status, "reason": "" if status == "ok"
           else "w0 exited 1"}
    if status == "ok":
        rec.update({"iter_ms": iter_ms, "iters_ms": [iter_ms - 1, iter_ms + 1],
                    "samples_per_s": 1000.0 / iter_ms, "efficiency": 0.9,
                    "straggler": 0.1, "nic": {"w0": (0.5, 0.25)},
                    "cpu_pct": 50.0})
    return rec


PLAN = {"models": [("m", "m.json")], "bandwidths": [1.0],
        "presets": ["baseline", "ordo", "p3"], "reference": "baseline"}


class Aggregate(unittest.TestCase):
    def test_rows(self):
        results = [record("ordo", 1, 80.0), record("baseline", 1, 100.0),
                   record("p3", 1, 0, "failed"), record("baseline", 2, 110.0),
                   record("ordo", 2, 90.0), record("baseline", 3, 104.0),
                   record("ordo", 3, 84.0)]
        sim = {("m", 1.0, "tcp", "ordo"): {"iteration_ms": 70.0}}
        rows = stats.aggregate(results, PLAN, sim, random.Random(1))
        self.assertEqual([r["preset"] for r in rows],
                         ["baseline", "ordo", "p3"])
        base, ordo, p3 = rows
        self.assertEqual((base["runs"], base["ok"], base["iter_ms"]),
                         (3, 3, 104.0))
        self.assertEqual((ordo["iter_ms"], ordo["iter_min"],
                          ordo["iter_max"]), (84.0, 80.0, 90.0))
        self.assertEqual(ordo["speedup"], 104.0 / 84.0)
        self.assertEqual(ordo["ci_over"], "repetitions")
        lo, hi = ordo["ci"]
        self.assertLessEqual(lo, hi)
        self.assertEqual(ordo["sim"], {"iteration_ms": 70.0})
        self.assertEqual(ordo["nic"], {"w0": (0.5, 0.25)})
        self.assertEqual(base["speedup"], 1.0)
        self.assertEqual((p3["ok"], p3["failed_reasons"]), (0, "w0 exited 1"))
        self.assertIsNone(p3["speedup"])
        self.assertNotIn("iter_ms", p3)
        again = stats.aggregate(results, PLAN, sim, random.Random(1))
        self.assertEqual(again[1]["ci"], ordo["ci"])

    def test_one_repetition(self):
        rows = stats.aggregate([record("baseline", 1, 100.0),
                                record("ordo", 1, 80.0)], PLAN, {},
                               random.Random(1))
        self.assertEqual(rows[1]["ci_over"], "iterations")
        self.assertIsNotNone(rows[1]["ci"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
