#!/usr/bin/env python3
"""tests/tools/handover_order.py STDERR_LOG [--iterations N] [--want T=K,...]
- checks, from one worker's stderr under the host emulation of CUDA
(tests/cuda/emulated_cuda.c with EMULATED_CUDA_TRACE=1, the client at
log.level = debug), that ps_client_push_stream hands each partition of a
device tensor to the gate as soon as its own copy to pinned memory has run:
every hand-over line comes right after the copy of its own bytes, with no
other copy between them, so the copies of the partitions after it had not
run yet and its send overlaps them. The emulation's copy lines and the
client's debug lines are written by the same thread in program order.

--iterations N: every (iteration, tensor) pushed, N iterations.
--want T=K,...: tensor T handed on in K partitions each iteration, each once.
--copies-are-pushes: every device-to-host copy is a push's (no copy of the
application's own), so every copy is followed by its hand-over.
Prints a summary; exits 1 with the first violation, 2 on bad arguments."""
import re
import sys

args = sys.argv[1:]
if not args or args[0].startswith("-"):
    print(__doc__)
    sys.exit(2)
log, iterations, want, copies_are_pushes = args[0], None, {}, False
i = 1
while i < len(args):
    if args[i] == "--iterations":
        iterations = int(args[i + 1])
        i += 2
    elif args[i] == "--want":
        want = {k: int(v) for k, v in (kv.split("=") for kv in args[i + 1].split(","))}
        i += 2
    elif args[i] == "--copies-are-pushes":
        copies_are_pushes = True
        i += 1
    else:
        print(f"handover_order.py: unknown argument {args[i]}")
        sys.exit(2)

copy = re.compile(r"^emulated CUDA: device-to-(?:host|device) copy of (\d+) bytes ran$")
part = re.compile(r"tensor '([^']+)' partition (\d+) \((\d+) bytes\) of "
                  r"iteration (\d+) copied from the device and handed to the gate$")
fused = re.compile(r"tensor '([^']+)' \((\d+) bytes, in fused partition (\d+)\) "
                   r"of iteration (\d+) copied from the device and handed to the gate$")
events = []  # ("copy", bytes) or ("hand", bytes, tensor, partition, iteration)
for line in open(log):
    line = line.rstrip("\n")
    m = copy.match(line)
    if m:
        events.append(("copy", int(m.group(1))))
        continue
    m = part.search(line)
    if m:
        events.append(("hand", int(m.group(3)), m.group(1), int(m.group(2)), int(m.group(4))))
        continue
    m = fused.search(line)
    if m:
        events.append(("hand", int(m.group(2)), m.group(1), int(m.group(3)), int(m.group(4))))

def fail(msg):
    print(f"handover_order.py: {msg}")
    sys.exit(1)

hands = [e for e in events if e[0] == "hand"]
copies = [e for e in events if e[0] == "copy"]
if not hands:
    fail("no hand-over lines (log.level = debug? EMULATED_CUDA_TRACE=1?)")
for k, e in enumerate(events):
    prev = events[k - 1] if k else None
    if e[0] == "hand" and not (prev and prev[0] == "copy" and prev[1] == e[1]):
        fail(f"tensor {e[2]} partition {e[3]} of iteration {e[4]} handed on after {prev}, "
             "not right after its own copy")
    if copies_are_pushes and e[0] == "copy":
        nxt = events[k + 1] if k + 1 < len(events) else None
        if not (nxt and nxt[0] == "hand" and nxt[1] == e[1]):
            fail(f"a copy of {e[1]} bytes is followed by {nxt}, not by its hand-over")
got = {}
for e in hands:
    got.setdefault((e[4], e[2]), []).append(e[3])
for (it, t), parts in got.items():
    if len(parts) != len(set(parts)):
        fail(f"iteration {it} tensor {t}: a partition handed on twice: {parts}")
    if t in want and len(parts) != want[t]:
        fail(f"iteration {it} tensor {t}: {len(parts)} partitions, want {want[t]}")
if iterations is not None:
    its = sorted({it for it, _ in got})
    tensors = {t for _, t in got}
    if len(its) != iterations or len(got) != iterations * len(tensors):
        fail(f"{len(got)} (iteration, tensor) pushes over iterations {its}, "
             f"want every one of {len(tensors)} tensors in {iterations} iterations")
    if want and tensors != set(want):
        fail(f"tensors {sorted(tensors)}, want {sorted(want)}")
print(f"{len(hands)} partitions over {len({it for it, _ in got})} iterations, each handed to "
      f"the gate right after its own copy and before the next copy ran ({len(copies)} copies)")
