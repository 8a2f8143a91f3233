"""One run: its job.ini (job_ini), every node of the job started in its
namespace, the scheduler first (Run), the workers' progress read as it
goes (the measured window's NIC counters and CPU times), and what the run
left read back: the per-worker metrics summed up into the run's numbers
(read_metrics, summarize_run; undilate_run under time dilation) and the
timeline parts merged into timeline.json as ps-launch merges them.
"""

import csv
import json
import os
import re
import secrets
import select
import shlex
import signal
import statistics
import subprocess
import threading
import time

from .common import log
from .namespaces import node_sets

SCHED_PORT = 9200


def job_ini(plan, run, run_dir, sim=None):
    """The job's config for one run (run_dir: its output.dir; None: for
    ps-sim or a check only). A tcp run's file also holds ps-sim's links
    (sim: simulate.Simulator), by which the scheduler's auto sizes are
    chosen."""
    dil = run.get("dilation", plan["dilation"])
    lines = [
        "; written by ps-bench for one run",
        "[cluster]", "servers = %d" % plan["servers"],
        "workers = %d" % plan["workers"],
        "[transport]", "type = %s" % run["transport"],
        "[model]", "file = %s" % run["model_file"],
    ] + (["compute_scale = %.9g" % (plan["compute_scale"] *
                                     dil)]
         if plan["dilation"] != 1 else []) + [
        "[worker]", "mode = replay",
        "[train]", "iterations = %d" % run["total_iters"],
        "[scheduling]",
        "preset = %s" % run.get("preset_base", run["preset"]),
    ] + (["partition_size = %d" % run["partition_size"]]
         if run.get("partition_size") else []) + (
        ["credit_size = %d" % run["credit_size"]]
        if run.get("credit_size") else []) + [
        "%s = %s" % kv for kv in run.get("settings", ())] + [
        # the rate of the links as they are shaped (dilated)
        "[metrics]", "bandwidth_gbps = %.9g" % (run["bw"] / dil),
    ]
    if run_dir:
        lines += ["[output]", "dir = %s" % run_dir]
        if run["transport"] == "tcp":
            # auto sizes are chosen by the scheduler with ps-sim: on
            # the links ps-sim's prediction of the run is made on
            lines += sim.ini(sim.link(run["bw"]))
    return "\n".join(lines) + "\n"


class Proc:
    def __init__(self, name, popen, log_path):
        self.name = name
        self.p = popen
        self.log_path = log_path


class Run:
    """Starts every node of one job on `cluster` (namespaces.Cluster),
    the binaries from bin_dir, waits, reads the results."""

    LIVE = []  # every Popen still possibly running, for the cleanup

    def __init__(self, cluster, bin_dir, workers, cfg, run_dir,
                 extra_sets=()):
        self.cluster = cluster
        self.bin_dir = bin_dir
        self.workers = workers
        self.cfg = cfg
        self.extra_sets = list(extra_sets)
        self.dir = run_dir
        self.procs = []
        self.iter_seen = {}
        self.events = {}
        self.lock = threading.Lock()
        # the job's secret, as ps-launch gives every job one (the
        # default security.mode = auto then checks it at every connection)
        self.env = dict(os.environ, ORDO_JOB_SECRET=secrets.token_hex(32))

    def _sets(self, name):
        c = self.cluster
        return node_sets(c.addr[name], c.addr["sched"]) + \
            ["--set", "cluster.scheduler_port=%d" % self.port] + \
            self.extra_sets

    def _spawn(self, name, binary, extra=(), pass_fds=(), stdout_pipe=False):
        argv = self.cluster.prefix_cmd(name) + [
            os.path.join(self.bin_dir, binary), "--config",
            self.cfg["ini"]] + self._sets(name) + list(extra)
        logf = os.path.join(self.dir, name + ".log")
        lf = open(logf, "w")
        lf.write("$ " + " ".join(shlex.quote(a) for a in argv) + "\n")
        lf.flush()
        p = subprocess.Popen(argv, stdout=subprocess.PIPE if stdout_pipe
                             else lf, stderr=lf, stdin=subprocess.DEVNULL,
                             pass_fds=pass_fds, start_new_session=True,
                             env=self.env)
        lf.close()
        Run.LIVE.append(p)
        pr = Proc(name, p, logf)
        self.procs.append(pr)
        if stdout_pipe:
            t = threading.Thread(target=self._reader, args=(pr,), daemon=True)
            t.start()
            pr.thread = t
        return pr

    def _reader(self, pr):
        """Copies a worker's stdout to its log; notes when iterations end."""
        pat = re.compile(r"^worker (\d+) iter (\d+)/(\d+) ")
        warm, total = self.cfg["warmup"], self.cfg["total_iters"]
        with open(pr.log_path, "a") as lf:
            for line in pr.p.stdout:
                line = line.decode("utf-8", "replace")
                lf.write(line)
                lf.flush()  # the log shows a run's progress as it goes
                m = pat.match(line)
                if not m:
                    continue
                it = int(m.group(2))
                with self.lock:
                    self.iter_seen[pr.name] = it
                    done = list(self.iter_seen.values())
                    nw = self.workers
                    # measured window: from every worker past its warm-up
                    # to every worker at its last iteration
                    if len(done) == nw and min(done) >= warm and \
                            "start" not in self.events:
                        self.events["start"] = (time.monotonic(),
                                                self.cluster.counters(),
                                                cpu_times(),
                                                thread_times(self.procs))
                    if len(done) == nw and min(done) >= total and \
                            "end" not in self.events:
                        self.events["end"] = (time.monotonic(),
                                              self.cluster.counters(),
                                              cpu_times(),
                                              thread_times(self.procs))

    def execute(self):
        """Returns None on success, else the reason the run failed."""
        c = self.cluster
        timeout = self.cfg["timeout"]
        deadline = time.monotonic() + timeout
        rfd, wfd = os.pipe()
        try:
            self.port = 0 if c.mode != "netns" else SCHED_PORT
            sched = self._spawn("sched", "ps-scheduler",
                                ["--ready-fd", str(wfd)], pass_fds=(wfd,))
            os.close(wfd)
            wfd = -1
            buf = b""
            while b"\n" not in buf:
                left = min(deadline, time.monotonic() + 30) - time.monotonic()
                r, _, _ = select.select([rfd], [], [], max(0, left))
                if not r:
                    return "the scheduler did not start listening"
                chunk = os.read(rfd, 64)
                if not chunk:
                    return "the scheduler exited before listening (status " \
                        "%s)" % sched.p.poll()
                buf += chunk
            self.port = int(buf.split(b"\n")[0])
        finally:
            os.close(rfd)
            if wfd >= 0:
                os.close(wfd)
        for name, role, _ in c.nodes:
            if role == "server":
                self._spawn(name, "ps-server")
        for name, role, _ in c.nodes:
            if role == "worker":
                self._spawn(name, "ps-worker", stdout_pipe=True)
        failure = None
        while True:
            states = [pr.p.poll() for pr in self.procs]
            bad = [(pr.name, s) for pr, s in zip(self.procs, states)
                   if s not in (None, 0)]
            if bad and failure is None:
                failure = ", ".join("%s exited %d" % b for b in bad)
                # the scheduler aborts the job by itself; do not wait for it
                deadline = min(deadline, time.monotonic() + 5)
            if all(s is not None for s in states):
                break
            if time.monotonic() > deadline:
                if failure is None:
                    failure = "timed out after %d s" % timeout
                self.kill()
                break
            time.sleep(0.05)
        for pr in self.procs:
            if hasattr(pr, "thread"):
                pr.thread.join(timeout=5)
        return failure

    def kill(self):
        for pr in self.procs:
            if pr.p.poll() is None:
                try:
                    os.killpg(pr.p.pid, signal.SIGTERM)
                except OSError:
                    pass
        t = time.monotonic() + 3
        while time.monotonic() < t and any(pr.p.poll() is None
                                           for pr in self.procs):
            time.sleep(0.05)
        for pr in self.procs:
            if pr.p.poll() is None:
                try:
                    os.killpg(pr.p.pid, signal.SIGKILL)
                except OSError:
                    pass
                pr.p.wait()


def cpu_times():
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return sum(v) - v[3] - v[4], sum(v)


def thread_times(procs):
    """{(node, tid): (thread name, CPU seconds)} of every thread of the
    nodes' processes, from /proc/PID/task/TID/stat (utime + stime); the
    threads of a process that has gone are left out."""
    tick = float(os.sysconf("SC_CLK_TCK"))
    out = {}
    for pr in procs:
        base = "/proc/%d/task" % pr.p.pid
        try:
            tids = os.listdir(base)
        except OSError:
            continue
        for tid in tids:
            try:
                with open("%s/%s/stat" % (base, tid)) as f:
                    stat = f.read()
                # the name is in parentheses and may hold anything
                lo, hi = stat.index("("), stat.rindex(")")
                rest = stat[hi + 2:].split()
                out[(pr.name, int(tid))] = (
                    stat[lo + 1:hi], (int(rest[11]) + int(rest[12])) / tick)
            except (OSError, ValueError, IndexError):
                continue
    return out


def thread_load(start, end, seconds):
    """[(node, thread id, thread name, % of one core)] over a window of
    `seconds` between two thread_times() samples, busiest first (threads
    seen at both ends only)."""
    if not start or not end or seconds <= 0:
        return []
    rows = [(k[0], k[1], end[k][0],
             100.0 * (end[k][1] - start[k][1]) / seconds)
            for k in end if k in start]
    return sorted(rows, key=lambda r: (-r[3], r[0], r[1]))


def busiest_thread(rec):
    """'NODE NAME P %' of a run's busiest thread, '' when none was seen."""
    if not rec.get("threads"):
        return ""
    node, _, name, pct = rec["threads"][0]
    return "%s %s %.0f %%" % (node, name, pct)


def write_threads(run_dir, rows):
    """DIR/threads.csv: every thread of the nodes and its share of one core
    over the measured window, busiest first."""
    with open(os.path.join(run_dir, "threads.csv"), "w", newline="") as f:
        cw = csv.writer(f)
        cw.writerow(["node", "tid", "thread", "cpu_pct_of_core"])
        for node, tid, name, pct in rows:
            cw.writerow([node, tid, name, "%.1f" % pct])


def merge_timeline(run_dir, servers, workers):
    """DIR/timeline.json: the parts concatenated, as ps-launch does
    (runtime/trace.c ps_trace_merge: one JSON array of every event)."""
    events, n = [], 0
    parts = ["server-%d.json" % i for i in range(servers)] + \
        ["worker-%d.json" % i for i in range(workers)]
    for part in parts:
        path = os.path.join(run_dir, part)
        if not os.path.isfile(path):
            continue
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            log("timeline part %s: %s" % (path, e))
            continue
        if isinstance(data, list):
            events.extend(data)
            n += 1
    if n:
        with open(os.path.join(run_dir, "timeline.json"), "w") as f:
            json.dump(events, f, separators=(",", ":"))
    return n


def read_metrics(run_dir, workers, warmup):
    """Per-worker rows of the measured iterations of metrics-worker-N.csv."""
    per = []
    for r in range(workers):
        path = os.path.join(run_dir, "metrics-worker-%d.csv" % r)
        with open(path) as f:
            rows = [row for row in csv.DictReader(f)
                    if int(row["iteration"]) > warmup]
        per.append(rows)
    return per


def summarize_run(per):
    n = min(len(rows) for rows in per)
    if n == 0:
        raise ValueError("no measured iteration in the metrics")
    # synchronous training: an iteration lasts as long as its slowest worker
    iters = [max(float(per[w][i]["time_ms"]) for w in range(len(per)))
             for i in range(n)]
    samples = 0.0
    for rows in per:
        t = sum(float(r["time_ms"]) for r in rows) / 1000.0
        batch = statistics.median(float(r["samples_per_s"]) *
                                  float(r["time_ms"]) / 1000.0 for r in rows)
        samples += round(batch) * len(rows) / t if t > 0 else 0.0
    effs = [float(r["efficiency"]) for rows in per for r in rows
            if r["efficiency"] not in ("nan", "-nan", "inf", "-inf")]
    straggler = max(sum(float(r["wait_ms"]) for r in rows) /
                    max(1e-9, sum(float(r["time_ms"]) for r in rows))
                    for rows in per)
    return {"iter_ms": statistics.mean(iters), "iters_ms": iters,
            "samples_per_s": samples,
            "efficiency": statistics.mean(effs) if effs else float("nan"),
            "straggler": straggler}


def undilate_run(rec, d):
    """A run's measured times / d and rates x d (time dilation d): the
    numbers of the undilated cluster it emulates. Efficiency and the
    straggler share are ratios of times, unchanged."""
    if d == 1:
        return
    rec["iter_ms"] /= d
    rec["iters_ms"] = [x / d for x in rec["iters_ms"]]
    rec["samples_per_s"] *= d
