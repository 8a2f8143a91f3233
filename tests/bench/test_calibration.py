#!/usr/bin/env python3
"""tests/bench/test_calibration.py SOURCE_DIR - how ps-bench calibrates
ps-sim's links (bench/ps_bench/calibration.py), without starting
anything: ps-sim's predictions are a stand-in function of the links it is
given, and the calibration runs return set times. Where ps-sim without a
machine limit comes within LINKS_BIND_WITHIN of the bulk run, the links'
rate is fitted to it and no machine is (no small-message or per-message
runs either); further off, the machine is fitted as before. The latency
is fitted to the median of LATENCY_CAL_RUNS p3 runs.
"""

import os
import sys
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(sys.argv[1] if len(sys.argv) > 1 else
                                os.path.join(os.path.dirname(
                                    os.path.abspath(__file__)), "..", ".."),
                                "bench"))
from ps_bench import calibration, simulate  # noqa: E402 (after the path)

PROBE = 0.975  # Gbit/s: what bulk TCP streams got through each link
P3_RUNS = ["p3"] * calibration.LATENCY_CAL_RUNS


def predicted(run, link):
    """A stand-in for ps-sim: the bulk run moves 74 MB per link at the
    link's rate, or at a quarter of the machine's where that is slower;
    p3 pays 400 latencies more."""
    rate = link["rate"]
    if link["machine"]:
        rate = min(rate, link["machine"] / 4.0)
    ms = 600.0 * PROBE / rate
    if run["preset"] == "p3":
        ms += 400 * (link["latency"] or 0.0) / 1000.0
    return {"iteration_ms": ms}


class Links:
    """The emulated cluster's tbf bucket (namespaces.Cluster's)."""
    @staticmethod
    def burst_bytes(gbps):
        return 74536


class Calibrate(unittest.TestCase):
    def calibrate(self, measured):
        """Calibrates at 1 Gbit/s on runs that measured `measured`
        (preset or size -> ms); the Simulator and the runs asked for."""
        plan = {"dilation": 1.0, "job": [], "mtu": 9000, "workers": 2,
                "servers": 2, "counts": {}}
        sim = simulate.Simulator(plan, "netns", "/nonexistent", "/tmp",
                                 Links)
        sim.once = predicted
        sim.link_rate[1.0] = PROBE
        sim.machine_probe = 9.9
        sim.small_bytes = 524288
        asked = []

        def run_one(name, run):
            what = run["partition_size"] or run["preset"]
            asked.append(what)
            ms = measured[what]
            if isinstance(ms, list):  # one per run, in turn
                ms = ms[asked.count(what) - 1]
            return {"status": "ok", "iter_ms": ms}
        calibration.Calibration(plan, sim, run_one, False).calibrate(1.0)
        return sim, asked

    def test_links_bind(self):
        # 4 % slower than the links alone: their rate is fitted
        sim, asked = self.calibrate({"baseline": 624.0,
                                     "p3": [680.0, 700.0, 730.0]})
        self.assertEqual(asked, ["baseline"] + P3_RUNS)
        self.assertEqual(sim.calibrated[1.0], 0.0)
        self.assertAlmostEqual(sim.link_rate[1.0], PROBE * 600.0 / 624.0,
                               places=4)
        self.assertEqual(sim.link_probe[1.0], PROBE)
        # the latency on the fitted links, the median p3 run's:
        # 624 + 0.4 * latency = 700
        self.assertAlmostEqual(sim.latency[1.0], 190.0, delta=0.1)
        link = sim.link(1.0)
        self.assertEqual(link["machine"], 0.0)
        self.assertAlmostEqual(link["rate"], sim.link_rate[1.0])

    def test_cores_bind(self):
        # 20 % slower: a machine of 4 x 0.975 x 600 / 750 Gbit/s
        sim, asked = self.calibrate({"baseline": 750.0, 524288: 740.0,
                                     65536: 760.0, "p3": 800.0})
        self.assertEqual(asked, ["baseline", 524288, 65536] + P3_RUNS)
        self.assertNotIn(1.0, sim.link_probe)
        self.assertEqual(sim.link_rate[1.0], PROBE)
        self.assertAlmostEqual(sim.calibrated[1.0],
                               4 * PROBE * 600.0 / 750.0, places=3)

    def test_links_explain_it(self):
        # as fast as the links allow: nothing to fit but the latency
        sim, asked = self.calibrate({"baseline": 590.0, "p3": 640.0})
        self.assertEqual(asked, ["baseline"] + P3_RUNS)
        self.assertEqual(sim.calibrated[1.0], 0.0)
        self.assertEqual(sim.link_rate[1.0], PROBE)
        self.assertNotIn(1.0, sim.link_probe)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
