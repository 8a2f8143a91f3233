"""ps-bench --tune: ps-tune (docs/tune.md) on the emulated cluster, once
per model x bandwidth x seed, after the links are measured and ps-sim
calibrated there (its prior, with tune.prior = sim); each trial's job
started through `ps-bench --launch-job` (launch_job), which puts every
node in its namespace as a run does; ps-tune's results read back
(read_tune) and reported (report.md, tune.csv).
"""

import csv
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time

from .common import CFG_STR_MAX, UsageError, fmt_dur, fnum, log
from .namespaces import kill_netns_processes, netns_prefix, node_sets
from .report import report_head
from .runs import Run, job_ini
from .scenario import bw_label, size_label


def read_tune(d, dilation):
    """ps-tune's tune.csv and best.ini in d: {"trials": [...], "best":
    the best pair's trial, "top": the best measured trial}; rates x
    dilation (undilated)."""
    out = {"trials": []}
    try:
        with open(os.path.join(d, "tune.csv")) as f:
            for row in csv.DictReader(f):
                ok = row["status"] == "ok"
                out["trials"].append({
                    "trial": int(row["trial"]),
                    "partition": int(row["partition_bytes"]),
                    "credit": int(row["credit_bytes"]), "ok": ok,
                    "samples_per_s": float(row["samples_per_s"]) * dilation
                    if ok else 0.0,
                    "mean": row["mean"], "sd": row["sd"]})
    except (OSError, ValueError, KeyError):
        return out
    try:
        with open(os.path.join(d, "best.ini")) as f:
            text = f.read()
    except OSError:
        return out
    # "measured N time(s) (first at trial I): mean X samples/s": the
    # pair's value is the mean of its trials
    m = re.search(r"\(first at trial (\d+)\): mean ([0-9.]+) samples/s", text)
    mean = re.search(r"model: ([0-9.]+) samples/s", text)
    byid = {t["trial"]: t for t in out["trials"]}
    if m and int(m.group(1)) in byid:
        b = dict(byid[int(m.group(1))])
        b["samples_per_s"] = float(m.group(2)) * dilation
        b["mean"] = float(mean.group(1)) * dilation if mean else None
        out["best"] = b
        ok = [t for t in out["trials"] if t["ok"]]
        out["top"] = max(ok, key=lambda t: t["samples_per_s"])
    return out


def launch_job(state_path, args):
    """ps-bench --launch-job STATE ARGS...: what ps-launch does with ARGS
    (a scheduler, cluster.servers servers, cluster.workers workers), each
    node in its namespace of the emulated cluster that STATE describes
    (written by --tune). ps-tune's launcher. Exit status as ps-launch's:
    0 when every process exited 0, else the first failure's."""
    with open(state_path) as f:
        st = json.load(f)
    worker, rest, i = "ps-worker", [], 0
    while i < len(args):
        if args[i] == "--worker" and i + 1 < len(args):
            worker = args[i + 1]
            i += 2
            continue
        if args[i].startswith("--worker="):
            worker = args[i][9:]
        else:
            rest.append(args[i])
        i += 1
    nodes = [dict(zip(("name", "role", "ns", "addr"), n))
             for n in st["nodes"]]
    sched = [n for n in nodes if n["role"] == "scheduler"][0]
    children = []

    def spawn(node, binary, extra, pass_fds=()):
        path = binary if "/" in binary else os.path.join(st["bin_dir"],
                                                         binary)
        argv = netns_prefix(node["ns"]) + [path] + rest + \
            node_sets(node["addr"], sched["addr"]) + extra
        children.append(subprocess.Popen(argv, pass_fds=pass_fds,
                                         stdin=subprocess.DEVNULL))

    def forward(sig, frame):
        for c in children:
            if c.poll() is None:
                try:
                    c.send_signal(sig)
                except OSError:
                    pass
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    rfd, wfd = os.pipe()
    spawn(sched, "ps-scheduler", ["--set", "cluster.scheduler_port=0",
                                  "--ready-fd", str(wfd)], pass_fds=(wfd,))
    os.close(wfd)
    buf = b""
    while b"\n" not in buf:
        try:
            chunk = os.read(rfd, 64)
        except InterruptedError:
            continue
        if not chunk:
            break
        buf += chunk
    os.close(rfd)
    if b"\n" not in buf:
        print("ps-bench --launch-job: the scheduler exited before "
              "listening", file=sys.stderr)
        return children[0].wait() or 1
    port = buf.split(b"\n")[0].decode()
    extra = ["--set", "cluster.scheduler_port=" + port]
    for n in nodes:
        if n["role"] == "server":
            spawn(n, "ps-server", extra)
    for n in nodes:
        if n["role"] == "worker":
            spawn(n, worker, extra)
    failed, deadline = 0, None
    while any(c.poll() is None for c in children):
        for c in children:
            st_ = c.poll()
            if st_ not in (None, 0) and not failed:
                failed = st_ if st_ > 0 else 128 - st_
                # the scheduler aborts the job by itself; a grace period
                deadline = time.monotonic() + 30
        if deadline and time.monotonic() > deadline:
            for c in children:
                if c.poll() is None:
                    c.kill()
        time.sleep(0.05)
    if not failed:
        for c in children:
            if c.returncode:
                failed = c.returncode if c.returncode > 0 else \
                    128 - c.returncode
                break
    return failed


class Tuning:
    """ps-bench --tune on a bench.Bench's emulated cluster: its ps-tune
    runs (tunes: one record each) and their report."""

    def __init__(self, bench):
        self.bench = bench
        self.tunes = []  # one dict per ps-tune run
        self.wall = 0.0

    def execute(self):
        """ps-tune on the emulated cluster, once per model x bandwidth x
        seed, after the links are measured and ps-sim calibrated there
        (its prior, with --set tune.prior=sim): ps-tune runs in the
        scheduler's namespace (it listens on 127.0.0.1) and starts each
        trial's job through `ps-bench --launch-job`, which puts every node
        in its own namespace as a run does."""
        bench = self.bench
        bench.build_cluster()
        t0 = time.monotonic()
        if bench.mode == "netns":
            bench.calib.measure_machine(bench.cluster)
        plan = [(m, p, bw, seed) for m, p in bench.plan["models"]
                for bw in bench.plan["bandwidths"]
                for seed in bench.plan["tune_seeds"]]
        for i, (model, path, bw, seed) in enumerate(plan):
            if bench.cluster.bandwidth != bw:
                bench.shape(bw, [])
            log("[%d/%d] ps-tune: %s %s Gbit/s seed %d -- elapsed %s" % (
                i + 1, len(plan), model, bw_label(bw), seed,
                fmt_dur(time.monotonic() - t0)))
            self.tunes.append(self.one(model, path, bw, seed))
        self.wall = time.monotonic() - t0

    def one(self, model, path, bw, seed):
        """One ps-tune run: OUT/tune/MODEL-BW-seedN/ (its job.ini, the
        cluster's state and the launcher ps-tune starts each trial's job
        with, ps-tune's own files); its record with read_tune's."""
        bench = self.bench
        cnt = bench.plan["counts"][model]
        trials = bench.plan["tune_trials"]
        label = bench.plan["presets"][0]
        base, part, credit, _ = bench.plan["preset_def"][label]
        d = os.path.join(bench.out, "tune", "%s-%s-seed%d" % (
            model, bw_label(bw), seed))
        if len(d) > CFG_STR_MAX - 24:  # output.dir/checkpoints/ckpt-N
            raise UsageError("--out path too long for ps-tune's output.dir")
        os.makedirs(d, exist_ok=True)
        run = {"model": model, "model_file": path, "bw": bw,
               "transport": "tcp", "preset": base,
               # every trial needs warm-up + measured + 2 iterations
               # (docs/tune.md); tune.then = stop ends the job after them
               "total_iters": trials * (cnt["warmup"] + cnt["iterations"] +
                                        2) + 2}
        ini = os.path.join(d, "job.ini")
        with open(ini, "w") as f:
            f.write(job_ini(bench.plan, run, d, bench.sim))
        state = os.path.join(d, "cluster.json")
        with open(state, "w") as f:
            json.dump({"bin_dir": bench.bin_dir,
                       "nodes": [[n, role, bench.cluster.ns(n)
                                  if bench.mode == "netns" else "",
                                  bench.cluster.addr[n]]
                                 for n, role, _ in bench.cluster.nodes]}, f)
        launcher = os.path.join(d, "launch-job")
        with open(launcher, "w") as f:
            f.write("#!/bin/sh\n# written by ps-bench --tune: a ps-tune "
                    "launcher that starts the job in the emulated cluster\n"
                    "exec %s %s --launch-job %s \"$@\"\n" % (
                        shlex.quote(sys.executable),
                        shlex.quote(os.path.abspath(sys.argv[0])),
                        shlex.quote(state)))
        os.chmod(launcher, 0o755)
        argv = bench.cluster.prefix_cmd("sched") + [
            os.path.join(bench.bin_dir, "ps-tune"), "--launcher", launcher,
            "--config", ini]
        for kv in bench.plan["job"]:
            argv += ["--set", kv]
        # ps-sim's calibrated links, for tune.prior = sim
        argv += ["--set", "link.sharing=fair"] + \
            bench.sim.sets(bench.sim.link(bw))
        argv += ["--set", "tune.seed=%d" % seed,
                 "--set", "tune.trials=%d" % trials,
                 "--set", "tune.warmup_iterations=%d" % cnt["warmup"],
                 "--set", "tune.measure_iterations=%d" % cnt["iterations"],
                 "--set", "tune.then=stop"]
        rec = {"model": model, "bw": bw, "seed": seed, "dir": d,
               "preset": base, "status": "ok", "reason": ""}
        logf = os.path.join(d, "ps-tune.log")
        t = time.monotonic()
        with open(logf, "w") as lf:
            lf.write("$ " + " ".join(shlex.quote(a) for a in argv) + "\n")
            lf.flush()
            p = subprocess.Popen(argv, stdout=lf, stderr=lf,
                                 stdin=subprocess.DEVNULL,
                                 start_new_session=True)
        Run.LIVE.append(p)
        # a hang guard: every trial within the run timeout, plus the start
        timeout = cnt["run_timeout_s"] * (trials + 2)
        try:
            st = p.wait(timeout=timeout)
            if st != 0:
                rec["status"] = "failed"
                rec["reason"] = "ps-tune exited %d" % st
        except subprocess.TimeoutExpired:
            rec["status"] = "failed"
            rec["reason"] = "timed out after %d s" % timeout
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            for n, _, _ in bench.cluster.nodes:  # the job's processes
                if bench.mode == "netns":
                    kill_netns_processes(bench.cluster.ns(n))
        rec["wall_s"] = time.monotonic() - t
        rec.update(read_tune(d, bench.dilation))
        if rec["status"] == "ok" and not rec.get("best"):
            rec["status"] = "failed"
            rec["reason"] = "no best.ini"
        if rec["status"] != "ok":
            log("    ps-tune FAILED: %s (log: %s)" % (rec["reason"], logf))
        else:
            b = rec["best"]
            log("    best %s/%s: %.1f samples/s measured (first at trial %d "
                "of %d) (%.0f s)" % (size_label(b["partition"]),
                              size_label(b["credit"]), b["samples_per_s"],
                              b["trial"], len(rec["trials"]), rec["wall_s"]))
        return rec

    def report(self, argv):
        """report.md and tune.csv in OUT, the report on stdout."""
        bench = self.bench
        out = report_head("ps-bench --tune report", argv)
        w = out.append
        w("- cluster: 1 scheduler, %d server(s), %d worker(s)%s" % (
            bench.plan["servers"], bench.plan["workers"],
            ", each in its own network namespace" if bench.mode == "netns"
            else " on loopback (links NOT shaped)"))
        if bench.mode == "netns" and not bench.args.no_calibration:
            w("- ps-sim's links (the prior of tune.prior = sim): %s" %
              "; ".join(bench.calib.notes()))
        if bench.dilation != 1:
            w("- time dilation x%g: samples/s below are undilated "
              "(measured x %g)" % (bench.dilation, bench.dilation))
        w("- ps-tune runs: %d, %d completed; wall time %s; results in %s" %
          (len(self.tunes), sum(r["status"] == "ok" for r in self.tunes),
           fmt_dur(self.wall), bench.out))
        w("")
        w("| model | Gbit/s | preset | seed | trials ok | best pair "
          "(partition/credit) | its samples/s (first trial) | model mean | best "
          "measured samples/s (trial) | wall s |")
        w("|---|---:|---|---:|---:|---|---:|---:|---:|---:|")
        for r in self.tunes:
            cells = [r["model"], bw_label(r["bw"]), r["preset"],
                     str(r["seed"])]
            if r.get("best"):
                b, top = r["best"], r["top"]
                cells += ["%d/%d" % (sum(t["ok"] for t in r["trials"]),
                                     len(r["trials"])),
                          "%s/%s" % (size_label(b["partition"]),
                                     size_label(b["credit"])),
                          "%.1f (%d)" % (b["samples_per_s"], b["trial"]),
                          fnum(b["mean"]),
                          "%.1f (%d)" % (top["samples_per_s"],
                                         top["trial"])]
            else:
                cells += ["FAILED: " + r["reason"]] + ["-"] * 4
            cells.append("%.0f" % r["wall_s"])
            w("| " + " | ".join(cells) + " |")
        w("")
        w("Best pair: best.ini's, the measured pair with the largest "
          "posterior mean (not the luckiest sample); its samples/s: the "
          "mean of every trial that measured the pair (the first of them "
          "in brackets). Every trial: tune/*/tune.csv.")
        text = "\n".join(out) + "\n"
        with open(os.path.join(bench.out, "report.md"), "w") as f:
            f.write(text)
        with open(os.path.join(bench.out, "tune.csv"), "w", newline="") as f:
            cw = csv.writer(f)
            cw.writerow(["model", "bandwidth_gbps", "preset", "seed", "trial",
                         "partition_bytes", "credit_bytes", "status",
                         "samples_per_s", "mean", "sd", "best_partition",
                         "best_credit", "dilation"])
            for r in self.tunes:
                b = r.get("best") or {}
                for t in r.get("trials", []):
                    cw.writerow([r["model"], "%g" % r["bw"], r["preset"],
                                 r["seed"], t["trial"], t["partition"],
                                 t["credit"], "ok" if t["ok"] else "failed",
                                 "%.3f" % t["samples_per_s"] if t["ok"]
                                 else "", t["mean"], t["sd"],
                                 b.get("partition", ""),
                                 b.get("credit", ""), "%g" % bench.dilation])
        sys.stdout.write(text + "\nFiles: %s/report.md, tune.csv (every "
                         "trial of every run), tune/MODEL-BW-seedN/ (ps-tune's"
                         " tune.csv, best.ini, tune.png, ps-tune.log)\n" %
                         bench.out)
        sys.stdout.flush()
