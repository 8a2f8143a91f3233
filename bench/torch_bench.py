#!/usr/bin/env python3
"""torch_bench.py: real PyTorch training over ordo against torch DDP on an
emulated cluster (docs/benchmarks.md, "Real training: ordo against torch
DDP").

Trains torchvision models (ResNet-18, MobileNet-V2; CIFAR-sized synthetic
images) with examples/pytorch/train.py, one worker process per emulated
host, for every scheduling preset over ordo (server.optimizer = none: the
servers average, every worker's torch SGD steps) in two layouts -- the
servers on hosts of their own ("separate") and one server on every worker's
host ("colocated") -- and with torch DDP (gloo) on the same hosts and
links. The hosts are ps-bench's network namespaces on a bridge, each link
shaped with tc tbf (ps-bench's Cluster, bench/ps_bench/namespaces.py,
imported, not copied).

Real compute on a CPU is far slower than on a GPU, so the links are slowed
by the same factor: factor = (this machine's forward + backward ms per
iteration) / (the GPU's), emulated bandwidth = NIC bandwidth / factor. The
GPU's time comes from model/generate.py's roofline estimate of an NVIDIA
V100 (the one behind conf/models/), unless --gpu-ms gives it.

Checks that the order of transfers changes no math: every run's
per-iteration losses (the mean of the workers' shares) and final parameter
checksum must equal every other run's of the same model within
--loss-tolerance; a mismatch fails the benchmark.

Python 3 standard library only (torch runs inside train.py). Exit status:
0 when every run completed and the losses agree, 1 when a run failed or
the losses differ, 2 on bad input, 130 when interrupted.
"""

import argparse
import csv
import datetime
import json
import os
import platform
import random
import re
import select
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ps_bench  # noqa: E402  (the namespaces, links and statistics)

SOURCE_DIR = os.path.dirname(HERE)
TRAIN_PY = os.path.join(SOURCE_DIR, "examples", "pytorch", "train.py")
GENERATE_PY = os.path.join(SOURCE_DIR, "model", "generate.py")
MODELS = ["resnet18", "mobilenet_v2"]
LAYOUTS = ["separate", "colocated"]
NS_PREFIX = "ordo-tbench-"
DDP_PORT = 29511
# [cluster] keys every ordo run gets (importing torch on a busy machine
# takes a while)
CLUSTER_KEYS = ["heartbeat_interval_ms = 500", "heartbeat_timeout_ms = 15000",
                "connect_timeout_ms = 60000", "register_timeout_ms = 120000"]


class UsageError(Exception):
    pass


def log(msg):
    sys.stderr.write("torch-bench: %s\n" % msg)
    sys.stderr.flush()


def csv_list(name, value, allowed):
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise UsageError("--%s is empty" % name)
    for v in items:
        if v not in allowed:
            raise UsageError("--%s: unknown '%s' (choose from %s)"
                             % (name, v, ", ".join(allowed)))
    return list(dict.fromkeys(items))


def model_values(name, value):
    """MODEL=NUMBER,... -> {model: float}."""
    out = {}
    for item in (v for v in value.split(",") if v.strip()):
        m, _, num = item.partition("=")
        m = m.strip()
        if m not in MODELS:
            raise UsageError("--%s: unknown model '%s' in '%s' (MODEL=MS, "
                             "MODEL one of %s)" % (name, m, item,
                                                    ", ".join(MODELS)))
        try:
            out[m] = float(num)
        except ValueError:
            out[m] = -1.0
        if not out[m] > 0:
            raise UsageError("--%s: '%s' is not MODEL=POSITIVE-NUMBER"
                             % (name, item))
    return out


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="torch_bench.py",
        description="Real PyTorch training (torchvision ResNet-18, "
        "MobileNet-V2) over ordo, every preset, in two layouts, against "
        "torch DDP (gloo) on the same emulated hosts and links.",
        epilog="Example (as root, ~25 min on 2 cores): bench/torch_bench.py "
        "--bin-dir build-release --out /tmp/tb. Outputs in --out: "
        "report.md (also printed), results.csv, runs.csv, losses.csv, "
        "runs/NNN/ (logs, job.ini, timeline.json of the ordo runs).")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated, of %s (default: both)"
                    % ", ".join(MODELS))
    ap.add_argument("--presets", default=",".join(ps_bench.PRESETS),
                    help="ordo presets (default: all six)")
    ap.add_argument("--layouts", default=",".join(LAYOUTS),
                    help="separate (servers on hosts of their own) and/or "
                    "colocated (one server on every worker's host)")
    ap.add_argument("--no-ddp", action="store_true",
                    help="leave torch DDP out")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--servers", type=int, default=2,
                    help="servers of the separate layout (colocated: one "
                    "per worker)")
    ap.add_argument("--batch", type=int, default=32,
                    help="samples per worker per iteration (default 32)")
    ap.add_argument("--warmup", type=int, default=2,
                    help="iterations before the measured ones (default 2)")
    ap.add_argument("--iterations", type=int, default=8,
                    help="measured iterations per run (default 8)")
    ap.add_argument("--repetitions", type=int, default=2,
                    help="runs per configuration, the order rotated each "
                    "time (default 2)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads per worker (default 1)")
    ap.add_argument("--nic-gbps", type=float, default=25.0,
                    help="the GPU cluster's NIC, Gbit/s per direction "
                    "(default 25)")
    ap.add_argument("--gpu-ms", default="",
                    help="MODEL=MS,...: the GPU's forward + backward ms per "
                    "iteration at --batch (default: model/generate.py's "
                    "V100 roofline estimate)")
    ap.add_argument("--cpu-ms", default="",
                    help="MODEL=MS,...: this machine's forward + backward ms "
                    "per iteration (default: measured)")
    ap.add_argument("--bandwidth-gbps", type=float, default=0.0,
                    help="shape the links at this rate outright (no factor)")
    ap.add_argument("--mode", choices=["auto", "netns", "loopback"],
                    default="auto",
                    help="netns: one namespace per host, links shaped (root); "
                    "loopback: every process on 127.0.0.1, links not shaped; "
                    "auto: netns where possible")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="an ordo config key for every ordo run, e.g. "
                    "scheduling.credit_size=8M (repeatable; the cluster's "
                    "size and addresses, server.optimizer, train.iterations, "
                    "scheduling.preset and output.dir are the benchmark's)")
    ap.add_argument("--loss-tolerance", type=float, default=1e-5,
                    help="largest relative difference of a loss or checksum "
                    "between any two runs of a model (default 1e-5)")
    ap.add_argument("--run-timeout", type=int, default=600,
                    help="a run still going after this many seconds failed")
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="the interpreter with torch and torchvision")
    ap.add_argument("--bin-dir", default="",
                    help="the build directory (ps-scheduler, ps-server, "
                    "libordo.so.0); default: build-release or build")
    ap.add_argument("--out", default="",
                    help="results directory (default: ./torch-bench-out/DATE)")
    a = ap.parse_args(argv)
    a.models = csv_list("models", a.models, MODELS)
    a.presets = csv_list("presets", a.presets, ps_bench.PRESETS)
    a.layouts = csv_list("layouts", a.layouts, LAYOUTS)
    for name, lo in (("workers", 1), ("servers", 1), ("batch", 1),
                     ("warmup", 1), ("iterations", 1), ("repetitions", 1),
                     ("threads", 1), ("run_timeout", 10)):
        if getattr(a, name) < lo:
            raise UsageError("--%s must be at least %d"
                             % (name.replace("_", "-"), lo))
    if not 0.001 <= a.nic_gbps <= 400:
        raise UsageError("--nic-gbps must be in [0.001, 400]")
    if a.bandwidth_gbps and not 0.001 <= a.bandwidth_gbps <= 400:
        raise UsageError("--bandwidth-gbps must be in [0.001, 400]")
    if not 0 < a.loss_tolerance < 1:
        raise UsageError("--loss-tolerance must be in (0, 1)")
    for kv in a.set:
        key = kv.partition("=")[0]
        if "=" not in kv or not re.match(r"^[a-z_]+\.[a-z_]+$", key):
            raise UsageError("--set %s: not SECTION.KEY=VALUE" % kv)
        if key.startswith("cluster.") or key in (
                "server.optimizer", "train.iterations", "scheduling.preset",
                "output.dir"):
            raise UsageError("--set %s: the benchmark sets %s itself"
                             % (kv, key))
    a.gpu_ms = model_values("gpu-ms", a.gpu_ms)
    a.cpu_ms = model_values("cpu-ms", a.cpu_ms)
    if not os.path.isfile(a.python) or not os.access(a.python, os.X_OK):
        raise UsageError("--python %s: not an executable" % a.python)
    a.bin_dir = find_bin_dir(a.bin_dir)
    check_sets(a)
    return a


def check_sets(a):
    """--set's keys and values as every node will read them (ordo's own
    configuration parser, through the Python package): a key ordo does
    not know or a bad value stops here, not in every run's logs."""
    if not a.set:
        return
    code = ("import sys, ordo\n"
            "try:\n"
            "    ordo.Config(sets=sys.argv[1:])\n"
            "except ordo.Error as e:\n"
            "    sys.exit(str(e))\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(SOURCE_DIR, "python"),
               LIBORDO_PATH=os.path.join(a.bin_dir, "libordo.so.0"))
    p = subprocess.run([a.python, "-c", code] + a.set, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode:
        lines = (p.stderr or p.stdout).strip().splitlines()
        raise UsageError("--set: %s" % (lines[-1] if lines else
                                         "refused (exit %d)" % p.returncode))


def find_bin_dir(arg):
    cands = [arg] if arg else [os.path.join(SOURCE_DIR, d)
                               for d in ("build-release", "build")]
    for d in cands:
        if all(os.path.isfile(os.path.join(d, f)) for f in
               ("ps-scheduler", "ps-server", "libordo.so.0")):
            return os.path.abspath(d)
    raise UsageError("no ps-scheduler, ps-server and libordo.so.0 in %s: "
                     "build ordo first, or give --bin-dir"
                     % " or ".join(cands))


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def remove_stale():
    """Namespaces of a torch_bench.py that no longer runs."""
    for ns in ps_bench.list_netns():
        m = re.match(r"^%s(\d+)-" % re.escape(NS_PREFIX), ns)
        if not m or int(m.group(1)) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % m.group(1), "rb") as f:
                if b"torch_bench" in f.read():
                    continue
        except OSError:
            pass
        ps_bench.kill_netns_processes(ns)
        ps_bench.run_cmd(["ip", "netns", "del", ns], check=False)
        log("removed %s, left by an earlier run" % ns)


def parse_worker_lines(path):
    """{rank: {"loss": {it: v}, "time": {it: t}, "final": v}} from a log."""
    out = {}
    pat = re.compile(r"^worker (\d+) (loss|time|final) (\d+) (\S+)$")
    with open(path, errors="replace") as f:
        for line in f:
            m = pat.match(line.strip())
            if not m:
                continue
            r = out.setdefault(int(m.group(1)), {"loss": {}, "time": {}})
            if m.group(2) == "final":
                r["final"] = float(m.group(4))
            else:
                r[m.group(2)][int(m.group(3))] = float(m.group(4))
    return out


class Bench:
    def __init__(self, args, mode, mode_note):
        self.a = args
        self.mode = mode
        self.mode_note = mode_note
        self.out = args.out or os.path.join(
            "torch-bench-out", datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
        self.out = os.path.abspath(self.out)
        self.cluster = None
        self.live = []
        self.nrun = 0
        self.runs = []
        self.calib = {}

    # -- the cluster ---------------------------------------------------------
    def setup(self):
        if self.mode == "netns":
            remove_stale()
        self.cluster = ps_bench.Cluster(self.mode, self.a.workers,
                                        self.a.servers, ns_prefix=NS_PREFIX)
        self.cluster.setup()

    def teardown(self):
        for p in self.live:
            ps_bench.kill_group(p, timeout=None)
        if self.cluster:
            self.cluster.teardown()

    def env(self):
        e = dict(os.environ)
        for k in list(e):
            if k.startswith("ORDO_"):
                del e[k]  # every node reads ORDO_* as configuration
        e["PYTHONPATH"] = os.path.join(SOURCE_DIR, "python") + \
            (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
        e["LIBORDO_PATH"] = os.path.join(self.a.bin_dir, "libordo.so.0")
        e["OMP_NUM_THREADS"] = str(self.a.threads)
        e["GLOO_SOCKET_IFNAME"] = "eth0" if self.mode == "netns" else "lo"
        return e

    # -- the compute factor --------------------------------------------------
    def train_args(self, model, iters):
        return [self.a.python, TRAIN_PY, "--model", model, "--optimizer",
                "sgd", "--lr", "0.01", "--momentum", "0.9", "--batch",
                str(self.a.batch * self.a.workers), "--iterations",
                str(iters), "--timing", "--threads", str(self.a.threads)]

    def measure_cpu(self, model):
        """This machine's ms per iteration of one worker's share (forward,
        backward and the SGD step, one process, --threads threads): the
        median of 6 iterations after 2 warm-up ones."""
        argv = [self.a.python, TRAIN_PY, "--reference", "--model", model,
                "--batch", str(self.a.batch), "--iterations", "8",
                "--timing", "--threads", str(self.a.threads)]
        p = subprocess.run(argv, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=600,
                           env=self.env())
        ts = [float(m.group(1)) for m in
              re.finditer(r"^time \d+ (\S+)$", p.stdout, re.M)]
        if p.returncode != 0 or len(ts) != 8:
            raise RuntimeError("measuring %s's compute failed: %s"
                               % (model, p.stdout.strip()[-800:]))
        return statistics.median(b - a for a, b in zip(ts[2:], ts[3:])) * 1e3

    def gpu_estimate(self, model):
        """model/generate.py's roofline times (forward + backward ms) of
        the model at --batch on the V100 of conf/models/."""
        with tempfile.TemporaryDirectory() as d:
            argv = [self.a.python, GENERATE_PY, "--models",
                    "train:fx_" + model, "--batch", str(self.a.batch),
                    "--out", d]
            p = subprocess.run(argv, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               timeout=600, env=self.env(),
                               cwd=os.path.dirname(TRAIN_PY))
            m = re.search(r"forward\s+([0-9.]+) ms\s+backward\s+([0-9.]+) ms",
                          p.stdout)
            if p.returncode != 0 or not m:
                raise RuntimeError("model/generate.py failed for %s: %s"
                                   % (model, p.stdout.strip()[-800:]))
            with open(os.path.join(d, "fx_%s.json" % model)) as f:
                dev = json.load(f)["times"].get("device", "V100")
        return float(m.group(1)) + float(m.group(2)), dev

    def calibrate(self, model):
        a = self.a
        c = {"model": model}
        if model in a.cpu_ms:
            c["cpu_ms"], c["cpu_src"] = a.cpu_ms[model], "given (--cpu-ms)"
        else:
            log("%s: measuring this machine's compute" % model)
            c["cpu_ms"], c["cpu_src"] = self.measure_cpu(model), "measured"
        if model in a.gpu_ms:
            c["gpu_ms"], c["gpu_src"] = a.gpu_ms[model], "given (--gpu-ms)"
        else:
            ms, dev = self.gpu_estimate(model)
            c["gpu_ms"], c["gpu_src"] = ms, "roofline, %s" % dev
        c["factor"] = c["cpu_ms"] / c["gpu_ms"]
        if a.bandwidth_gbps:
            c["bw"], c["bw_src"] = a.bandwidth_gbps, "given (--bandwidth-gbps)"
        else:
            c["bw"] = a.nic_gbps / c["factor"]
            c["bw_src"] = "%g Gbit/s / %.1f" % (a.nic_gbps, c["factor"])
        return c

    # -- one run ---------------------------------------------------------------
    def spawn(self, host, argv, logf, pass_fds=()):
        argv = self.cluster.prefix_cmd(host) + argv
        lf = open(logf, "w")
        lf.write("$ " + " ".join(shlex.quote(x) for x in argv) + "\n")
        lf.flush()
        p = subprocess.Popen(argv, stdout=lf, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, pass_fds=pass_fds,
                             start_new_session=True, env=self.env())
        lf.close()
        p.name = os.path.basename(logf)[:-4]
        self.live.append(p)
        return p

    def job_ini(self, run, run_dir, servers):
        lines = ["; written by torch_bench.py for one run", "[cluster]",
                 "servers = %d" % servers, "workers = %d" % self.a.workers
                 ] + CLUSTER_KEYS + [
                 "[server]", "optimizer = none",
                 "[train]", "iterations = %d" % run["total"],
                 "[scheduling]", "preset = %s" % run["system"],
                 "[metrics]", "bandwidth_gbps = %.9g" % run["bw"],
                 "[output]", "dir = %s" % run_dir]
        return "\n".join(lines) + "\n"

    def execute(self, run):
        """Runs one job; returns None or the reason it failed."""
        c, a = self.cluster, self.a
        run_dir = run["dir"]
        os.makedirs(run_dir)
        procs = []
        workers = ["w%d" % i for i in range(a.workers)]
        wargs = self.train_args(run["model"], run["total"])
        deadline = time.monotonic() + a.run_timeout
        if run["system"] == "ddp":
            port = DDP_PORT if self.mode == "netns" else free_port()
            for i, w in enumerate(workers):
                # DDP loads no ordo library: a sanitizer runtime
                # preloaded for ordo's (the test suite's ASan build)
                # only breaks torch's C++ exceptions in gloo's threads
                e = ["env", "-u", "LD_PRELOAD",
                     "RANK=%d" % i, "WORLD_SIZE=%d" % a.workers,
                     "MASTER_ADDR=%s" % c.addr[workers[0]],
                     "MASTER_PORT=%d" % port]
                procs.append(self.spawn(w, e + wargs + ["--ddp"],
                                        os.path.join(run_dir, w + ".log")))
        else:
            if run["layout"] == "separate":
                hosts = ["s%d" % i for i in range(a.servers)]
            else:
                hosts = workers
            ini = os.path.join(run_dir, "job.ini")
            with open(ini, "w") as f:
                f.write(self.job_ini(run, run_dir, len(hosts)))

            def sets(host):
                return ["--config", ini] + ps_bench.node_sets(
                    c.addr[host], c.addr["sched"]) + [
                        x for kv in a.set for x in ("--set", kv)]
            rfd, wfd = os.pipe()
            try:
                procs.append(self.spawn(
                    "sched", [os.path.join(a.bin_dir, "ps-scheduler")] +
                    sets("sched") + ["--set", "cluster.scheduler_port=0",
                                     "--ready-fd", str(wfd)],
                    os.path.join(run_dir, "sched.log"), pass_fds=(wfd,)))
                os.close(wfd)
                wfd = -1
                buf = b""
                while b"\n" not in buf:
                    r, _, _ = select.select([rfd], [], [], 30)
                    chunk = os.read(rfd, 64) if r else b""
                    if not chunk:
                        self.kill(procs)
                        return "the scheduler did not start listening"
                    buf += chunk
            finally:
                os.close(rfd)
                if wfd >= 0:
                    os.close(wfd)
            port = ["--set", "cluster.scheduler_port=" +
                    buf.split(b"\n")[0].decode()]
            for i, h in enumerate(hosts):
                procs.append(self.spawn(
                    h, [os.path.join(a.bin_dir, "ps-server")] + sets(h) + port,
                    os.path.join(run_dir, "s%d.log" % i)))
            for w in workers:
                procs.append(self.spawn(w, wargs + sets(w) + port,
                                        os.path.join(run_dir, w + ".log")))
        failure = None
        while any(p.poll() is None for p in procs):
            bad = [p for p in procs if p.poll() not in (None, 0)]
            if bad and failure is None:
                failure = ", ".join("%s exited %d" % (p.name, p.returncode)
                                    for p in bad)
                deadline = min(deadline, time.monotonic() + 10)
            if time.monotonic() > deadline:
                failure = failure or "timed out after %d s" % a.run_timeout
                self.kill(procs)
                break
            time.sleep(0.1)
        bad = [p for p in procs if p.returncode not in (0, None)]
        if bad and failure is None:
            failure = ", ".join("%s exited %d" % (p.name, p.returncode)
                                for p in bad)
        if run["system"] != "ddp":
            ps_bench.merge_timeline(run_dir, len(procs) - 1 - a.workers,
                                    a.workers)
        return failure

    def kill(self, procs):
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait()

    def read_run(self, run):
        """The measured per-iteration times and the losses of a run."""
        a = self.a
        per = {}
        for i in range(a.workers):
            per.update(parse_worker_lines(
                os.path.join(run["dir"], "w%d.log" % i)))
        if sorted(per) != list(range(a.workers)):
            return "missing workers' output"
        total = run["total"]
        for r in per.values():
            if len(r["time"]) != total or len(r["loss"]) != total or \
                    "final" not in r:
                return "a worker printed %d of %d iterations" % (
                    len(r["time"]), total)
        # synchronous: an iteration ends when its last worker's does
        end = [max(per[r]["time"][i] for r in per) for i in range(total)]
        run["iters_s"] = [end[i] - end[i - 1]
                          for i in range(a.warmup, total)]
        run["samples_per_s"] = a.batch * a.workers * len(run["iters_s"]) / \
            (end[-1] - end[a.warmup - 1])
        run["losses"] = [statistics.mean(per[r]["loss"][i] for r in per)
                         for i in range(total)]
        finals = [per[r]["final"] for r in sorted(per)]
        run["final"] = finals[0]
        if max(finals) - min(finals) > a.loss_tolerance * max(
                1.0, abs(finals[0])):
            return "the workers' final parameters differ: %s" % finals
        return None

    # -- the whole benchmark ---------------------------------------------------
    def configs(self):
        out = []
        if not self.a.no_ddp:
            out.append(("-", "ddp"))
        for layout in self.a.layouts:
            for p in self.a.presets:
                out.append((layout, p))
        return out

    def run_all(self):
        a = self.a
        os.makedirs(self.out, exist_ok=True)
        configs = self.configs()
        todo = len(a.models) * len(configs) * a.repetitions
        t0 = time.monotonic()
        for model in a.models:
            c = self.calibrate(model)
            self.calib[model] = c
            self.cluster.shape(c["bw"])
            c["probe"] = self.cluster.probe_rate()
            log("%s: this machine %.1f ms, GPU %.3f ms per iteration of %d "
                "samples: factor %.1f; links at %.4g Gbit/s%s" % (
                    model, c["cpu_ms"], c["gpu_ms"], a.batch, c["factor"],
                    c["bw"], " (measured %.4g)" % c["probe"]
                    if c["probe"] else ""))
            for rep in range(a.repetitions):
                k = rep % len(configs)
                for layout, system in configs[k:] + configs[:k]:
                    self.nrun += 1
                    run = {"n": self.nrun, "model": model, "layout": layout,
                           "system": system, "rep": rep + 1,
                           "bw": c["bw"], "total": a.warmup + a.iterations,
                           "dir": os.path.join(self.out, "runs",
                                               "%03d" % self.nrun)}
                    log("[%d/%d] %s %s %s rep %d/%d -- elapsed %ds" % (
                        self.nrun, todo, model,
                        "DDP" if system == "ddp" else layout, system,
                        rep + 1, a.repetitions, time.monotonic() - t0))
                    run["failure"] = self.execute(run) or self.read_run(run)
                    if run["failure"]:
                        log("run %03d failed: %s (logs in %s)" % (
                            run["n"], run["failure"], run["dir"]))
                    else:
                        log("  %.1f samples/s" % run["samples_per_s"])
                    self.runs.append(run)

    def check_losses(self):
        """{model: (ok, largest relative difference, runs compared)}."""
        tol = self.a.loss_tolerance
        out = {}
        for model in self.a.models:
            ok_runs = [r for r in self.runs
                       if r["model"] == model and not r["failure"]]
            if not ok_runs:
                out[model] = (False, float("nan"), 0)
                continue
            ref = ok_runs[0]
            worst = 0.0
            for r in ok_runs[1:]:
                for x, y in zip(ref["losses"] + [ref["final"]],
                                r["losses"] + [r["final"]]):
                    worst = max(worst, abs(x - y) / max(abs(x), 1e-12))
            out[model] = (worst <= tol, worst, len(ok_runs))
        return out

    def report(self, argv):
        a = self.a
        rng = random.Random(1)
        checks = self.check_losses()
        lines = ["# ordo against torch DDP: real training on an emulated "
                 "cluster", ""]
        lines.append("- command: `%s`" % " ".join(
            shlex.quote(x) for x in ["bench/torch_bench.py"] + argv))
        lines.append("- machine: %s, %d cores (shared: other processes "
                     "may run beside the benchmark)" % (cpu_model(),
                                                         os.cpu_count()))
        lines.append("- mode: %s%s" % (self.mode, " (%s)" % self.mode_note
                                       if self.mode_note else ""))
        lines.append("- %d workers, batch %d per worker (%d per iteration), "
                     "%d torch thread(s) each; ordo: server.optimizer = "
                     "none, %d servers on hosts of their own (separate) or "
                     "one on each worker's host (colocated); DDP: gloo, "
                     "the workers' hosts" % (
                         a.workers, a.batch, a.batch * a.workers, a.threads,
                         a.servers))
        if a.set:
            lines.append("- ordo runs also with: %s" % ", ".join(
                "`%s`" % kv for kv in a.set))
        lines.append("- per run: %d warm-up + %d measured iterations; %d "
                     "repetition(s), the order of the configurations "
                     "rotated each time" % (a.warmup, a.iterations,
                                            a.repetitions))
        lines += ["", "## The links: compute factor", "",
                  "| model | this machine ms/iter | GPU ms/iter | factor | "
                  "emulated link Gbit/s | measured Gbit/s |",
                  "|---|---:|---:|---:|---:|---:|"]
        for m in a.models:
            c = self.calib.get(m)
            if not c:
                continue
            lines.append("| %s | %.1f (%s) | %.3f (%s) | %.1f | %.4g (%s) "
                         "| %s |" % (m, c["cpu_ms"], c["cpu_src"],
                                     c["gpu_ms"], c["gpu_src"], c["factor"],
                                     c["bw"], c["bw_src"],
                                     "%.4g" % c["probe"] if c.get("probe")
                                     else "-"))
        lines += ["", "## Samples/s", "",
                  "samples/s: median over repetitions (undilated: x factor "
                  "for the GPU cluster); [95% CI]: percentile bootstrap "
                  "(2000 resamples) of the per-iteration times pooled over "
                  "repetitions (iterations are correlated: read it as a "
                  "lower bound on the uncertainty); vs DDP: mean DDP "
                  "iteration time / mean of this row's, bootstrapped the "
                  "same way.", "",
                  "| model | layout | system | runs ok | samples/s [95% CI] "
                  "| GPU-cluster samples/s | vs DDP [95% CI] | iteration ms "
                  "(median) |", "|---|---|---|---:|---:|---:|---:|---:|"]
        rows = []
        for m in a.models:
            ddp = [x for r in self.runs if r["model"] == m and
                   r["system"] == "ddp" and not r["failure"]
                   for x in r["iters_s"]]
            for layout, system in self.configs():
                rs = [r for r in self.runs if r["model"] == m and
                      r["layout"] == layout and r["system"] == system]
                ok = [r for r in rs if not r["failure"]]
                row = {"model": m, "layout": layout, "system": system,
                       "runs": len(rs), "ok": len(ok)}
                if ok:
                    its = [x for r in ok for x in r["iters_s"]]
                    g = a.batch * a.workers
                    row["sps"] = statistics.median(r["samples_per_s"]
                                                   for r in ok)
                    row["ci"] = ps_bench.bootstrap_ratio([g] * len(its), its,
                                                         rng)
                    row["iter_ms"] = statistics.median(
                        statistics.mean(r["iters_s"]) * 1e3 for r in ok)
                    if ddp and system != "ddp":
                        row["vs"] = statistics.mean(ddp) / statistics.mean(its)
                        row["vs_ci"] = ps_bench.bootstrap_ratio(ddp, its, rng)
                rows.append(row)
                ci = row.get("ci")
                vs = row.get("vs")
                f = self.calib[m]["factor"] if m in self.calib else 1
                lines.append("| %s | %s | %s | %d/%d | %s | %s | %s | %s |" % (
                    m, "(workers' hosts)" if system == "ddp" else layout,
                    "torch DDP (gloo)" if system == "ddp" else
                    "ordo " + system, row["ok"], row["runs"],
                    "%.1f [%.1f, %.1f]" % (row["sps"], ci[0], ci[1])
                    if ci else ("%.1f" % row["sps"] if ok else "-"),
                    "%.0f" % (row["sps"] * f) if ok else "-",
                    "%.2f [%.2f, %.2f]" % (vs, *row["vs_ci"])
                    if vs and row.get("vs_ci") else
                    ("%.2f" % vs if vs else "-"),
                    "%.0f" % row["iter_ms"] if ok else "-"))
        lines += ["", "## Ordering changes no math", ""]
        for m in a.models:
            ok, worst, n = checks[m]
            lines.append("- %s: %s: %d runs, largest relative difference of "
                         "a per-iteration loss or the final checksum from "
                         "the first run's: %.2e (tolerance %.0e)" % (
                             m, "equal" if ok else "**MISMATCH**", n, worst,
                             a.loss_tolerance))
        failed = [r for r in self.runs if r["failure"]]
        if failed:
            lines += ["", "## Failed runs", ""]
            lines += ["- %03d %s %s %s rep %d: %s (logs: %s)" % (
                r["n"], r["model"], r["layout"], r["system"], r["rep"],
                r["failure"], r["dir"]) for r in failed]
        text = "\n".join(lines) + "\n"
        with open(os.path.join(self.out, "report.md"), "w") as f:
            f.write(text)
        with open(os.path.join(self.out, "results.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["model", "layout", "system", "runs", "runs_ok",
                        "samples_per_s", "ci_low", "ci_high", "vs_ddp",
                        "vs_ddp_low", "vs_ddp_high", "iteration_ms",
                        "factor", "link_gbps"])
            for r in rows:
                c = self.calib.get(r["model"], {})
                w.writerow([r["model"], r["layout"], r["system"], r["runs"],
                            r["ok"], "%.3f" % r["sps"] if "sps" in r else "",
                            *(["%.3f" % x for x in r["ci"]] if r.get("ci")
                              else ["", ""]),
                            "%.4f" % r["vs"] if r.get("vs") else "",
                            *(["%.4f" % x for x in r["vs_ci"]]
                              if r.get("vs_ci") else ["", ""]),
                            "%.1f" % r["iter_ms"] if "iter_ms" in r else "",
                            "%.2f" % c.get("factor", 0),
                            "%.6g" % c.get("bw", 0)])
        with open(os.path.join(self.out, "runs.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["run", "model", "layout", "system", "repetition",
                        "status", "samples_per_s", "iteration_ms", "dir"])
            for r in self.runs:
                w.writerow([r["n"], r["model"], r["layout"], r["system"],
                            r["rep"], r["failure"] or "ok",
                            "%.3f" % r["samples_per_s"]
                            if not r["failure"] else "",
                            " ".join("%.1f" % (x * 1e3) for x in r["iters_s"])
                            if not r["failure"] else "", r["dir"]])
        with open(os.path.join(self.out, "losses.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["run", "model", "layout", "system", "iteration",
                        "loss"])
            for r in self.runs:
                for i, v in enumerate(r.get("losses", [])):
                    w.writerow([r["n"], r["model"], r["layout"], r["system"],
                                i, "%.9g" % v])
        sys.stdout.write(text)
        all_ok = not failed and all(c[0] for c in checks.values())
        return 0 if all_ok else 1


def main(argv):
    args = parse_args(argv)
    mode, note = args.mode, ""
    if mode != "loopback":
        ok, why = ps_bench.netns_available()
        if not ok and mode == "netns":
            raise UsageError("--mode netns: %s" % why)
        if not ok:
            mode, note = "loopback", "links not shaped: " + why
            log("no emulated cluster (%s): falling back to loopback" % why)
        else:
            mode = "netns"
    if mode == "loopback" and not note:
        note = "links not shaped"
    if not shutil.which("ip") and mode == "netns":
        raise UsageError("'ip' not found (iproute2)")
    p = subprocess.run([args.python, "-c", "import torch, torchvision"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        raise UsageError("%s cannot import torch and torchvision (Debian: "
                         "apt-get install python3-torch python3-torchvision): "
                         "%s" % (args.python, p.stdout.strip()[-300:]))
    b = Bench(args, mode, note)

    def on_signal(sig, frame):
        raise KeyboardInterrupt
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    try:
        b.setup()
        b.run_all()
    except KeyboardInterrupt:
        log("interrupted: cleaning up")
        b.teardown()
        return 130
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        log("error: %s" % e)
        b.teardown()
        return 1
    b.teardown()
    return b.report(argv)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UsageError as e:
        print("torch_bench.py: error: %s" % e, file=sys.stderr)
        sys.exit(2)
