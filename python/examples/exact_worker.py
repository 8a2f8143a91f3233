#!/usr/bin/env python3
"""python/examples/exact_worker.py - tests/tools/exact_worker.c in Python,
through the ordo package (ctypes over libordo.so.0): a worker that ps-launch
runs (ps-launch --worker ...; the arguments are --config/--set), declares
tensors of 1000 and 4097 float32 values in array.array buffers, pushes
integer gradients and checks every parameter after every iteration:

  initial   w0[k][j] = (j % 1000) + 1000 k
  gradient  g_r[k][j](i) = W ((j + k) % 13 + i) + 2 r     (worker r of W)
  with lr = 1, momentum = 0: w_{i+1} = w_i - (W ((j + k) % 13 + i) + W - 1)

Prints "exact: worker R of W: N values checked, M wrong" and exits 0 only
when M is 0.
"""
import array
import sys

import ordo

SIZES = [1000, 4097]


def main():
    cfg = ordo.Config(argv=sys.argv[1:])
    c = ordo.Client(cfg)
    values = [array.array("f", ((j % 1000) + 1000 * k for j in range(n)))
              for k, n in enumerate(SIZES)]
    tensors = [c.declare("t%d" % k, v) for k, v in enumerate(values)]
    c.start()
    rank, workers = c.rank, c.num_workers
    expect = [[float(x) for x in v] for v in values]
    checked = wrong = 0
    it = c.start_iteration()
    while c.next_iteration(it):
        grads = [array.array("f", (workers * ((j + k) % 13 + it) + 2 * rank
                                   for j in range(n)))
                 for k, n in enumerate(SIZES)]
        for k in reversed(range(len(SIZES))):
            c.push(tensors[k], grads[k], it)
        for k, n in enumerate(SIZES):
            c.wait(tensors[k], it + 1)
            for j in range(n):
                expect[k][j] -= workers * ((j + k) % 13 + it) + workers - 1
                checked += 1
                wrong += values[k][j] != expect[k][j]
        it += 1
    c.finish(it)
    c.close()
    # one write for the whole line: workers share the launcher's stdout,
    # and an unbuffered print() writes the text and its newline apart
    sys.stdout.write("exact: worker %d of %d: %d values checked, %d wrong\n"
                     % (rank, workers, checked, wrong))
    sys.stdout.flush()
    return 0 if wrong == 0 and checked > 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ordo.Error as e:
        print("exact_worker.py: %s" % e, file=sys.stderr)
        sys.exit(1)
