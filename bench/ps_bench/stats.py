"""The statistics of the report: per configuration the medians over its
repetitions (iteration time, samples/s, straggler share, NIC rates, CPU
use), and the speedup over the reference preset with a 95% percentile
bootstrap interval of the ratio of means (bootstrap_ratio), over the
repetitions or, with one repetition, over the iterations. (One run's own
numbers from its metrics are runs.summarize_run's.)
"""

import math
import statistics


def bootstrap_ratio(base, other, rng, n=2000):
    """95% percentile-bootstrap interval of mean(base)/mean(other)."""
    if len(base) < 2 and len(other) < 2:
        return None
    vals = []
    for _ in range(n):
        b = [rng.choice(base) for _ in base]
        o = [rng.choice(other) for _ in other]
        vals.append(statistics.mean(b) / statistics.mean(o))
    vals.sort()
    return vals[int(0.025 * n)], vals[int(0.975 * n) - 1]


def aggregate(results, plan, predictions, rng):
    """The table's rows: one per model x bandwidth x transport x preset
    that ran (results: one record per run), in the plan's order, rdma
    rows after tcp ones. Per row, over its runs that completed: the
    medians of the iteration time (and its range), samples/s, the
    straggler share, every host's NIC rates and the CPU's use, the mean
    efficiency; ps-sim's prediction (predictions: simulate.Simulator's
    cache); the speedup over the plan's reference preset with its 95%
    bootstrap interval (rng: the resamples'), over the repetitions where
    both have two or more, else over their iterations."""
    rows = []
    keys = []
    for r in results:
        k = (r["model"], r["bw"], r["transport"], r["preset"])
        if k not in keys:
            keys.append(k)
    order = {p: i for i, p in enumerate(plan["presets"])}
    bws = plan["bandwidths"]
    # rdma rows that ran sit at the port's rate, after the tcp ones
    keys.sort(key=lambda k: ([m for m, _ in plan["models"]].index(
        k[0]), k[2] != "tcp", bws.index(k[1]) if k[1] in bws
        else len(bws), order[k[3]]))
    by = {}
    for r in results:
        by.setdefault((r["model"], r["bw"], r["transport"], r["preset"]),
                      []).append(r)
    for k in keys:
        runs = by[k]
        ok = [r for r in runs if r["status"] == "ok"]
        a = {"model": k[0], "bw": k[1], "transport": k[2],
             "preset": k[3], "runs": len(runs), "ok": len(ok),
             "failed_reasons": "; ".join(r["reason"] for r in runs
                                         if r["status"] != "ok")}
        if ok:
            its = [r["iter_ms"] for r in ok]
            a["iter_ms"] = statistics.median(its)
            a["iter_min"], a["iter_max"] = min(its), max(its)
            a["spread_pct"] = 100.0 * (max(its) - min(its)) / \
                a["iter_ms"] if a["iter_ms"] else 0.0
            a["samples_per_s"] = statistics.median(
                r["samples_per_s"] for r in ok)
            effs = [r["efficiency"] for r in ok
                    if math.isfinite(r["efficiency"])]
            a["efficiency"] = statistics.mean(effs) if effs else None
            a["straggler"] = statistics.median(r["straggler"] for r in ok)
            a["rep_ms"] = its
            a["all_iters"] = [x for r in ok for x in r["iters_ms"]]
            hosts = {}
            for r in ok:
                for h, v in r["nic"].items():
                    hosts.setdefault(h, []).append(v)
            a["nic"] = {h: (statistics.median(v[0] for v in vs),
                            statistics.median(v[1] for v in vs))
                        for h, vs in hosts.items()}
            a["nic_max"] = max((max(v) for v in a["nic"].values()),
                               default=None)
            cpus = [r["cpu_pct"] for r in ok if r["cpu_pct"] is not None]
            a["cpu_pct"] = statistics.median(cpus) if cpus else None
        sim = predictions.get(k)
        a["sim"] = sim
        rows.append(a)
    # speedups over the reference preset
    for a in rows:
        base = [b for b in rows
                if b["preset"] == plan["reference"] and
                (b["model"], b["bw"], b["transport"]) ==
                (a["model"], a["bw"], a["transport"])]
        a["speedup"] = a["ci"] = None
        a["ci_over"] = ""
        if base and "iter_ms" in base[0] and "iter_ms" in a:
            b = base[0]
            a["speedup"] = b["iter_ms"] / a["iter_ms"]
            if len(b["rep_ms"]) >= 2 and len(a["rep_ms"]) >= 2:
                a["ci"] = bootstrap_ratio(b["rep_ms"], a["rep_ms"],
                                          rng)
                a["ci_over"] = "repetitions"
            else:
                a["ci"] = bootstrap_ratio(b["all_iters"], a["all_iters"],
                                          rng)
                a["ci_over"] = "iterations"
    return rows
