#!/usr/bin/env python3
"""tests/bench/test_simulate.py SOURCE_DIR - the links ps-bench hands
ps-sim (bench/ps_bench/simulate.py), without starting anything: every
prediction draws each message's latency with LATENCY_JITTER
(link.latency_jitter), as --set keys and as the INI lines of a run's
job.ini, unless the plan's job keys set the jitter themselves or ask for
links other than fair (which keep one latency and refuse a jitter).
"""

import os
import sys
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(sys.argv[1] if len(sys.argv) > 1 else
                                os.path.join(os.path.dirname(
                                    os.path.abspath(__file__)), "..", ".."),
                                "bench"))
from ps_bench import simulate  # noqa: E402 (after the path is set)


def simulator(job):
    plan = {"dilation": 1.0, "job": job, "mtu": 9000}
    return simulate.Simulator(plan, "netns", "/nonexistent", "/tmp",
                              lambda: None)


def keys(argv):
    return dict(kv.split("=", 1) for kv in argv[1::2])


class Jitter(unittest.TestCase):
    def test_every_prediction(self):
        sim = simulator([])
        sim.latency[1.0] = 261.0
        got = keys(sim.sets(sim.link(1.0)))
        self.assertEqual(got["link.latency_jitter"], "0.5")
        self.assertEqual(got["link.latency_us"], "261")
        self.assertIn("latency_jitter = 0.5", sim.ini(sim.link(1.0)))
        # separate hosts too (TCP vs RDMA predicted)
        got = keys(sim.sets(sim.host_link(10.0, "rdma")))
        self.assertEqual(got["link.latency_jitter"], "0.5")

    def test_the_jobs_own(self):
        for job in (["link.latency_jitter=0"], ["link.sharing=fifo"],
                    ["link.sharing = fifo"]):
            sim = simulator(job)
            self.assertNotIn("link.latency_jitter",
                             keys(sim.sets(sim.link(1.0))), job)
        sim = simulator(["link.sharing=fair"])
        self.assertIn("link.latency_jitter", keys(sim.sets(sim.link(1.0))))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
