#!/usr/bin/env python3
"""python/examples/torch_digits.py - trains a small network on scikit-learn's
digits (8 x 8 images of handwritten digits, 10 classes; Debian's
python3-sklearn ships the data set) with PyTorch and ordo.

As a worker of a job (ps-launch --worker, which passes --config/--set): the
global batch of each iteration is split between the workers; every
parameter's gradient is pushed from a backward hook the moment autograd has
computed it (the last layer's first, as in any framework), and before each
layer's forward a pre-hook waits for that layer's new parameters, which ordo
writes into the parameters' own memory. The servers average the pushes and
apply SGD with momentum (server/optimizer.c: v = m v + g; w -= lr v, which
is torch.optim.SGD's rule).

    torch_digits.py --reference --iterations N --lr LR --momentum M

runs the same model, the same initial values and the same global batches in
one process with torch.optim.SGD, for comparison (tests/integration/torch.sh
compares the losses).

Both print "loss IT VALUE" per iteration (a worker: "worker R loss IT
VALUE", the loss of its share of the batch; equal shares, so the workers'
mean is the batch's loss) and the accuracy on the held-out 20% of the data
at the end.
"""
import argparse
import sys
import time

import numpy as np
import torch
from sklearn.datasets import load_digits

BATCH = 64


def data():
    d = load_digits()
    x = d.data.astype(np.float32)
    y = d.target.astype(np.int64)
    order = np.random.RandomState(0).permutation(len(x))
    x, y = x[order], y[order]
    n_train = int(0.8 * len(x))
    mean, std = x[:n_train].mean(0), x[:n_train].std(0) + 1e-6
    x = (x - mean) / std
    return (torch.from_numpy(x[:n_train]), torch.from_numpy(y[:n_train]),
            torch.from_numpy(x[n_train:]), torch.from_numpy(y[n_train:]))


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 10))


def batch(x, y, it):
    n = len(x) // BATCH
    k = it % n
    return x[k * BATCH:(k + 1) * BATCH], y[k * BATCH:(k + 1) * BATCH]


def accuracy(net, x, y):
    with torch.no_grad():
        return (net(x).argmax(1) == y).float().mean().item()


def say(line):
    # one write per line: the workers of a job share ps-launch's stdout
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def reference(args):
    xtr, ytr, xte, yte = data()
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum)
    for it in range(args.iterations):
        xb, yb = batch(xtr, ytr, it)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(xb), yb)
        loss.backward()
        opt.step()
        print("loss %d %.7f" % (it, loss.item()))
    print("accuracy %.4f" % accuracy(net, xte, yte))


def worker(argv):
    import ordo
    cfg = ordo.Config(argv=argv)
    c = ordo.Client(cfg)
    xtr, ytr, xte, yte = data()
    net = model()
    params = list(net.parameters())
    tensors = []
    for k, p in enumerate(params):
        # ordo writes new parameters into the parameter's own memory
        tensors.append(c.declare("p%d" % k, p.data.numpy().reshape(-1)))
    # two gradient buffers per parameter: one may still be in flight while
    # the next iteration's is filled (include/ordo/ordo.h, Buffers)
    grads = [[np.zeros(p.numel(), np.float32) for _ in range(2)] for p in params]
    state = {"it": 0}

    def push_hook(k):
        def hook(g):
            buf = grads[k][state["it"] % 2]
            buf[:] = g.detach().reshape(-1).numpy()
            c.push(tensors[k], buf, state["it"])
            return g
        return hook

    for k, p in enumerate(params):
        p.register_hook(push_hook(k))
    index = {id(p): k for k, p in enumerate(params)}

    def wait_hook(module, inputs):
        for p in module.parameters(recurse=False):
            c.wait(tensors[index[id(p)]], state["it"])

    for m in net.modules():
        if any(True for _ in m.parameters(recurse=False)):
            m.register_forward_pre_hook(wait_hook)

    c.start()
    rank, workers = c.rank, c.num_workers
    share = BATCH // workers
    it = c.start_iteration()
    started = time.monotonic()
    while c.next_iteration(it):
        state["it"] = it
        xb, yb = batch(xtr, ytr, it)
        xb, yb = xb[rank * share:(rank + 1) * share], yb[rank * share:(rank + 1) * share]
        for p in params:
            p.grad = None
        loss = torch.nn.functional.cross_entropy(net(xb), yb)
        loss.backward()  # the hooks push every gradient
        say("worker %d loss %d %.7f" % (rank, it, loss.item()))
        it += 1
    for k in range(len(params)):  # the last update
        c.wait(tensors[k], it)
    say("worker %d accuracy %.4f" % (rank, accuracy(net, xte, yte)))
    c.finish(it, seconds=time.monotonic() - started, last_loss=loss.item())
    c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", action="store_true",
                    help="train in one process with torch.optim.SGD")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.9)
    args, rest = ap.parse_known_args()
    if args.reference:
        reference(args)
    else:
        worker(rest)


if __name__ == "__main__":
    sys.exit(main())
