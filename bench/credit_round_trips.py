#!/usr/bin/env python3
"""bench/credit_round_trips.py - how long a credit window waits for its
acknowledgements, from a timeline (a run's timeline.json or ps-sim's
sim-timeline.json: the same format, common/trace_format.h).

    bench/credit_round_trips.py TIMELINE [TIMELINE...]

A credit window gets its bytes back when the receiver's acknowledgement
reaches the sender, and that acknowledgement rides behind whatever the
receiver has already handed to the same connection. Per direction and
peer pair, this prints the median and 90th percentile, in ms, of

    there   handed to the transport -> received at the other end
    back    received -> its acknowledgement back at the sender

for pushes (worker -> server; the worker's push lane has each push's
sent_us and acked_us, the server's receive lane its arrival) and for
parameters (server -> worker; the server's send lane has sent_us, the
worker's receive lane the arrival, and the server's receive lane each
PARAMS_ACK, recorded when the parameters go under a credit window).
Iterations after the first two and before the last are used. Set two
timelines side by side to compare a run with ps-sim's prediction of it.
"""
import bisect
import json
import sys


def load(path):
    """The trace events of a timeline (an array, or {"traceEvents": [...]})."""
    ev = json.load(open(path))
    return ev["traceEvents"] if isinstance(ev, dict) else ev


def quantiles(values):
    """'median / p90 ms (n)' of microsecond values, or '-' when none."""
    if not values:
        return "-"
    v = sorted(values)
    return "%.1f / %.1f (%d)" % (v[len(v) // 2] / 1e3,
                                 v[min(len(v) - 1, len(v) * 9 // 10)] / 1e3,
                                 len(v))


def round_trips(ev):
    """{(kind, sender, receiver): {'there': [...], 'back': [...]}} in us;
    kind 'push' or 'params', sender and receiver "worker N"/"server N"."""
    names = {e["pid"]: e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    pid_of = {n: p for p, n in names.items()}

    def lane(e):
        return lanes.get((e.get("pid"), e.get("tid")))

    its = sorted({e["args"]["iteration"] for e in ev
                  if e.get("ph") == "X" and lane(e) in ("push", "send")
                  and "iteration" in e.get("args", {})})
    keep = set(its[2:-1]) if len(its) > 3 else set(its)
    pushes_in = {}  # (worker N, partition, iteration) -> (server pid, ts)
    params_in = {}  # (worker pid, partition, iteration) -> ts
    acks = {}      # (server pid, worker, partition) -> [ts]
    for e in ev:
        if e.get("ph") != "i" or lane(e) != "receive":
            continue
        a = e.get("args", {})
        name = e.get("name", "")
        if name.startswith("params ack from worker "):
            acks.setdefault((e["pid"], name.rsplit(" ", 1)[1],
                             a.get("partition")), []).append(e["ts"])
        elif name.startswith("push from worker "):
            pushes_in[(name.rsplit(" ", 1)[1], a.get("partition"),
                       a.get("iteration"))] = (e["pid"], e["ts"])
        elif names.get(e["pid"], "").startswith("worker"):
            params_in[(e["pid"], a.get("partition"),
                       a.get("iteration"))] = e["ts"]
    for v in acks.values():
        v.sort()
    out = {}
    for e in ev:
        if e.get("ph") != "X" or lane(e) not in ("push", "send"):
            continue
        a = e.get("args", {})
        if a.get("iteration") not in keep or "sent_us" not in a:
            continue
        me = names.get(e["pid"], "")
        part, it, sent = a.get("partition"), a.get("iteration"), a["sent_us"]
        if lane(e) == "push":
            got = pushes_in.get((me.split()[1], part, it))
            if got is None:
                continue
            to, r = names[got[0]], got[1]
            key = ("push", me, to)
            back = a["acked_us"] - r if a.get("acked_us") else None
        else:
            to = e.get("name", "").replace("params to ", "")
            r = params_in.get((pid_of.get(to), part, it))
            if r is None:
                continue
            key = ("params", me, to)
            times = acks.get((e["pid"], to.split()[1], part), [])
            i = bisect.bisect_left(times, r)  # the first ack after it
            back = times[i] - r if i < len(times) else None
        d = out.setdefault(key, {"there": [], "back": []})
        d["there"].append(r - sent)
        if back is not None:
            d["back"].append(back)
    return out


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    for path in argv[1:]:
        try:
            trips = round_trips(load(path))
        except (OSError, ValueError, KeyError, TypeError) as err:
            print("credit_round_trips: %s: not a readable timeline: %s"
                  % (path, err), file=sys.stderr)
            return 1
        print("%s\n  %-6s %-9s -> %-9s %-22s %-22s" %
              (path, "", "from", "to", "there ms med/p90 (n)",
               "back ms med/p90 (n)"))
        for (kind, src, dst), d in sorted(trips.items()):
            print("  %-6s %-9s -> %-9s %-22s %-22s" %
                  (kind, src, dst, quantiles(d["there"]),
                   quantiles(d["back"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
