"""ps-bench --explain RUN_DIR: where one finished run's time went, read
from its timeline.json. Per process over the measured part (from the
first op of iteration --warmup): the share of time computing and waiting
for parameters; per sender lane (push: the workers' gradients, send: the
servers' parameters) the messages, megabytes, mean wait at the gate, mean
time in flight and the share of the window with a transfer in flight.
"""

import json
import os


def _union_us(iv):
    iv.sort()
    tot, cur = 0, None
    for a, b in iv:
        if cur is None or a > cur[1]:
            if cur:
                tot += cur[1] - cur[0]
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    if cur:
        tot += cur[1] - cur[0]
    return tot


def explain(run_dir, warmup):
    """Per process, over the measured part of a run's timeline.json (from
    the first op of iteration `warmup`, 0-based, to the last event): share
    of time computing and waiting for parameters; per sender lane (push:
    worker gradients, send: server parameters) the messages, MB, mean time
    a transfer waited at the gate (ready -> handed to the transport), mean
    time in flight (handed -> acknowledged, where the timeline has the
    acknowledgement) and the share of the window with at least one
    transfer in flight."""
    with open(os.path.join(run_dir, "timeline.json")) as f:
        ev = json.load(f)
    lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    procs = {e["pid"]: e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e["name"] == "process_name"}
    starts = [e["ts"] for e in ev if e.get("ph") == "X" and
              lanes.get((e["pid"], e["tid"])) == "compute" and
              e.get("args", {}).get("iteration") == warmup]
    if not starts:
        raise ValueError("no iteration %d in %s" % (warmup, run_dir))
    t0 = min(starts)
    t1 = max(e["ts"] + e.get("dur", 0) for e in ev if e.get("ph") in
             ("X", "i"))
    win = max(1, t1 - t0)
    rows = []
    for pid in sorted(procs):
        by = {}
        for e in ev:
            if e["pid"] == pid and e.get("ph") == "X" and e["ts"] >= t0:
                by.setdefault(lanes.get((pid, e["tid"])), []).append(e)
        row = {"process": procs[pid],
               "compute_pct": 100.0 * sum(e["dur"] for e in
                                          by.get("compute", [])) / win,
               "wait_pct": 100.0 * sum(e["dur"] for e in
                                       by.get("wait", [])) / win}
        for ln in ("push", "send"):
            es = by.get(ln, [])
            if not es:
                continue
            a = [e["args"] for e in es]
            row[ln + "_msgs"] = len(a)
            row[ln + "_mb"] = sum(x["bytes"] for x in a) / 1e6
            row[ln + "_gate_ms"] = sum(x["sent_us"] - x["ready_us"]
                                       for x in a) / len(a) / 1000.0
            acked = [x for x in a if "acked_us" in x]
            if acked:
                row[ln + "_flight_ms"] = sum(
                    x["acked_us"] - x["sent_us"] for x in acked) / \
                    len(acked) / 1000.0
                row[ln + "_inflight_pct"] = 100.0 * _union_us(
                    [(x["sent_us"], x["acked_us"]) for x in acked]) / win
        rows.append(row)
    return win / 1000.0, rows


def print_explain(run_dir, warmup):
    win, rows = explain(run_dir, warmup)
    print("%s: measured window %.0f ms (from iteration %d, 0-based)" %
          (run_dir, win, warmup))
    cols = ["process", "compute_pct", "wait_pct", "push_msgs", "push_mb",
            "push_gate_ms", "push_flight_ms", "push_inflight_pct",
            "send_msgs", "send_mb", "send_gate_ms"]
    print("| " + " | ".join(cols) + " |")
    print("|---" + "|---:" * (len(cols) - 1) + "|")
    for r in rows:
        print("| " + " | ".join(
            r[c] if c == "process" else
            ("%d" % r[c] if c.endswith("msgs") else "%.1f" % r[c])
            if c in r else "-" for c in cols) + " |")
