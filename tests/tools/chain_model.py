#!/usr/bin/env python3
"""Writes an ordo model file (conf/models/README.md's format) for a chain
of layers with one parameter tensor each, named t0, t1, ... as
tests/tools/exact_worker declares them: a training job of exact_worker can
then name it as model.file, so that the scheduler has a model to simulate
(scheduling.*_size = auto) and orders to compute.

usage: chain_model.py SIZES [US_PER_MELEM] > model.json
  SIZES         comma-separated element counts, as EXACT_WORKER_SIZES
  US_PER_MELEM  op time per million elements (default 200), at least 5 us
"""
import json
import sys


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write(__doc__)
        return 2
    sizes = [int(s) for s in argv[1].split(",")]
    rate = float(argv[2]) if len(argv) == 3 else 200.0
    if not sizes or min(sizes) <= 0:
        sys.stderr.write("chain_model.py: sizes must be positive\n")
        return 2

    def us(n):
        return max(5.0, rate * n / 1e6)

    ops, prev = [], None
    for i, n in enumerate(sizes):
        ops.append({"name": "f%d" % i, "kind": "forward", "time_us": us(n),
                    "reads": ["t%d" % i], "deps": [prev] if prev else []})
        prev = "f%d" % i
    ops.append({"name": "loss", "kind": "forward", "time_us": 5.0,
                "deps": [prev]})
    ops.append({"name": "loss.bwd", "kind": "backward", "time_us": 5.0,
                "deps": ["loss"]})
    prev = "loss.bwd"
    for i in reversed(range(len(sizes))):
        ops.append({"name": "b%d" % i, "kind": "backward",
                    "time_us": 2 * us(sizes[i]), "grads": ["t%d" % i],
                    "deps": [prev]})
        prev = "b%d" % i
    json.dump({"format": "ordo-model", "version": 1, "name": "chain",
               "description": "a chain of %d layers (tests)" % len(sizes),
               "batch": 32, "times": {"source": "measured",
                                      "note": "made up for tests"},
               "tensors": [{"name": "t%d" % i, "shape": [n]}
                           for i, n in enumerate(sizes)],
               "ops": ops}, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
