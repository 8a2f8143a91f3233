#!/usr/bin/env python3
"""bench/tune_eval.py: ps-tune judged on ps-bench's emulated cluster.

Runs ps-bench (as root: it builds network namespaces) step by step into
OUT/STEP/ and writes OUT/summary.md from what the steps left:

  grid      ordo's partition x credit grid (256K..64M, powers of 4) at
            1 Gbit/s, measured once per pair
  tune      ps-tune, 10 trials, seeds 1, 2, 3, at 1 Gbit/s
  prior     the same with tune.prior = sim, 5 trials
  presets   every preset and ordo with the pair ps-tune found (seed 1,
            no prior) at 1 Gbit/s
  tune10    ps-tune with tune.prior = sim, 5 trials, seed 1, at 10 Gbit/s
            time-dilated x10
  presets10 every preset and ordo tuned at 10 Gbit/s, dilated x10
  faithful  ResNet-50's 1 Gbit/s presets dilated x10 (links at
            100 Mbit/s), against the undilated rows of `presets`
  presets25 every preset at 25 Gbit/s, dilated x25, ordo with the pair
            found at 10 Gbit/s

A step whose report.md exists is not run again (delete its directory to
redo it), so an interrupted evaluation goes on where it stopped.
`--summary` only writes the summary. Python 3 standard library only.
"""

import argparse
import csv
import os
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, os.path.join(SRC, "bench"))
from ps_bench import size_label  # noqa: E402 (after the path is set)
PRESETS = ["baseline", "tensorflow", "mxnet", "p3", "tictac-tio",
           "tictac-tao", "bytescheduler", "ordo"]
GRID = "256K,1M,4M,16M,64M"
STEPS = ["grid", "tune", "prior", "presets", "tune10", "presets10",
         "faithful", "presets25"]


def rows(path):
    try:
        with open(path) as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def tuned_pairs(out, step, seed="1"):
    """{model: 'P/C'}: the best pair of one seed's ps-tune run."""
    pairs = {}
    for r in rows(os.path.join(out, step, "tune.csv")):
        if r["seed"] == seed and r["best_partition"]:
            pairs[r["model"]] = "%s/%s" % (
                size_label(int(r["best_partition"])),
                size_label(int(r["best_credit"])))
    return pairs


def run_step(args, step):
    d = os.path.join(args.out, step)
    if os.path.isfile(os.path.join(d, "report.md")):
        print("tune_eval: %s done already (%s)" % (step, d), flush=True)
        return
    pb = [sys.executable, os.path.join(SRC, "bench", "ps-bench"),
          "--bin-dir", args.bin_dir, "--config",
          os.path.join(SRC, "conf", "bench", "tune.ini"),
          "--models", args.models]
    cmds = []
    if step == "grid":
        cmds.append(pb + ["--bandwidths", "1", "--presets", "ordo",
                          "--grid", GRID, "--no-plot", "--out", d])
    elif step in ("tune", "prior"):
        cmds.append(pb + ["--bandwidths", "1", "--tune", "--tune-seeds",
                          "1,2,3", "--out", d] +
                    (["--set", "tune.trials=10"] if step == "tune" else
                     ["--set", "tune.trials=5", "--set", "tune.prior=sim"]))
    elif step == "tune10":
        cmds.append(pb + ["--bandwidths", "10", "--dilation", "10",
                          "--tune", "--tune-seeds", "1", "--set",
                          "tune.trials=5", "--set", "tune.prior=sim",
                          "--out", d])
    elif step in ("presets", "presets10", "presets25"):
        bw, dil, src = {"presets": ("1", "1", "tune"),
                        "presets10": ("10", "10", "tune10"),
                        "presets25": ("25", "25", "tune10")}[step]
        pairs = tuned_pairs(args.out, src)
        # one ps-bench per model: each has its own tuned pair
        for m in args.models.split(","):
            if m not in pairs:
                sys.exit("tune_eval: no tuned pair for %s in %s/%s: run "
                         "that step first" % (m, args.out, src))
            # (ps-sim is calibrated at 1 Gbit/s only: the dilated rows'
            # calibration runs would take longer than the rows)
            cmds.append(pb[:-1] + [m, "--bandwidths", bw, "--dilation",
                                   dil, "--presets", ",".join(
                                       PRESETS + ["ordo@" + pairs[m]]),
                                   "--out", os.path.join(d, m)] +
                        ([] if bw == "1" else ["--no-calibration"]))
    elif step == "faithful":
        cmds.append(pb[:-1] + ["resnet50", "--bandwidths", "1",
                               "--dilation", "10", "--no-calibration",
                               "--out", d])
    for c in cmds:
        print("tune_eval: $ " + " ".join(c), flush=True)
        st = subprocess.call(c)
        if st not in (0, 1):  # 1: a run failed; the report says which
            sys.exit("tune_eval: ps-bench exited %d" % st)
    if step.startswith("presets"):
        with open(os.path.join(d, "report.md"), "w") as f:
            for m in args.models.split(","):
                with open(os.path.join(d, m, "report.md")) as g:
                    f.write(g.read() + "\n")


def results(out, step, models):
    """{(model, bw, preset): results.csv row} of a step."""
    got = {}
    paths = [os.path.join(out, step, "results.csv")] + [
        os.path.join(out, step, m, "results.csv") for m in models]
    for p in paths:
        for r in rows(p):
            if r["transport"] == "tcp":
                got[(r["model"], r["bandwidth_gbps"], r["preset"])] = r
    return got


def sps(r):
    try:
        return float(r["samples_per_s"])
    except (KeyError, TypeError, ValueError):
        return None


def switch_costs(args, w):
    """What a new pair cost in the trials of `tune` and `prior`: ps-tune's
    switch_s (docs/tune.md), by how the pair was applied."""
    cost = {}
    for step in ("tune", "prior"):
        d = os.path.join(args.out, step, "tune")
        for run in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            model = run.split("-")[0]
            for r in rows(os.path.join(d, run, "tune.csv")):
                if r["how"] in ("credit", "restart") and r["switch_s"]:
                    cost.setdefault((model, r["how"]), []).append(
                        float(r["switch_s"]))
    if not cost:
        return
    w("## What a new pair costs (switch_s of every trial of `tune` and "
      "`prior`)")
    w("")
    w("| model | credit, live: median s (min-max, n) | partition, restart: "
      "median s (min-max, n) |")
    w("|---|---:|---:|")
    for m in args.models.split(","):
        cells = []
        for how in ("credit", "restart"):
            v = sorted(cost.get((m, how), []))
            cells.append("%.3f (%.3f-%.3f, %d)" % (
                v[len(v) // 2], v[0], v[-1], len(v)) if v else "none")
        w("| %s | %s |" % (m, " | ".join(cells)))
    w("")


def summary(args):
    models = args.models.split(",")
    out = []
    w = out.append
    w("# ps-tune on the emulated cluster (bench/tune_eval.py)")
    w("")
    grid = results(args.out, "grid", models)
    best = {}
    for m in models:
        cells = {k[2]: sps(r) for k, r in grid.items() if k[0] == m}
        cells = {k: v for k, v in cells.items() if v}
        if not cells:
            continue
        top = max(cells, key=cells.get)
        best[m] = (top, cells[top])
        sizes = GRID.split(",")
        w("## %s: the grid at 1 Gbit/s (samples/s; rows partition, "
          "columns credit)" % m)
        w("")
        w("| partition \\ credit | " + " | ".join(sizes) + " |")
        w("|---|" + "---:|" * len(sizes))
        for p in sizes:
            line = []
            for c in sizes:
                v = cells.get("ordo@%s/%s" % (p, c))
                mark = "**" if "ordo@%s/%s" % (p, c) == top else ""
                line.append("%s%.1f%s" % (mark, v, mark) if v else "")
            w("| %s | " % p + " | ".join(line) + " |")
        w("")
        w("Best: %s, %.1f samples/s." % (top, cells[top]))
        w("")
    for step, what in (("tune", "10 trials, no prior"),
                       ("prior", "5 trials, tune.prior = sim"),
                       ("tune10", "5 trials, tune.prior = sim, 10 Gbit/s "
                        "dilated x10")):
        t = rows(os.path.join(args.out, step, "tune.csv"))
        if not t:
            continue
        w("## ps-tune, %s" % what)
        w("")
        w("| model | seed | trials | best pair | its samples/s | grid best "
          "| ratio | within 5% | first trial within 5% of the grid's "
          "best |")
        w("|---|---:|---:|---|---:|---:|---:|---|---:|")
        runs = {}
        for r in t:
            runs.setdefault((r["model"], r["seed"]), []).append(r)
        for (m, seed), tr in sorted(runs.items()):
            b = [r for r in tr if r["best_partition"] and
                 r["partition_bytes"] == r["best_partition"] and
                 r["credit_bytes"] == r["best_credit"] and
                 r["status"] == "ok"]
            if not b:
                w("| %s | %s | %d | failed | | | | | |" % (m, seed, len(tr)))
                continue
            v = max(float(r["samples_per_s"]) for r in b)
            pair = "%s/%s" % (size_label(int(b[0]["partition_bytes"])),
                              size_label(int(b[0]["credit_bytes"])))
            g = best.get(m, (None, None))[1] if step != "tune10" else None
            first = ""
            if g:
                ok = [int(r["trial"]) for r in tr if r["status"] == "ok" and
                      float(r["samples_per_s"]) >= 0.95 * g]
                first = str(min(ok)) if ok else "none"
            w("| %s | %s | %d | %s | %.1f | %s | %s | %s | %s |" % (
                m, seed, len(tr), pair, v, "%.1f" % g if g else "",
                "%.3f" % (v / g) if g else "",
                ("yes" if v >= 0.95 * g else "no") if g else "", first))
        w("")
    switch_costs(args, w)
    for step, bw in (("presets", "1"), ("presets10", "10"),
                     ("presets25", "25")):
        res = results(args.out, step, models)
        if not res:
            continue
        w("## Every preset and ordo tuned, %s Gbit/s%s (samples/s; CPU "
          "busy %%)" % (bw, "" if bw == "1" else " dilated x" + bw))
        w("")
        w("| model | " + " | ".join(PRESETS) + " | ordo tuned | tuned pair "
          "| tuned / p3 | tuned / best other |")
        w("|---|" + "---:|" * (len(PRESETS) + 1) + "---|---:|---:|")
        for m in models:
            mine = {k[2]: r for k, r in res.items() if k[0] == m}
            tuned = [k for k in mine if k.startswith("ordo@")]
            if not tuned:
                continue
            cells = []
            for p in PRESETS + tuned[:1]:
                r = mine.get(p)
                cells.append("%.1f (%s)" % (sps(r), r["cpu_busy_pct"][:4])
                             if r and sps(r) else "failed")
            t = sps(mine[tuned[0]])
            others = [sps(mine[p]) for p in PRESETS if p in mine and
                      sps(mine[p])]
            p3 = sps(mine.get("p3"))
            w("| %s | %s | %s | %s | %s |" % (
                m, " | ".join(cells), tuned[0][5:],
                "%.3f" % (t / p3) if t and p3 else "",
                "%.3f" % (t / max(others)) if t and others else ""))
        w("")
    und = results(args.out, "presets", models)
    dil = results(args.out, "faithful", models)
    if dil:
        w("## Faithfulness of time dilation: ResNet-50 at 1 Gbit/s, "
          "undilated (`presets`) and dilated x10 (`faithful`)")
        w("")
        w("| preset | undilated ms | CPU % | dilated x10 ms | CPU % | "
          "dilated / undilated |")
        w("|---|---:|---:|---:|---:|---:|")
        for p in PRESETS:
            a = und.get(("resnet50", "1", p))
            b = dil.get(("resnet50", "1", p))
            if not a or not b or not a["iteration_ms_median"] or \
                    not b["iteration_ms_median"]:
                continue
            x, y = float(a["iteration_ms_median"]), \
                float(b["iteration_ms_median"])
            w("| %s | %.1f | %s | %.1f | %s | %.3f |" % (
                p, x, a["cpu_busy_pct"][:4], y, b["cpu_busy_pct"][:4],
                y / x))
        w("")
    text = "\n".join(out) + "\n"
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(text)
    sys.stdout.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.
                                 RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default=os.path.join(SRC, "build-release"),
                    help="the built binaries (default build-release)")
    ap.add_argument("--out", default="tune-eval",
                    help="results directory (default ./tune-eval)")
    ap.add_argument("--models", default="resnet50,vgg16,densenet121",
                    help="comma-separated (default resnet50,vgg16,"
                    "densenet121)")
    ap.add_argument("--steps", default=",".join(STEPS),
                    help="comma-separated, in this order: " +
                    ", ".join(STEPS))
    ap.add_argument("--summary", action="store_true",
                    help="only write OUT/summary.md")
    args = ap.parse_args()
    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    if not args.summary:
        for s in args.steps.split(","):
            if s not in STEPS:
                sys.exit("tune_eval: unknown step '%s' (steps: %s)" %
                         (s, ", ".join(STEPS)))
            run_step(args, s)
            summary(args)
    summary(args)


if __name__ == "__main__":
    main()
