#!/usr/bin/env python3
"""bench/goodput_phases.py - where a 1 x 1 iteration's time goes.

    bench_goodput --sizes 1M --layouts 1x1 --trace DIR
    bench/goodput_phases.py DIR/1024K-1x1

Reads the timeline of one worker and one server (worker-0.json,
server-0.json: the trace events of runtime/trace.h, timestamps in
microseconds of one clock across processes) and prints, per iteration
after the first few, the median and mean of each step of the critical
path, which add up to the iteration:

    gate     push ready -> handed to the transport (worker)
    push     handed over -> the server's update starts
    update   the update (the optimizer over the partition)
    send     update end -> the new values handed to the transport
    params   handed over -> received by the worker
    next     received -> the next push ready (copy-out, the application)
"""
import json
import os
import statistics
import sys


def load(path):
    """A timeline part: a JSON array that may lack its closing bracket."""
    text = open(path).read().strip().rstrip(",")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text += "]"
    return json.loads(text)


def by_iteration(events, tid, ph):
    out = {}
    for e in events:
        if e.get("tid") == tid and e.get("ph") == ph:
            it = e.get("args", {}).get("iteration")
            if it is not None:
                out[it] = e
    return out


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    d = argv[1]
    try:
        w = load(os.path.join(d, "worker-0.json"))
        s = load(os.path.join(d, "server-0.json"))
    except (OSError, ValueError) as e:
        sys.stderr.write("goodput_phases: %s\n" % e)
        return 1
    # lanes (runtime/trace.h): 3 push, 4 receive, 5 update, 6 send
    push = by_iteration(w, 3, "X")
    recv = by_iteration(w, 4, "i")
    upd = by_iteration(s, 5, "X")    # iteration: the version it makes
    send = by_iteration(s, 6, "X")   # iteration: the version it sends
    steps = {k: [] for k in ("gate", "push", "update", "send", "params",
                             "next", "iteration")}
    for k in sorted(push):
        if k < 3 or not all(k + 1 in x for x in (push, recv, upd, send)):
            continue
        p, pn = push[k]["args"], push[k + 1]["args"]
        u, sd, r = upd[k + 1], send[k + 1]["args"], recv[k + 1]
        steps["gate"].append(p["sent_us"] - p["ready_us"])
        steps["push"].append(u["ts"] - p["sent_us"])
        steps["update"].append(u["dur"])
        steps["send"].append(sd["sent_us"] - (u["ts"] + u["dur"]))
        steps["params"].append(r["ts"] - sd["sent_us"])
        steps["next"].append(pn["ready_us"] - r["ts"])
        steps["iteration"].append(pn["ready_us"] - p["ready_us"])
    if not steps["iteration"]:
        sys.stderr.write("goodput_phases: no complete iteration in %s "
                         "(one worker, one server, one partition?)\n" % d)
        return 1
    print("%d iterations; us per iteration" % len(steps["iteration"]))
    print("| step | median | mean |")
    print("|---|---:|---:|")
    for k, v in steps.items():
        print("| %s | %.0f | %.0f |" % (k, statistics.median(v),
                                        statistics.mean(v)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
