#!/usr/bin/env python3
"""tests/bench/test_credit_round_trips.py SOURCE_DIR PS_SIM - the credit
windows' round trips (bench/credit_round_trips.py) on a timeline ps-sim
writes for MobileNet-v2 on 2 x 2 at 1 Gbit/s: every peer pair both ways,
each push and each parameter send found at its receiver and its
acknowledgement back after it, a PARAMS_ACK for every parameter send
under a parameters' credit (its servers record them in their receive
lane) and none without one.
"""

import os
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
SRC, PS_SIM = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SRC, "bench"))
import credit_round_trips  # noqa: E402 (after the path is set)


def timeline(tmp, *sets):
    """ps-sim's timeline of the job with these --set keys, loaded."""
    argv = [PS_SIM, "--set", "model.file=" + os.path.join(
        SRC, "conf/models/mobilenet_v2.json"), "--set", "cluster.workers=2",
        "--set", "cluster.servers=2", "--set", "train.iterations=8",
        "--set", "link.bandwidth_gbps=1", "--set", "link.latency_us=300",
        "--set", "link.sharing=fair", "--set", "output.dir=" + tmp]
    for s in sets:
        argv += ["--set", s]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return credit_round_trips.load(os.path.join(tmp, "sim-timeline.json"))


class RoundTrips(unittest.TestCase):
    def test_params_under_a_credit(self):
        with tempfile.TemporaryDirectory() as tmp:
            ev = timeline(tmp, "scheduling.preset=bytescheduler")
        trips = credit_round_trips.round_trips(ev)
        pairs = {(w, s) for w in ("worker 0", "worker 1")
                 for s in ("server 0", "server 1")}
        self.assertEqual({(k[1], k[2]) for k in trips if k[0] == "push"},
                         pairs)
        self.assertEqual({(k[2], k[1]) for k in trips if k[0] == "params"},
                         pairs)
        acks = sum(1 for e in ev if e.get("name", "").startswith(
            "params ack from worker "))
        sends = sum(1 for e in ev if e.get("ph") == "X" and
                    e.get("name", "").startswith("params to worker"))
        self.assertEqual(acks, sends)  # one per send, the first ones too
        for key, d in trips.items():
            self.assertTrue(d["there"], key)
            self.assertEqual(len(d["back"]), len(d["there"]), key)
            self.assertTrue(all(t >= 0 for t in d["there"] + d["back"]),
                            key)
            # a trip takes at least the latency (300 us, jitter +-50 %)
            self.assertGreaterEqual(min(d["there"]), 150, key)
            self.assertGreaterEqual(min(d["back"]), 150, key)

    def test_no_params_credit_no_acks(self):
        with tempfile.TemporaryDirectory() as tmp:
            ev = timeline(tmp, "scheduling.preset=bytescheduler",
                          "scheduling.params_credit_size=0")
        trips = credit_round_trips.round_trips(ev)
        self.assertFalse(any(e.get("name", "").startswith("params ack")
                             for e in ev))
        for key, d in trips.items():
            self.assertTrue(d["there"], key)
            if key[0] == "params":
                self.assertEqual(d["back"], [], key)
            else:
                self.assertEqual(len(d["back"]), len(d["there"]), key)

    def test_not_a_timeline(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write("{not json")
            f.flush()
            self.assertEqual(credit_round_trips.main(["x", f.name]), 1)
        self.assertEqual(credit_round_trips.main(["x"]), 2)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
