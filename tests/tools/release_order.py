#!/usr/bin/env python3
"""tests/tools/release_order.py OUT_DIR - checks that a replay job released
its transfers as its scheduling settings say, direction by direction
(tests/integration/presets.sh over tcp, tests/rdma/presets.sh over rdma).

OUT_DIR is the job's output.dir (config.ini, order.csv, placement.csv,
timeline.json). config.ini's scheduling.push_gate applies to the workers'
gradient pushes, params_gate to the servers' parameter sends:
  counter  - strictly in order per sender, receiver and iteration (TicTac);
  priority - when a sender released a transfer, nothing already waiting in
             its gate had a better priority;
  fifo     - no transfer left before one that became ready earlier (pushes
             leave in the order the backward pass produced them).
With scheduling.params_barrier = on, no parameter send of version v became
ready on a server before that server finished its last update to v.
Exits 1 with the first violation (2: bad arguments or input).

--break-order first moves one worker's most urgent push of its last
iteration to after all its others (ready before them all): the check must
then fail, which shows it is not vacuous."""
import configparser, csv, json, sys
args = sys.argv[1:]
break_order = args[:1] == ["--break-order"]
args = args[1:] if break_order else args
if len(args) != 1:
    print("usage: release_order.py [--break-order] OUT_DIR")
    sys.exit(2)
out = args[0]
ini = configparser.ConfigParser(interpolation=None, strict=False)
try:
    ini.read_string(open(out + "/config.ini").read())
except OSError as err:
    print(f"release_order.py: {err}")
    sys.exit(2)
sched = ini["scheduling"]
push_gate, params_gate = sched["push_gate"], sched["params_gate"]
barrier = sched["params_barrier"] == "on"
rows = list(csv.DictReader(open(out + "/order.csv")))
ev = json.load(open(out + "/timeline.json"))
lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
parts = list(csv.DictReader(open(out + "/placement.csv")))
server_of = {int(r["partition"]): int(r["server"]) for r in parts}

def part_priorities(column):
    # a fused partition is as urgent as its most urgent tensor
    prio = {int(r["tensor"]): int(r[column]) for r in rows}
    return {int(r["partition"]): min(prio[t] for t in range(int(r["tensor"]), int(r["tensor"]) + int(r["ntensors"]))) for r in parts}

push_prio, params_prio = part_priorities("push_priority"), part_priorities("params_priority")

def lane_events(name):
    return [e for e in ev if e.get("ph") == "X" and lanes[(e["pid"], e["tid"])] == name]

def check_counter(events, receiver, part_prio):
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

def check_fifo(events, part_prio):
    # per sender: nothing released in a later microsecond than a transfer
    # that became ready after it
    checked = 0
    for pid in {e["pid"] for e in events}:
        s = sorted((e["args"]["sent_us"], e["args"]["ready_us"]) for e in events if e["pid"] == pid)
        latest_ready, i = -1, 0
        while i < len(s):
            j = i
            while j < len(s) and s[j][0] == s[i][0]:
                assert s[j][1] >= latest_ready, (pid, s[j], latest_ready)
                checked += 1
                j += 1
            latest_ready = max(latest_ready, max(r for _, r in s[i:j]))
            i = j
    return f"{checked} releases in the order they became ready"
def check_priority(events, part_prio):
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

def check_barrier(sends):
    # a server's sends of version v became ready after its last update to v
    ends = {}
    for e in lane_events("update"):
        key = (e["pid"], e["args"]["iteration"])
        ends[key] = max(ends.get(key, 0), e["ts"] + e["dur"])
    checked = 0
    for e in sends:
        key = (e["pid"], e["args"]["iteration"])
        if e["args"]["iteration"] == 0 or key not in ends:
            continue
        assert e["args"]["ready_us"] >= ends[key], ("barrier broken", key, e["args"]["partition"], e["args"]["ready_us"], ends[key])
        checked += 1
    assert checked, "no parameter send after an update in the timeline"
    return f"{checked} sends ready after their server's last update"

def check(events, gate, receiver, part_prio):
    if gate == "counter":
        return check_counter(events, receiver, part_prio)
    if gate == "priority":
        return check_priority(events, part_prio)
    return check_fifo(events, part_prio)

sends, pushes = lane_events("send"), lane_events("push")
assert sends and pushes, "no transfers in the timeline"
if break_order:
    pid = pushes[0]["pid"]
    last = max(e["args"]["iteration"] for e in pushes if e["pid"] == pid)
    mine = [e for e in pushes
            if e["pid"] == pid and e["args"]["iteration"] == last]
    x = min(mine, key=lambda e: push_prio[e["args"]["partition"]])
    # a worse one bound for the same server, or the counter check has
    # nothing to compare x with
    if push_gate == "counter" and not any(
            push_prio[e["args"]["partition"]] > push_prio[x["args"]["partition"]]
            and server_of[e["args"]["partition"]] == server_of[x["args"]["partition"]]
            for e in mine):
        print("--break-order: no push to break the order with")
        sys.exit(2)
    x["args"]["ready_us"] = min(e["args"]["ready_us"] for e in mine) - 1
    x["args"]["sent_us"] = max(e["args"]["sent_us"] for e in mine) + 1
try:
    print(f"parameter sends ({params_gate}):", check(sends, params_gate, lambda e: e["name"], params_prio))
    print(f"gradient pushes ({push_gate}):", check(pushes, push_gate, lambda e: server_of[e["args"]["partition"]], push_prio))
    if barrier:
        print("barrier:", check_barrier(sends))
except AssertionError as err:
    print("FAIL: released out of order:", err)
    sys.exit(1)
