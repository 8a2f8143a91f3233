#!/usr/bin/env python3
"""examples/pytorch/train.py - a PyTorch training script, data-parallel over
ordo with ordo.torch (docs/pytorch.md). Its ordo lines are marked "# ordo".

    ps-launch --set server.optimizer=none --set train.iterations=100 \\
        -- python3 examples/pytorch/train.py --iterations 100 --optimizer adamw

Each worker trains on its share of every global batch (--batch samples,
split evenly); the servers average the gradients and every worker's own
optimizer steps on the average, so the run computes what one process
training on the whole batches computes: `train.py --reference` is that one
process, for comparison (tests/integration/pytorch.sh compares the losses).

Data: a synthetic classification set made from a fixed seed (no download):
--samples points of --features dimensions, --classes classes; for the image
models, every iteration's global batch of 3x32x32 images (CIFAR-sized) and
labels is drawn on the fly from a generator seeded with the iteration.
Models:
  mlp           two linear layers;
  branchy       the mlp with a frozen input layer and a branch used only on
                even iterations (its parameters get no gradient on odd ones);
  resnet18, mobilenet_v2
                torchvision's (weights=None, --classes outputs), train mode.
--ddp trains with torch DDP (gloo) instead of ordo, for comparison: started
once per worker with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set
(bench/torch_bench.py does). Prints "loss IT VALUE" per iteration (a
worker: "worker R loss IT VALUE", the loss of its share; the shares are
equal, so the workers' mean is the batch's loss), with --timing also
"worker R time IT SECONDS" (the monotonic clock when the iteration ended),
and "final IT checksum" (the sum of all parameters) at the end.
"""
import argparse
import math
import sys
import time

import torch

ot = None  # ordo.torch: imported by main() unless --reference or --ddp


def options(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", action="store_true",
                    help="train in one process on the whole batches (no ordo)")
    ap.add_argument("--ddp", action="store_true",
                    help="train with torch DDP (gloo backend; RANK, WORLD_SIZE, "
                    "MASTER_ADDR, MASTER_PORT from the environment), not ordo")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--model", choices=["mlp", "branchy"] + IMAGE_MODELS,
                    default="mlp")
    ap.add_argument("--optimizer", choices=["sgd", "adam", "adamw"], default="sgd")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--schedule", choices=["none", "cosine"], default="none")
    ap.add_argument("--clip", type=float, default=0.0,
                    help="clip the gradients' norm to this (0: no clipping)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--accumulate", type=int, default=1,
                    help="backward() passes per step, each on a part of the batch")
    ap.add_argument("--samples", type=int, default=2048)
    ap.add_argument("--features", type=int, default=32)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--timing", action="store_true",
                    help="also print when each iteration ended")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch's intra-op threads (0: torch's default)")
    args = ap.parse_args(argv)
    if args.reference and args.ddp:
        ap.error("--reference and --ddp exclude each other")
    for name in ("batch", "accumulate", "samples", "features", "classes"):
        if getattr(args, name) < 1:
            ap.error("--%s must be at least 1" % name)
    if args.iterations < 0 or args.threads < 0:
        ap.error("--iterations and --threads must be 0 or more")
    return args


IMAGE_MODELS = ["resnet18", "mobilenet_v2"]


def dataset(args):
    if args.model in IMAGE_MODELS:
        return None, None  # drawn per iteration (batch())
    g = torch.Generator().manual_seed(1)
    centers = torch.randn(args.classes, args.features, generator=g) * 0.3
    y = torch.randint(0, args.classes, (args.samples,), generator=g)
    x = centers[y] + torch.randn(args.samples, args.features, generator=g)
    return x, y


class Branchy(torch.nn.Module):
    def __init__(self, f, c):
        super().__init__()
        self.embed = torch.nn.Linear(f, 64)
        self.embed.requires_grad_(False)  # frozen: never sent
        self.body = torch.nn.Linear(64, 64)
        self.branch = torch.nn.Linear(64, 64)  # used on even iterations
        self.head = torch.nn.Linear(64, c)
        self.it = 0

    def forward(self, x):
        h = torch.relu(self.body(torch.relu(self.embed(x))))
        if self.it % 2 == 0:
            h = h + torch.relu(self.branch(h))
        return self.head(h)


def model(args):
    torch.manual_seed(0)
    if args.model in IMAGE_MODELS:
        import torchvision
        return getattr(torchvision.models, args.model)(weights=None,
                                                       num_classes=args.classes)
    if args.model == "branchy":
        return Branchy(args.features, args.classes)
    return torch.nn.Sequential(torch.nn.Linear(args.features, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, args.classes))


def optimizer(args, net):
    params = [p for p in net.parameters() if p.requires_grad]
    if args.optimizer == "adam":
        return torch.optim.Adam(params, lr=args.lr)
    if args.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=args.lr, weight_decay=args.weight_decay)
    return torch.optim.SGD(params, lr=args.lr, momentum=args.momentum)


def batch(x, y, it, args):
    if args.model in IMAGE_MODELS:
        g = torch.Generator().manual_seed(1000003 * (it + 1))
        return (torch.randn(args.batch, 3, 32, 32, generator=g),
                torch.randint(0, args.classes, (args.batch,), generator=g))
    n = args.samples // args.batch
    k = it % n
    return x[k * args.batch:(k + 1) * args.batch], y[k * args.batch:(k + 1) * args.batch]


def say(line):
    # one write per line: the workers of a job share ps-launch's stdout
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def image_model(name, batch_size):
    """For model/generate.py (MODULE:FUNCTION): the model and an input of
    batch_size CIFAR-sized images."""
    net = model(options(["--model", name]))
    net.train()
    return net, torch.randn(batch_size, 3, 32, 32)


def fx_resnet18(batch_size):
    return image_model("resnet18", batch_size)


def fx_mobilenet_v2(batch_size):
    return image_model("mobilenet_v2", batch_size)


def train(args, distributed):
    if args.threads:
        torch.set_num_threads(args.threads)
    x, y = dataset(args)
    net = model(args)
    opt = optimizer(args, net)
    rank, size = 0, 1
    if args.ddp:
        import torch.distributed as dist
        dist.init_process_group("gloo")  # env:// (RANK, WORLD_SIZE, MASTER_*)
        rank, size = dist.get_rank(), dist.get_world_size()
        net = torch.nn.parallel.DistributedDataParallel(net)
    elif distributed:
        opt = ot.DistributedOptimizer(opt, named_parameters=net.named_parameters(),  # ordo
                                      backward_passes_per_step=args.accumulate, model=net)
        rank, size = ot.rank(), ot.size()  # ordo
    sched = None
    if args.schedule == "cosine":
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.iterations)
    if args.batch % (size * args.accumulate):
        sys.exit("train.py: --batch %d does not split evenly over %d workers x %d passes"
                 % (args.batch, size, args.accumulate))
    if args.batch % size:
        sys.exit("train.py: --batch %d does not split evenly over %d workers" % (args.batch, size))
    share = args.batch // size
    for it in range(args.iterations):
        xb, yb = batch(x, y, it, args)
        xb, yb = xb[rank * share:(rank + 1) * share], yb[rank * share:(rank + 1) * share]
        if args.model == "branchy":
            net.it = it
        opt.zero_grad()
        loss = 0.0
        for xm, ym in zip(xb.chunk(args.accumulate), yb.chunk(args.accumulate)):
            part = torch.nn.functional.cross_entropy(net(xm), ym) / args.accumulate
            part.backward()
            loss += part.detach()
        if args.clip > 0:
            if distributed and not args.ddp:
                opt.synchronize()  # ordo: clip the averaged gradients
            torch.nn.utils.clip_grad_norm_(net.parameters(), args.clip)
        opt.step()
        if sched:
            sched.step()
        say("%sloss %d %.9g" % ("worker %d " % rank if distributed else "", it, loss.item()))
        if args.timing:
            say("%stime %d %.6f" % ("worker %d " % rank if distributed else "", it,
                                    time.monotonic()))
    if args.ddp:
        torch.distributed.destroy_process_group()
    elif distributed:
        ot.shutdown()  # ordo: the last step's parameters in place
    total = sum(p.detach().double().sum().item() for p in net.parameters())
    say("%sfinal %d %.9g" % ("worker %d " % rank if distributed else "", args.iterations, total))


def main():
    global ot
    if not {"--reference", "--ddp"} & set(sys.argv):
        import ordo.torch as ot  # ordo
        ot.init()  # ordo: takes ps-launch's --config/--set out of sys.argv
    args = options()
    if args.samples < args.batch:
        sys.exit("train.py: --samples must be at least --batch")
    if args.reference:
        train(args, False)
        return 0
    train(args, True)  # over ordo, or torch DDP with --ddp
    return 0


if __name__ == "__main__":
    sys.exit(main())
