#!/usr/bin/env python3
"""tests/tools/release_order.py OUT_DIR GATE - checks that a replay job
released its transfers in the computed order (tests/integration/presets.sh
over tcp, tests/rdma/presets.sh over rdma).

OUT_DIR is the job's output.dir (order.csv, placement.csv, timeline.json);
GATE is "counter" (TicTac's presets: strictly in order per sender, receiver
and iteration) or "priority" (the other presets: when a sender released a
transfer, nothing already waiting in its gate had a better priority).
Exits 1 with the first violation (2: bad arguments or input).

--break-order first moves one worker's most urgent push of its last
iteration to after all its others (ready before them all): the check must
then fail, which shows it is not vacuous."""
import csv, json, sys
args = sys.argv[1:]
break_order = args[:1] == ["--break-order"]
args = args[1:] if break_order else args
if len(args) != 2 or args[1] not in ("counter", "priority"):
    print("usage: release_order.py [--break-order] OUT_DIR counter|priority")
    sys.exit(2)
out, gate = args
prio = {int(r["tensor"]): int(r["priority"]) for r in csv.DictReader(open(out + "/order.csv"))}
ev = json.load(open(out + "/timeline.json"))
lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
parts = list(csv.DictReader(open(out + "/placement.csv")))
server_of = {int(r["partition"]): int(r["server"]) for r in parts}
# a fused partition is as urgent as its most urgent tensor
part_prio = {int(r["partition"]): min(prio[t] for t in range(int(r["tensor"]), int(r["tensor"]) + int(r["ntensors"]))) for r in parts}

def lane_events(name):
    return [e for e in ev if e.get("ph") == "X" and lanes[(e["pid"], e["tid"])] == name]

def check_counter(events, receiver):
    # strict order per (sender, receiver, iteration)
    seqs = {}
    for e in events:
        key = (e["pid"], receiver(e), e["args"]["iteration"])
        seqs.setdefault(key, []).append((e["args"]["sent_us"], part_prio[e["args"]["partition"]]))
    for key, s in seqs.items():
        s.sort()
        order = [p for _, p in s]
        assert order == sorted(order), (key, order[:20])
    return f"{len(seqs)} (sender, receiver, iteration) sequences in order"

def check_priority(events):
    # work-conserving priority: when a sender released a transfer, nothing
    # already waiting in its gate (ready before the previous release) had a
    # strictly better priority. Suffix minima over ready times (Fenwick).
    import bisect
    checked = 0
    for pid in {e["pid"] for e in events}:
        # sent times have microsecond resolution: releases in the same
        # microsecond are taken in priority order (the order the gate
        # released them in)
        s = sorted((e["args"]["sent_us"], part_prio[e["args"]["partition"]], e["args"]["ready_us"]) for e in events if e["pid"] == pid)
        s = [(t, r, p) for t, p, r in s]
        readys = sorted({r for _, r, _ in s})
        n, INF = len(readys), float("inf")
        tree = [INF] * (n + 1)
        # A transfer counts as waiting at the previous release only if it
        # was ready in an earlier microsecond: one that became ready in the
        # same microsecond as that release may have entered the gate just
        # after it (a flake of the clock's resolution, not of the gate).
        for k in range(len(s) - 1, 0, -1):
            i, best = bisect.bisect_left(readys, s[k - 1][0]), INF
            while i > 0:
                best, i = min(best, tree[i]), i - (i & -i)
            assert best >= s[k][2], (pid, k, s[k][2], best)
            checked += 1
            i = bisect.bisect_left(readys, s[k][1]) + 1
            while i <= n:
                tree[i], i = min(tree[i], s[k][2]), i + (i & -i)
    return f"{checked} releases checked against everything waiting"

sends, pushes = lane_events("send"), lane_events("push")
assert sends and pushes, "no transfers in the timeline"
if break_order:
    pid = pushes[0]["pid"]
    last = max(e["args"]["iteration"] for e in pushes if e["pid"] == pid)
    mine = [e for e in pushes
            if e["pid"] == pid and e["args"]["iteration"] == last]
    x = min(mine, key=lambda e: part_prio[e["args"]["partition"]])
    # a worse one bound for the same server, or the counter check has
    # nothing to compare x with
    if not any(part_prio[e["args"]["partition"]] > part_prio[x["args"]["partition"]]
               and server_of[e["args"]["partition"]] == server_of[x["args"]["partition"]]
               for e in mine):
        print("--break-order: no push to break the order with")
        sys.exit(2)
    x["args"]["ready_us"] = min(e["args"]["ready_us"] for e in mine) - 1
    x["args"]["sent_us"] = max(e["args"]["sent_us"] for e in mine) + 1
if gate == "counter":
    print("parameter sends:", check_counter(sends, lambda e: e["name"]))
    print("gradient pushes:", check_counter(pushes, lambda e: server_of[e["args"]["partition"]]))
else:
    print("parameter sends:", check_priority(sends))
    print("gradient pushes:", check_priority(pushes))
