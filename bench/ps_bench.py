#!/usr/bin/env python3
"""ps-bench: the ordo benchmark driver on an emulated cluster (docs/bench.md).

Builds one network namespace per node (scheduler, each server, each worker)
on this machine, joined by veth pairs to a bridge in a namespace of its own,
shapes every host's link in both directions with tc (tbf), and runs every
model x bandwidth x transport x preset of a scenario: warm-up iterations
then measured ones, repeated, presets interleaved. Reports a Markdown table
(stdout), CSV files, a gnuplot PNG and one Chrome-trace timeline per run.

Only the Python 3 standard library is used. Exit status: 0 when every run
completed, 1 when a run failed (or the report could not be written),
2 on bad input, 130 after Ctrl-C (everything is cleaned up in all cases).
"""

import argparse
import configparser
import csv
import datetime
import json
import math
import os
import platform
import random
import re
import select
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

PRESETS = ["baseline", "tensorflow", "mxnet", "p3", "tictac-tio",
           "tictac-tao", "bytescheduler", "ordo"]
TRANSPORTS = ["tcp", "rdma"]
NS_PREFIX = "ordo-bench-"
SUBNET = "10.77.0"
SCHED_PORT = 9200
CFG_STR_MAX = 160  # longest string value ordo's config accepts

# The source directory: CMake writes it here when it copies this file into
# the build directory as ps-bench; run from the tree, it is bench/..
_CONFIGURED_SOURCE_DIR = "@CMAKE_SOURCE_DIR@"
if _CONFIGURED_SOURCE_DIR.startswith("@"):
    SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
else:
    SOURCE_DIR = _CONFIGURED_SOURCE_DIR

SCENARIO_KEYS = {
    "models": "models replayed: names under conf/models/ or .json paths",
    "bandwidths_gbps": "link bandwidths in Gbit/s, per direction",
    "transports": "tcp and/or rdma",
    "presets": "scheduling presets (docs/presets.md)",
    "reference": "the preset speedups are measured against (default "
                 "baseline, else the first preset)",
    "workers": "worker processes (one namespace each)",
    "servers": "server processes (one namespace each)",
    "warmup": "iterations run before the measured ones, per run",
    "iterations": "measured iterations per run",
    "repetitions": "runs per configuration (presets interleaved)",
    "run_timeout_s": "a run still going after this many seconds failed",
    "mtu": "MTU of the emulated links (netns mode)",
    "tbf_latency_ms": "tbf queue limit, as time at the shaped rate",
}


class UsageError(Exception):
    """Bad input: exit status 2."""


class Interrupted(Exception):
    """SIGINT/SIGTERM/SIGHUP."""


def log(msg):
    print("ps-bench: " + msg, file=sys.stderr, flush=True)


def fmt_dur(s):
    s = max(0, int(round(s)))
    return "%d:%02d" % (s // 60, s % 60) if s < 3600 else \
        "%d:%02d:%02d" % (s // 3600, s % 3600 // 60, s % 60)


def fnum(v, digits=1):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return "%.*f" % (digits, v)


def words(s):
    return [w for w in re.split(r"[\s,]+", s.strip()) if w]


# --------------------------------------------------------------------------
# Scenario


def parse_positive_int(name, v, lo=0):
    try:
        n = int(v)
    except ValueError:
        raise UsageError("%s: '%s' is not an integer" % (name, v))
    if n < lo:
        raise UsageError("%s: %d is below %d" % (name, n, lo))
    return n


def parse_bandwidth(v):
    try:
        b = float(v)
    except ValueError:
        raise UsageError("bad bandwidth '%s': expected a number of Gbit/s "
                         "such as 1, 10 or 25" % v)
    if not math.isfinite(b) or b < 0.001 or b > 400:
        raise UsageError("bad bandwidth '%s': Gbit/s must lie in "
                         "[0.001, 400]" % v)
    return b


def parse_size(name, v):
    """Bytes from '1048576', '256K', '4M', '1G' (or KiB, MiB, GiB; powers
    of 1024), as ordo's config reads sizes."""
    m = re.match(r"^\s*(\d+)\s*([kKmMgG]?)(?:i?[bB])?\s*$", v)
    if not m:
        raise UsageError("%s: '%s' is not a size (bytes, or a number with "
                         "K, M or G)" % (name, v))
    n = int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[
        m.group(2).lower()]
    if n < 4 or n % 4:
        raise UsageError("%s: %s is not a positive multiple of 4 bytes" %
                         (name, v))
    return n


def size_label(n):
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, unit)
    return str(n)


def parse_preset(v):
    """A preset, or PRESET@PARTITION/CREDIT (either size may be left out:
    ordo@1M, ordo@/4M): the preset with scheduling.partition_size and
    credit_size set; either followed by +KEY=VALUE for more [scheduling]
    keys (ordo+credit_refine=off). Returns (label, preset, partition or
    None, credit or None, settings: ((key, value), ...)); the label is how
    rows name it."""
    head, *extras = v.split("+")
    settings = []
    for e in extras:
        key, eq, value = e.partition("=")
        if not eq or not re.fullmatch(r"[a-z_]+", key) or \
                not re.fullmatch(r"[A-Za-z0-9_.-]+", value):
            raise UsageError("'%s': +%s is not a [scheduling] KEY=VALUE "
                             "(e.g. ordo+credit_refine=off)" % (v, e))
        settings.append((key, value))
    base, _, sizes = head.partition("@")
    if base not in PRESETS:
        raise UsageError("unknown preset '%s' (allowed: %s, each optionally"
                         " as PRESET@PARTITION/CREDIT, e.g. ordo@1M/4M, "
                         "and +KEY=VALUE)" % (base, ", ".join(PRESETS)))
    suffix = "".join("+%s=%s" % kv for kv in settings)
    if "@" not in head:
        return head + suffix, base, None, None, tuple(settings)
    part, _, credit = sizes.partition("/")
    p = parse_size("partition size of '%s'" % v, part) if part else None
    c = parse_size("credit size of '%s'" % v, credit) if credit else None
    if p is None and c is None:
        raise UsageError("'%s': give PRESET@PARTITION/CREDIT (e.g. "
                         "ordo@1M/4M)" % v)
    if p and c and c < p:
        raise UsageError("'%s': the credit window is smaller than a "
                         "partition (no partition could ever be sent)" % v)
    label = base + "@" + (size_label(p) if p else "") + \
        ("/" + size_label(c) if c else "")
    return label + suffix, base, p, c, tuple(settings)


def grid_presets(base, sizes):
    """Every PRESET@P/C with P <= C of sizes (ps-bench --grid)."""
    sizes = sorted(set(sizes))
    return ["%s@%s/%s" % (base, size_label(p), size_label(c))
            for p in sizes for c in sizes if c >= p]


def parse_dilation(v):
    try:
        d = float(v)
    except ValueError:
        raise UsageError("--dilation: '%s' is not a number" % v)
    if not math.isfinite(d) or d < 1 or d > 1000:
        raise UsageError("--dilation: %s must lie in [1, 1000] (1: no "
                         "dilation)" % v)
    return d


def bw_label(b):
    return ("%g" % b)


def resolve_model(name):
    if name.endswith(".json") or "/" in name:
        path = os.path.abspath(name)
        label = os.path.splitext(os.path.basename(name))[0]
    else:
        path = os.path.join(SOURCE_DIR, "conf", "models", name + ".json")
        label = name
    if not os.path.isfile(path):
        avail = sorted(f[:-5] for f in os.listdir(
            os.path.join(SOURCE_DIR, "conf", "models"))
            if f.endswith(".json")) if os.path.isdir(
            os.path.join(SOURCE_DIR, "conf", "models")) else []
        raise UsageError("model '%s' not found (%s); shipped models: %s" %
                         (name, path, ", ".join(avail) or "none found"))
    if len(path) > CFG_STR_MAX:
        raise UsageError("model path longer than %d characters: %s" %
                         (CFG_STR_MAX, path))
    return label, path


def scenario_path(name):
    if os.path.sep in name or name.endswith(".ini"):
        return name
    return os.path.join(SOURCE_DIR, "conf", "bench", name + ".ini")


def load_scenario(path):
    if not os.path.isfile(path):
        raise UsageError("scenario file not found: %s" % path)
    cp = configparser.ConfigParser(inline_comment_prefixes=(";", "#"),
                                   comment_prefixes=(";", "#"))
    cp.optionxform = str
    try:
        cp.read(path)
    except configparser.Error as e:
        raise UsageError("%s: %s" % (path, e))
    sc = {"warmup": "1", "iterations": "3", "repetitions": "2",
          "workers": "2", "servers": "2", "transports": "tcp rdma",
          "presets": " ".join(PRESETS), "run_timeout_s": "180",
          "mtu": "9000", "tbf_latency_ms": "25"}
    for sec in cp.sections():
        if sec not in ("bench", "job") and not sec.startswith("model:"):
            raise UsageError("%s: unknown section [%s] (allowed: [bench], "
                             "[job], [model:NAME])" % (path, sec))
    if cp.has_section("bench"):
        for k, v in cp.items("bench"):
            if k not in SCENARIO_KEYS:
                raise UsageError("%s: unknown key '%s' in [bench] (allowed:"
                                 " %s)" % (path, k, ", ".join(SCENARIO_KEYS)))
            sc[k] = v
    sc["job"] = []
    if cp.has_section("job"):
        for k, v in cp.items("job"):
            if "." not in k:
                raise UsageError("%s: [job] key '%s' must be section.key" %
                                 (path, k))
            sc["job"].append("%s=%s" % (k, v))
    sc["per_model"] = {}
    for sec in cp.sections():
        if sec.startswith("model:"):
            over = {}
            for k, v in cp.items(sec):
                if k not in ("warmup", "iterations", "repetitions",
                             "run_timeout_s"):
                    raise UsageError("%s: [%s] may set warmup, iterations, "
                                     "repetitions, run_timeout_s; not '%s'" %
                                     (path, sec, k))
                over[k] = v
            sc["per_model"][sec[6:]] = over
    return sc


def build_plan(sc, args):
    """Validates the scenario plus command-line overrides."""
    for k in ("models", "bandwidths_gbps", "transports", "presets",
              "workers", "servers", "warmup", "iterations", "repetitions",
              "run_timeout_s"):
        v = getattr(args, k, None)
        if v is not None:
            sc[k] = str(v)
    if "models" not in sc or "bandwidths_gbps" not in sc:
        raise UsageError("the scenario names no models or no bandwidths")
    plan = {}
    plan["models"] = [resolve_model(m) for m in words(sc["models"])]
    plan["bandwidths"] = [parse_bandwidth(b)
                          for b in words(sc["bandwidths_gbps"])]
    plan["transports"] = words(sc["transports"])
    for t in plan["transports"]:
        if t not in TRANSPORTS:
            raise UsageError("unknown transport '%s' (allowed: %s)" %
                             (t, ", ".join(TRANSPORTS)))
    presets = words(sc["presets"])
    if getattr(args, "tune", False):
        if args.presets is None:
            presets = ["ordo"]
        if len(presets) != 1 or "@" in presets[0] or "+" in presets[0] or \
                getattr(args, "grid", None):
            raise UsageError("--tune tunes the sizes of one preset: give "
                             "--presets NAME (default ordo), no sizes, no "
                             "--grid")
    if getattr(args, "grid", None):
        sizes = [parse_size("--grid", v) for v in words(args.grid)]
        if not sizes:
            raise UsageError("--grid: no sizes")
        for p in presets:
            if "@" in p or "+" in p:
                raise UsageError("--grid sweeps the sizes of plain presets;"
                                 " '%s' has its own" % p)
        presets = [g for p in presets for g in grid_presets(p, sizes)]
    plan["preset_def"] = {}
    plan["presets"] = []
    for v in presets:
        label, base, part, credit, settings = parse_preset(v)
        plan["presets"].append(label)
        plan["preset_def"][label] = (base, part, credit, settings)
    # the reference: --reference (must run), else the scenario's when it
    # runs (--presets may leave it out), else baseline, else the first
    ref = getattr(args, "reference", None)
    if ref is not None and ref not in plan["presets"]:
        raise UsageError("--reference %s is not among the presets (%s)" %
                         (ref, ", ".join(plan["presets"])))
    if ref is None and sc.get("reference") in plan["presets"]:
        ref = sc["reference"]
    if ref is None:
        ref = "baseline" if "baseline" in plan["presets"] or \
            not plan["presets"] else plan["presets"][0]
    plan["reference"] = ref
    if not plan["models"] or not plan["bandwidths"] or \
            not plan["presets"] or not plan["transports"]:
        raise UsageError("empty axis: every one of models, bandwidths, "
                         "transports and presets needs a value")
    for axis in ("models", "bandwidths", "transports", "presets"):
        if len(set(map(str, plan[axis]))) != len(plan[axis]):
            raise UsageError("%s: a value is repeated" % axis)
    plan["workers"] = parse_positive_int("workers", sc["workers"], 1)
    plan["servers"] = parse_positive_int("servers", sc["servers"], 1)
    if plan["workers"] + plan["servers"] > 64:
        raise UsageError("at most 64 nodes (workers + servers) on one "
                         "machine")
    plan["mtu"] = parse_positive_int("mtu", sc["mtu"], 576)
    plan["tbf_latency_ms"] = parse_positive_int("tbf_latency_ms",
                                                sc["tbf_latency_ms"], 1)
    base = {}
    for k in ("warmup", "iterations", "repetitions", "run_timeout_s"):
        base[k] = parse_positive_int(k, sc[k], 1)
    plan["counts"] = {}
    for label, _ in plan["models"]:
        c = dict(base)
        for k, v in sc["per_model"].get(label, {}).items():
            if getattr(args, k, None) is None:  # the command line wins
                c[k] = parse_positive_int("[model:%s] %s" % (label, k), v, 1)
        plan["counts"][label] = c
    plan["job"] = list(sc["job"]) + list(args.set or [])
    plan["dilation"] = parse_dilation(getattr(args, "dilation", None) or 1)
    plan["tune_trials"] = 10  # ordo's default tune.trials
    plan["tune_seeds"] = []
    if getattr(args, "tune", False):
        plan["tune_seeds"] = [parse_positive_int("--tune-seeds", v)
                              for v in words(args.tune_seeds)]
        if not plan["tune_seeds"]:
            raise UsageError("--tune-seeds: no seed")
        for kv in plan["job"]:
            k, v = kv.split("=", 1) if "=" in kv else (kv, "")
            if k == "tune.trials":
                plan["tune_trials"] = parse_positive_int(k, v, 1)
            elif k in ("tune.seed", "tune.warmup_iterations",
                       "tune.measure_iterations", "tune.then",
                       "tune.endpoint", "checkpoint.dir"):
                raise UsageError("'%s' is set by ps-bench --tune (use "
                                 "--tune-seeds, --warmup, --iterations)" %
                                 kv)
    # time dilation multiplies the job's own compute_scale (the last one
    # set wins, as in ordo's config)
    plan["compute_scale"] = 1.0
    for kv in plan["job"]:
        if kv.startswith("model.compute_scale="):
            try:
                plan["compute_scale"] = float(kv.split("=", 1)[1])
            except ValueError:
                raise UsageError("bad --set '%s': not a number" % kv)
    if plan["dilation"] != 1:
        plan["job"] = [kv for kv in plan["job"]
                       if not kv.startswith("model.compute_scale=")]
    owned = ("cluster.servers", "cluster.workers", "cluster.bind_host",
             "cluster.advertise_host", "cluster.scheduler_host",
             "cluster.scheduler_port", "transport.type", "model.file",
             "worker.mode", "train.iterations", "scheduling.preset",
             "output.dir", "metrics.bandwidth_gbps", "link.bandwidth_gbps")
    for kv in plan["job"]:
        if not re.match(r"^[a-z_]+\.[a-z_]+=", kv):
            raise UsageError("bad --set '%s': expected section.key=value" %
                             kv)
        if kv.split("=", 1)[0] in owned:
            raise UsageError("'%s' is set by ps-bench per run (use its own "
                             "options: --models, --bandwidths, --presets, "
                             "--workers, --servers, --iterations...)" % kv)
    return plan


# --------------------------------------------------------------------------
# Emulated cluster


def run_cmd(argv, check=True, timeout=30):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv),
                                       (p.stderr or p.stdout).strip()))
    return p


def pid_is_bench(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return False
    return "ps-bench" in cmd or "ps_bench" in cmd


def kill_group(p, timeout=5):
    """SIGKILL to a still running process's group (started with
    start_new_session), then waits for it at most timeout seconds."""
    if p.poll() is not None:
        return
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass


def list_netns():
    p = run_cmd(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip()]


def kill_netns_processes(ns):
    p = run_cmd(["ip", "netns", "pids", ns], check=False)
    for tok in p.stdout.split():
        try:
            os.kill(int(tok), signal.SIGKILL)
        except (ValueError, OSError):
            pass


def remove_stale_namespaces():
    """Removes namespaces left by a ps-bench that is no longer running."""
    removed = []
    for ns in list_netns():
        m = re.match(r"^%s(\d+)-" % re.escape(NS_PREFIX), ns)
        if not m:
            continue
        pid = int(m.group(1))
        if pid != os.getpid() and pid_is_bench(pid):
            continue  # a ps-bench running beside us
        kill_netns_processes(ns)
        run_cmd(["ip", "netns", "del", ns], check=False)
        removed.append(ns)
    if removed:
        log("removed %d namespace(s) left by an earlier run: %s" %
            (len(removed), " ".join(removed)))
    return removed


def netns_available():
    """(True, '') when this process can build namespaces, else (False, why)."""
    if os.geteuid() != 0:
        return False, "not root (namespaces, veth and tc need root)"
    for tool in ("ip", "tc"):
        if not shutil.which(tool):
            return False, "'%s' not found (Debian package iproute2)" % tool
    probe = "%s%d-probe" % (NS_PREFIX, os.getpid())
    p = run_cmd(["ip", "netns", "add", probe], check=False)
    if p.returncode != 0:
        return False, "'ip netns add' failed: %s" % p.stderr.strip()
    ok, why = True, ""
    p = run_cmd(["ip", "-n", probe, "link", "add", "v0", "type", "veth",
                 "peer", "name", "v1"], check=False)
    if p.returncode != 0:
        ok, why = False, "cannot create veth pairs: %s" % p.stderr.strip()
    else:
        p = run_cmd(["tc", "-n", probe, "qdisc", "add", "dev", "v0", "root",
                     "tbf", "rate", "1gbit", "burst", "256k", "latency",
                     "25ms"], check=False)
        if p.returncode != 0:
            ok, why = False, "tc tbf unavailable: %s" % p.stderr.strip()
    run_cmd(["ip", "netns", "del", probe], check=False)
    return ok, why


# Bulk TCP streams from every worker to every server at once over the
# shaped links (the pattern of the pushes: each worker's uplink and each
# server's downlink carry several streams): the rate a host's link really
# delivers when it is busy (ps-sim's link rate, docs/sim.md).
LINK_PROBE_RECV = r"""
import socket, sys, threading, time
n_conn = int(sys.argv[3])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(n_conn)
s.settimeout(20)
print("ready", flush=True)
res = []
def take(c):
    c.settimeout(20)
    buf = bytearray(1 << 20)
    n, t0, t1 = 0, None, None
    while True:
        k = c.recv_into(buf)
        if not k:
            break
        now = time.monotonic()
        if t0 is None:
            t0 = now  # the bytes of the first read came before t0
        else:
            n += k
        t1 = now
    if t0 is not None:
        res.append((n, t0, t1))
th = []
for _ in range(n_conn):
    c, _ = s.accept()
    th.append(threading.Thread(target=take, args=(c,)))
    th[-1].start()
for t in th:
    t.join()
print(sum(r[0] for r in res), min(r[1] for r in res),
      max(r[2] for r in res), flush=True)
"""
LINK_PROBE_SEND = r"""
import socket, sys, threading, time
seconds = float(sys.argv[2])
def go(host, port):
    c = socket.create_connection((host, int(port)), timeout=20)
    buf = bytes(1 << 20)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        c.sendall(buf)
    c.close()
th = [threading.Thread(target=go, args=a.split(":")) for a in sys.argv[3:]]
for t in th:
    t.start()
for t in th:
    t.join()
"""
LINK_PROBE_PORT = 47911

# The model ps-bench calibrates ps-sim's link rate on (Bench.calibrate):
# TicTac's Seq-32, 32 parameters of 2 MiB in a chain with almost no
# compute, i.e. bulk transfers through the real binaries; not a model of
# the tables.
CAL_MODEL = "seq32"
# ...cut into partitions of this size to calibrate ps-sim's time per message
# (sim.machine_message_us): most tensors of the CNNs with many small
# tensors are below it (EfficientNet-B0, RegNetY-400MF: four in five).
MESSAGE_CAL_BYTES = 65536
# Messages of at most ZeroMQ's batch size (ZMQ_IN_BATCH_SIZE and
# ZMQ_OUT_BATCH_SIZE, 8192 by default) are copied through its batch
# buffers and share system calls with their neighbours; larger ones get a
# read or write of their own. ps-sim charges its time per message above it
# (sim.machine_message_min_bytes).
ZMQ_BATCH_BYTES = 8192


def netns_prefix(ns):
    """The command prefix that runs a program in namespace ns (none:
    here)."""
    return ["ip", "netns", "exec", ns] if ns else []


def node_sets(addr, sched_addr):
    """--set arguments that put a node on its host's address and point it
    at the scheduler's."""
    return ["--set", "cluster.bind_host=" + addr,
            "--set", "cluster.advertise_host=" + addr,
            "--set", "cluster.scheduler_host=" + sched_addr]


class Cluster:
    """Node namespaces on a bridge (netns mode) or plain loopback."""

    def __init__(self, mode, workers, servers, mtu=9000, tbf_latency_ms=25,
                 dilation=1.0):
        self.mode = mode
        self.dilation = dilation
        self.prefix = "%s%d-" % (NS_PREFIX, os.getpid())
        self.mtu = mtu
        self.tbf_latency_ms = tbf_latency_ms
        self.nodes = [("sched", "scheduler", 0)]
        self.nodes += [("s%d" % i, "server", i) for i in range(servers)]
        self.nodes += [("w%d" % i, "worker", i) for i in range(workers)]
        self.addr = {}
        self.created = []
        self.bridge_ns = self.prefix + "br"
        self.bandwidth = None

    def ns(self, name):
        return self.prefix + name

    def setup(self):
        if self.mode == "loopback":
            for name, _, _ in self.nodes:
                self.addr[name] = "127.0.0.1"
            return
        if self.mode == "device":  # every node on the RDMA device's address
            for name, _, _ in self.nodes:
                self.addr[name] = self.device_addr
            return
        br = self.bridge_ns
        run_cmd(["ip", "netns", "add", br])
        self.created.append(br)
        run_cmd(["ip", "-n", br, "link", "set", "lo", "up"])
        run_cmd(["ip", "-n", br, "link", "add", "br0", "type", "bridge"])
        run_cmd(["ip", "-n", br, "link", "set", "br0", "mtu", str(self.mtu),
                 "up"])
        for i, (name, _, _) in enumerate(self.nodes):
            ns = self.ns(name)
            addr = "%s.%d" % (SUBNET, i + 1)
            run_cmd(["ip", "netns", "add", ns])
            self.created.append(ns)
            run_cmd(["ip", "-n", br, "link", "add", "v" + name, "mtu",
                     str(self.mtu), "type", "veth", "peer", "name", "eth0",
                     "mtu", str(self.mtu), "netns", ns])
            run_cmd(["ip", "-n", br, "link", "set", "v" + name, "master",
                     "br0", "up"])
            run_cmd(["ip", "-n", ns, "addr", "add", addr + "/24", "dev",
                     "eth0"])
            run_cmd(["ip", "-n", ns, "link", "set", "eth0", "up"])
            run_cmd(["ip", "-n", ns, "link", "set", "lo", "up"])
            self.addr[name] = addr

    def burst_bytes(self, gbps):
        """tbf's bucket: one GSO packet (64 KiB) and one MTU, at every
        rate. A NIC never sends faster than its rate; what tbf's bucket
        holds beyond a packet goes out at the machine's speed after the
        link idled, which rewards traffic that idles between messages
        (stop-and-wait) with bursts no real link gives. The sustained
        rate is the same (ps-bench's bulk probe measures it). The queue
        limit is tbf_latency_ms at the rate."""
        return 65536 + self.mtu

    def shape(self, gbps):
        """tbf at gbps on both directions of every host's link; under time
        dilation N at gbps / N, with the same bucket in bytes and a queue
        limit N times longer in time (the same bytes): in undilated time,
        the same link."""
        self.bandwidth = gbps
        if self.mode in ("loopback", "device"):
            return
        rate_bps = gbps * 1e9 / self.dilation
        burst = self.burst_bytes(gbps)
        rate = "%dkbit" % max(8, int(round(rate_bps / 1000)))
        latency = "%dms" % int(round(self.tbf_latency_ms * self.dilation))
        for name, _, _ in self.nodes:
            for ns, dev in ((self.ns(name), "eth0"),
                            (self.bridge_ns, "v" + name)):
                run_cmd(["tc", "-n", ns, "qdisc", "replace", "dev", dev,
                         "root", "tbf", "rate", rate, "burst", str(burst),
                         "latency", latency])

    def probe_rate(self, seconds=1.5):
        """Gbit/s of payload per busy host link: bulk TCP streams from
        every worker to every server at once (one per pair, as the job's
        connections), total payload over the window in which all ran
        (after each stream's first read) / the number of hosts on the
        smaller side (the side whose links are full: the servers' when
        workers outnumber them, as in one PS and four workers); None
        where it cannot be measured."""
        servers = [n for n, role, _ in self.nodes if role == "server"]
        workers = [n for n, role, _ in self.nodes if role == "worker"]
        if self.mode != "netns" or not servers or not workers:
            return None
        recvs, sends = [], []
        try:
            for sv in servers:
                recvs.append(subprocess.Popen(
                    self.prefix_cmd(sv) +
                    [sys.executable, "-c", LINK_PROBE_RECV, self.addr[sv],
                     str(LINK_PROBE_PORT), str(len(workers))],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    text=True))
            for r in recvs:
                if r.stdout.readline().strip() != "ready":
                    return None
            dests = ["%s:%d" % (self.addr[sv], LINK_PROBE_PORT)
                     for sv in servers]
            for wk in workers:
                sends.append(subprocess.Popen(
                    self.prefix_cmd(wk) +
                    [sys.executable, "-c", LINK_PROBE_SEND, wk,
                     str(seconds)] + dests,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE))
            for p in sends:
                p.wait(timeout=seconds + 30)
            total, t0, t1 = 0.0, None, None
            for r in recvs:
                out, _ = r.communicate(timeout=30)
                n, a, b = out.split()
                total += float(n)
                t0 = float(a) if t0 is None else min(t0, float(a))
                t1 = float(b) if t1 is None else max(t1, float(b))
            if t1 - t0 < 0.1 * seconds:
                return None
            per_host = total / min(len(workers), len(servers))
            return per_host * 8.0 / (t1 - t0) / 1e9
        except (subprocess.TimeoutExpired, ValueError, OSError):
            return None
        finally:
            for p in recvs + sends:
                if p.poll() is None:
                    p.kill()
                    p.wait()

    def counters(self):
        """{node: (tx_bytes, rx_bytes)} seen from the node, or None."""
        if self.mode != "netns":
            return None
        p = run_cmd(["ip", "-n", self.bridge_ns, "-s", "-j", "link", "show"],
                    check=False)
        if p.returncode != 0:
            return None
        out = {}
        try:
            for link in json.loads(p.stdout):
                ifn = link.get("ifname", "").split("@")[0]
                st = link.get("stats64") or link.get("stats") or {}
                if ifn.startswith("v") and ifn[1:] in self.addr:
                    # the bridge side's rx is the node's tx and vice versa
                    out[ifn[1:]] = (st["rx"]["bytes"], st["tx"]["bytes"])
        except (ValueError, KeyError):
            return None
        return out

    def prefix_cmd(self, name):
        return netns_prefix(self.ns(name) if self.mode == "netns" else
                            None)

    def teardown(self):
        if self.mode != "netns":
            return
        for ns in reversed(self.created):
            kill_netns_processes(ns)
        for ns in reversed(self.created):
            run_cmd(["ip", "netns", "del", ns], check=False)
        left = [ns for ns in list_netns() if ns.startswith(self.prefix)]
        for ns in left:
            run_cmd(["ip", "netns", "del", ns], check=False)
        self.created = []


# --------------------------------------------------------------------------
# One run


class Proc:
    def __init__(self, name, popen, log_path):
        self.name = name
        self.p = popen
        self.log_path = log_path


class Run:
    """Starts every node of one job, waits, reads the results."""

    LIVE = []  # every Popen still possibly running, for the cleanup

    def __init__(self, bench, cfg, run_dir, extra_sets=()):
        self.b = bench
        self.cfg = cfg
        self.extra_sets = list(extra_sets)
        self.dir = run_dir
        self.procs = []
        self.iter_seen = {}
        self.events = {}
        self.lock = threading.Lock()

    def _sets(self, name):
        c = self.b.cluster
        return node_sets(c.addr[name], c.addr["sched"]) + \
            ["--set", "cluster.scheduler_port=%d" % self.port] + \
            self.extra_sets

    def _spawn(self, name, binary, extra=(), pass_fds=(), stdout_pipe=False):
        argv = self.b.cluster.prefix_cmd(name) + [
            os.path.join(self.b.bin_dir, binary), "--config",
            self.cfg["ini"]] + self._sets(name) + list(extra)
        logf = os.path.join(self.dir, name + ".log")
        lf = open(logf, "w")
        lf.write("$ " + " ".join(shlex.quote(a) for a in argv) + "\n")
        lf.flush()
        p = subprocess.Popen(argv, stdout=subprocess.PIPE if stdout_pipe
                             else lf, stderr=lf, stdin=subprocess.DEVNULL,
                             pass_fds=pass_fds, start_new_session=True)
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
                    nw = self.b.plan["workers"]
                    # measured window: from every worker past its warm-up
                    # to every worker at its last iteration
                    if len(done) == nw and min(done) >= warm and \
                            "start" not in self.events:
                        self.events["start"] = (time.monotonic(),
                                                self.b.cluster.counters(),
                                                cpu_times())
                    if len(done) == nw and min(done) >= total and \
                            "end" not in self.events:
                        self.events["end"] = (time.monotonic(),
                                              self.b.cluster.counters(),
                                              cpu_times())

    def execute(self):
        """Returns None on success, else the reason the run failed."""
        c = self.b.cluster
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


def undilate_sim(res, d):
    """ps-sim simulates the dilated cluster (links at bandwidth / d, op
    times x d): its times / d and rates x d are the undilated cluster's."""
    if d == 1 or not isinstance(res, dict):
        return res
    for k, v in list(res.items()):
        if k.endswith("_ms") and isinstance(v, (int, float)):
            res[k] = v / d
        elif k.endswith("_ms_each") and isinstance(v, list):
            res[k] = [x / d for x in v]
    if isinstance(res.get("samples_per_second"), (int, float)):
        res["samples_per_second"] *= d
    return res


def undilate_run(rec, d):
    """A run's measured times / d and rates x d (time dilation d): the
    numbers of the undilated cluster it emulates. Efficiency and the
    straggler share are ratios of times, unchanged."""
    if d == 1:
        return
    rec["iter_ms"] /= d
    rec["iters_ms"] = [x / d for x in rec["iters_ms"]]
    rec["samples_per_s"] *= d


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


def l2_cache_bytes():
    """The size of one core's L2 cache (sysfs), 0 where unknown."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for idx in sorted(os.listdir(base)):
            d = os.path.join(base, idx)
            with open(os.path.join(d, "level")) as f:
                if f.read().strip() != "2":
                    continue
            with open(os.path.join(d, "size")) as f:
                v = f.read().strip().upper()
            mult = {"K": 1024, "M": 1024 * 1024}.get(v[-1:], 1)
            return int(v.rstrip("KM")) * mult
    except (OSError, ValueError):
        pass
    return 0


def bisect(f, target, lo, hi, geometric, falling, steps=24):
    """x in [lo, hi] where f(x) crosses target (f monotonic: falling or
    rising in x), halving the interval `steps` times (geometrically:
    lo > 0); None where f fails or target is outside [f(lo), f(hi)]."""
    flo, fhi = f(lo), f(hi)
    if flo is None or fhi is None:
        return None
    if falling:
        flo, fhi = -flo, -fhi
        target = -target
    if not flo <= target <= fhi:
        return None
    for _ in range(steps):
        mid = math.sqrt(lo * hi) if geometric else (lo + hi) / 2.0
        at = f(mid)
        if at is None:
            return None
        if (-at if falling else at) < target:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi) if geometric else (lo + hi) / 2.0


# --------------------------------------------------------------------------
# Reading a run's timeline (--explain)


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


# --------------------------------------------------------------------------
# Statistics


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


# --------------------------------------------------------------------------
# The benchmark


class Bench:
    def __init__(self, args, plan, mode, mode_note):
        self.args = args
        self.plan = plan
        self.mode = mode
        self.mode_note = mode_note
        self.bin_dir = args.bin_dir
        self.out = args.out
        self.cluster = None
        self.results = []  # one dict per run
        self.sim = {}      # (model, bw, transport, preset) -> dict or str
        # ps-sim's TCP and RDMA models on separate hosts at each
        # bandwidth: (model, bw, preset) -> {"tcp": ..., "rdma": ...}
        self.predicted = {}
        self.rdma = getattr(args, "rdma", None) or \
            {"mode": "predict", "reason": "not probed", "port": None,
             "emulated": False}
        self.clusters = {}  # "tcp" (netns/loopback), "rdma" (device)
        self.link_rate = {}  # bw -> Gbit/s bulk TCP streams measured
        self.calibrated = {}  # bw -> sim.machine_gbps fitted on CAL_MODEL
        self.calibration = {}  # "%g" % bw -> {preset: its run record}
        self.latency = {}  # bw -> link.latency_us fitted on CAL_MODEL, p3
        self.small = {}  # bw -> sim.machine_small_gbps fitted on CAL_MODEL
        self.small_bytes = l2_cache_bytes()  # sim.machine_small_bytes
        self.message = {}  # bw -> sim.machine_message_us fitted on CAL_MODEL
        self.machine_probe = None  # bulk TCP streams without shaping
        self.rng = random.Random(1)
        self.sim_bin = os.path.join(self.bin_dir, "ps-sim")
        self.dilation = plan["dilation"]
        self.tunes = []  # one dict per ps-tune run (--tune)

    # -- plan ---------------------------------------------------------------
    def runs(self):
        """Every run in execution order: presets interleaved per repetition
        (rotated, so no preset always runs first after a change)."""
        out = []
        for model, path in self.plan["models"]:
            cnt = self.plan["counts"][model]
            for bw0 in self.plan["bandwidths"]:
                for tr in self.plan["transports"]:
                    bw = bw0
                    if tr == "rdma":
                        # unshaped: one row per model at the port's rate
                        if self.rdma["mode"] != "run" or \
                                bw0 != self.plan["bandwidths"][0]:
                            continue
                        bw = self.rdma["port"]["rate_gbps"]
                    presets = self.plan["presets"]
                    for rep in range(cnt["repetitions"]):
                        k = rep % len(presets)
                        for p in presets[k:] + presets[:k]:
                            base, part, credit, settings = \
                                self.plan["preset_def"][p]
                            out.append({"model": model, "model_file": path,
                                        "bw": bw, "transport": tr,
                                        "preset": p, "preset_base": base,
                                        "partition_size": part,
                                        "credit_size": credit,
                                        "settings": settings,
                                        "rep": rep + 1,
                                        "warmup": cnt["warmup"],
                                        "measured": cnt["iterations"],
                                        "total_iters": cnt["warmup"] +
                                        cnt["iterations"],
                                        "timeout": cnt["run_timeout_s"],
                                        # links not shaped: no dilation
                                        "dilation": 1.0 if tr == "rdma"
                                        else self.dilation})
        return out

    def job_ini(self, run, run_dir):
        dil = run.get("dilation", self.dilation)
        lines = [
            "; written by ps-bench for one run",
            "[cluster]", "servers = %d" % self.plan["servers"],
            "workers = %d" % self.plan["workers"],
            "[transport]", "type = %s" % run["transport"],
            "[model]", "file = %s" % run["model_file"],
        ] + (["compute_scale = %.9g" % (self.plan["compute_scale"] *
                                         dil)]
             if self.dilation != 1 else []) + [
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
                lines += self.sim_ini(self.sim_link(run["bw"]))
        return "\n".join(lines) + "\n"

    def sim_ini(self, link):
        """sim_sets(link) and fair sharing as INI lines, by section."""
        argv = self.sim_sets(link) + ["--set", "link.sharing=fair"]
        by_section = {}
        for kv in argv[1::2]:
            key, value = kv.split("=", 1)
            section, name = key.split(".", 1)
            by_section.setdefault(section, []).append(
                "%s = %s" % (name, value))
        lines = []
        for section, keys in by_section.items():
            lines += ["[%s]" % section] + keys
        return lines

    # -- simulator -------------------------------------------------------------
    def simulate(self, run):
        key = (run["model"], run["bw"], run["transport"], run["preset"])
        if key not in self.sim:
            link = self.sim_link(run["bw"]) if run["transport"] == "tcp" \
                else self.host_link(run["bw"], "rdma")
            self.sim[key] = self.sim_once(run, link)
        return self.sim[key]

    def host_link(self, bw, model):
        """ps-sim's links for separate hosts whose NICs run at bw: no
        bucket, no shared machine, the `model` transport's costs
        (link.model: tcp or rdma, docs/sim.md). TCP's efficiency is the
        payload share of a frame at the scenario's MTU (IPv4 and TCP
        headers with timestamps, 52 B; Ethernet framing, preamble and
        gap, 38 B); RDMA's is ps-sim's published default."""
        mtu = self.plan["mtu"]
        return {"rate": bw, "burst": 0, "burst_rate": 0.0, "machine": 0.0,
                "latency": None, "small": 0.0, "message": 0.0,
                "model": model,
                "efficiency": (mtu - 52.0) / (mtu + 38.0)
                if model == "tcp" else None}

    def sim_link(self, bw, machine=None, small=None, latency=None,
                 message=None):
        """ps-sim's links at bw (docs/bench.md, "ps-sim's links"): the
        rate bulk TCP streams got through them (else the nominal rate);
        in netns mode tbf's bucket, emptied at the rate bulk streams got
        without shaping; the machine's rate (or `machine`; 0 = no limit),
        its rate for messages that fit a core's L2 cache (or `small`;
        0 = the same), its time per message (or `message`) and the
        per-message latency (or `latency`; None = ps-sim's default)
        calibrated on CAL_MODEL."""
        if machine is None:
            machine = self.calibrated.get(bw, 0.0)
        if small is None:
            small = self.small.get(bw, 0.0)
        if latency is None:
            latency = self.latency.get(bw)
        if message is None:
            message = self.message.get(bw, 0.0)
        link = {"rate": self.link_rate.get(bw, bw / self.dilation),
                "burst": 0,
                "burst_rate": 0.0, "machine": machine, "latency": latency,
                "small": small if machine else 0.0,
                "message": message if machine else 0.0}
        if self.mode == "netns" and self.machine_probe and \
                self.machine_probe > link["rate"]:
            link["burst"] = self.cluster.burst_bytes(bw)
            link["burst_rate"] = self.machine_probe
        return link

    def sim_sets(self, link):
        """ps-sim's keys for `link` (sim_link) as --set arguments."""
        argv = ["--set", "link.bandwidth_gbps=%.6g" % link["rate"],
                "--set", "link.burst_bytes=%d" % link["burst"],
                "--set", "link.burst_gbps=%.6g" % link["burst_rate"],
                "--set", "sim.machine_gbps=%.6g" % link["machine"]]
        if link["latency"] is not None:
            argv += ["--set", "link.latency_us=%.6g" % link["latency"]]
        if link["small"]:
            argv += ["--set", "sim.machine_small_gbps=%.6g" % link["small"],
                     "--set", "sim.machine_small_bytes=%d" % self.small_bytes]
        if link["message"]:
            argv += ["--set", "sim.machine_message_us=%.6g" % link["message"],
                     "--set", "sim.machine_message_min_bytes=%d" %
                     ZMQ_BATCH_BYTES]
        if link.get("model"):
            argv += ["--set", "link.model=%s" % link["model"]]
        if link.get("efficiency"):
            argv += ["--set", "link.efficiency=%.6g" % link["efficiency"]]
        return argv

    def sim_once(self, run, link):
        """ps-sim's prediction for run on `link` (sim_link): its JSON as a
        dict, or a string saying why there is none."""
        if not os.access(self.sim_bin, os.X_OK):
            return "n/a (ps-sim not built)"
        ini = os.path.join(self.out, "sim-job.ini")
        with open(ini, "w") as f:
            f.write(self.job_ini(run, None))
        # one in-order stream per peer pair sharing the links fairly; the
        # job's keys may override the sharing
        argv = [self.sim_bin, "--config", ini, "--set", "link.sharing=fair"]
        for kv in self.plan["job"]:
            argv += ["--set", kv]
        argv += self.sim_sets(link) + ["--json"]
        try:
            p = run_cmd(argv, check=False, timeout=120)
            if p.returncode != 0:
                msg = (p.stderr.strip().splitlines() or ["?"])[-1]
                return "n/a (ps-sim failed: %s)" % msg[:100]
            return undilate_sim(json.loads(p.stdout.strip().splitlines()[-1]),
                                run.get("dilation", self.dilation))
        except (subprocess.TimeoutExpired, ValueError, IndexError) as e:
            return "n/a (ps-sim failed: %s)" % str(e)[:100]

    # -- running --------------------------------------------------------------
    def check_job_config(self, runs):
        """Every node would refuse a bad key with status 2: try the job's
        config on a scheduler first (loopback, ephemeral port, 100 ms)."""
        ini = os.path.join(self.out, "check-job.ini")
        with open(ini, "w") as f:
            f.write(self.job_ini(runs[0], None))
        argv = [os.path.join(self.bin_dir, "ps-scheduler"), "--config", ini]
        for kv in self.plan["job"]:
            argv += ["--set", kv]
        argv += ["--set", "cluster.scheduler_host=127.0.0.1",
                 "--set", "cluster.scheduler_port=0",
                 "--set", "cluster.connect_timeout_ms=100",
                 "--set", "cluster.register_timeout_ms=100",
                 "--set", "log.level=error"]
        try:
            p = run_cmd(argv, check=False, timeout=10)
        except subprocess.TimeoutExpired:
            return
        if p.returncode == 2:
            raise UsageError("the job configuration is refused: %s" %
                             p.stderr.strip())

    def execute(self):
        runs = self.runs()
        self.total = len(runs)
        os.makedirs(os.path.join(self.out, "runs"), exist_ok=True)
        if runs:
            self.check_job_config(runs)
        for r in runs:  # the simulator's predictions (also a time estimate)
            self.simulate(r)
        if "rdma" in self.plan["transports"]:
            self.predict_all()
        t0 = time.monotonic()
        if any(r["transport"] == "tcp" for r in runs):
            self.build_cluster()
            if self.mode == "netns":
                self.measure_machine()
        for i, run in enumerate(runs):
            if run["transport"] == "rdma":
                self.use_device_cluster()
            else:
                self.cluster = self.clusters["tcp"]
            if self.cluster.bandwidth != run["bw"]:
                self.shape(run["bw"], runs)
            elapsed = time.monotonic() - t0
            left = self.estimate_left(runs[i:])
            log("[%d/%d] %s %s Gbit/s %s %s rep %d/%d -- elapsed %s, about "
                "%s left" % (i + 1, len(runs), run["model"],
                             bw_label(run["bw"]), run["transport"],
                             run["preset"], run["rep"],
                             self.plan["counts"][run["model"]]["repetitions"],
                             fmt_dur(elapsed), fmt_dur(left)))
            self.results.append(self.one(i + 1, run))
        self.wall = time.monotonic() - t0

    def use_device_cluster(self):
        """The rdma runs' cluster: every node on the RDMA device's IPv4
        address, in this namespace, links not shaped."""
        if "rdma" not in self.clusters:
            c = Cluster("device", self.plan["workers"], self.plan["servers"])
            c.device_addr = self.rdma["port"]["addr"]
            c.setup()
            self.clusters["rdma"] = c
            log("rdma runs on %s: every node on %s, links not shaped "
                "(port rate %s)%s" % (self.rdma["port"]["where"],
                                      c.device_addr,
                                      self.rdma["port"]["rate"],
                                      " -- " + RDMA_EMULATED_NOTE
                                      if self.rdma["emulated"] else ""))
        self.cluster = self.clusters["rdma"]

    def predict_all(self):
        """ps-sim's TCP and RDMA link models, separate hosts at every
        bandwidth of the plan, every model and preset."""
        for model, path in self.plan["models"]:
            for bw in self.plan["bandwidths"]:
                for p in self.plan["presets"]:
                    base, part, credit, settings = \
                        self.plan["preset_def"][p]
                    run = {"model": model, "model_file": path, "bw": bw,
                           "transport": "tcp", "preset": p,
                           "preset_base": base, "partition_size": part,
                           "credit_size": credit, "settings": settings,
                           "dilation": 1.0,
                           "total_iters": self.plan["counts"][model][
                               "warmup"] + self.plan["counts"][model][
                               "iterations"]}
                    self.predicted[(model, bw, p)] = {
                        m: self.sim_once(run, self.host_link(bw, m))
                        for m in ("tcp", "rdma")}

    def build_cluster(self):
        self.cluster = Cluster(self.mode, self.plan["workers"],
                               self.plan["servers"], self.plan["mtu"],
                               self.plan["tbf_latency_ms"], self.dilation)
        self.clusters["tcp"] = self.cluster
        log("building the emulated cluster (%s): 1 scheduler, %d server(s),"
            " %d worker(s)" % (self.mode, self.plan["servers"],
                               self.plan["workers"]))
        self.cluster.setup()

    def shape(self, bw, runs):
        """Shapes the links to bw; in netns mode measures them and
        calibrates ps-sim there (once per bandwidth)."""
        self.cluster.shape(bw)
        if self.cluster.mode == "netns":
            log("links shaped to %g Gbit/s per direction (tbf)%s" %
                (bw / self.dilation, self.dilated(bw)))
            self.measure_link(bw, runs)

    def measure_machine(self):
        """Before any shaping: what bulk TCP streams get between the
        namespaces: the rate at which a link with tokens in its bucket
        empties it, in ps-sim."""
        self.machine_probe = self.cluster.probe_rate()
        if self.machine_probe is not None:
            log("bulk TCP streams worker -> server get %.3f Gbit/s per host "
                "link without shaping" % self.machine_probe)

    def measure_link(self, bw, runs):
        """Once per bandwidth: measures what bulk TCP streams get through
        the shaped links, calibrates ps-sim's machine on CAL_MODEL and
        simulates bw's rows again."""
        if bw in self.link_rate or "%g" % bw in self.calibration:
            return
        rate = self.cluster.probe_rate()
        if rate is None:
            log("could not measure the links' rate at %g Gbit/s with bulk "
                "TCP streams" % bw)
        else:
            self.link_rate[bw] = rate
            log("bulk TCP streams worker -> server get %.3f Gbit/s per "
                "host link at %g Gbit/s%s" % (rate, bw / self.dilation,
                                              self.dilated(bw)))
        if not self.args.no_calibration:
            self.calibrate(bw)
        log("ps-sim at %g Gbit/s: links of %.3f Gbit/s, %s, %s, %s, %s" %
            (bw, self.sim_link(bw)["rate"], self.machine_label(bw),
             self.small_label(bw), self.message_label(bw),
             self.latency_label(bw)))
        for k in [k for k in self.sim if k[1] == bw]:
            del self.sim[k]
        for r in runs:
            if r["bw"] == bw:
                self.simulate(r)

    def dilated(self, bw):
        """', i.e. BW Gbit/s dilated xN' under time dilation, else ''."""
        if self.dilation == 1:
            return ""
        return ": %g Gbit/s dilated x%g" % (bw, self.dilation)

    def machine_label(self, bw):
        if bw not in self.calibrated:
            return "machine not calibrated (no limit)"
        if not self.calibrated[bw]:
            return "the links alone explain %s (no machine limit)" % \
                CAL_MODEL
        return "machine moving %.3f Gbit/s over all links (calibrated " \
            "on %s, baseline)" % (self.calibrated[bw], CAL_MODEL)

    def small_label(self, bw):
        if bw not in self.small:
            return "messages up to a core's L2 cache not calibrated"
        return "%.3f Gbit/s for messages up to %d B (a core's L2 cache; " \
            "calibrated on %s, baseline in such partitions)" % (
                self.small[bw], self.small_bytes, CAL_MODEL)

    def message_label(self, bw):
        if bw not in self.message:
            return "time per message not calibrated"
        return "%.1f us of the machine per message over %d B (calibrated " \
            "on %s, baseline in partitions of %d B)" % (
                self.message[bw], ZMQ_BATCH_BYTES, CAL_MODEL,
                MESSAGE_CAL_BYTES)

    def latency_label(self, bw):
        if bw not in self.latency:
            return "latency not calibrated (ps-sim's default)"
        return "%.0f us per message (calibrated on %s, p3)" % (
            self.latency[bw], CAL_MODEL)

    def calibrate(self, bw):
        """Runs the real job on CAL_MODEL (a model the tables do not hold)
        on links shaped to bw, three times, and fits the three numbers of
        ps-sim's links that cannot be measured directly (docs/bench.md),
        each by bisection on ps-sim's prediction of one run's measured
        iteration time; nothing is fitted to the runs it predicts:
        - with the baseline preset (whole tensors, bandwidth-bound):
          sim.machine_gbps, the rate at which the one emulating machine
          moves bytes over all links together (its two cores copy every
          byte: ZeroMQ, the kernel, veth, the bridge, tbf); 0 when ps-sim
          is as slow as the measurement without a limit;
        - with the baseline preset cut into partitions of a core's L2
          cache size (where /sys says it): sim.machine_small_gbps, the
          machine's rate for messages that fit that cache (their copies
          are cheaper: ordo's 1 MiB partitions moved 20 % faster than
          ByteScheduler's 4 MiB on VGG16 at 10 Gbit/s, same bytes);
        - with the baseline preset cut into partitions of
          MESSAGE_CAL_BYTES: sim.machine_message_us, the machine's time
          per message beyond its bytes (system calls, wake-ups, the gate,
          the acknowledgement: what models of many small tensors pay);
          this and the small-message rate are fitted alternately, twice;
        - with p3 (small slices, stop-and-wait: latency-bound):
          link.latency_us, what a message waits beyond its bytes on this
          machine (waking the receiving process on busy cores).
        Leaves either uncalibrated where its run or ps-sim fails."""
        base = self.calibration_run(bw, "baseline")
        if base is None:
            return

        def at_machine(machine):
            return self.predict(base, self.sim_link(bw, machine))
        unlimited = at_machine(0)
        if unlimited is None:
            return
        if unlimited >= base["measured_ms"]:
            self.calibrated[bw] = 0.0
        else:
            # never binding above every host's two directions at full rate
            hi = 2.0 * (self.plan["workers"] + self.plan["servers"]) * \
                max(self.sim_link(bw)["rate"], self.machine_probe or 0)
            machine = bisect(at_machine, base["measured_ms"], hi / 1000.0, hi,
                             geometric=True, falling=True)
            if machine is None:
                return
            self.calibrated[bw] = machine
        small = msgs = None
        if self.calibrated[bw] and self.small_bytes:
            small = self.calibration_run(bw, "baseline", self.small_bytes)
        if self.calibrated[bw]:
            msgs = self.calibration_run(bw, "baseline", MESSAGE_CAL_BYTES)
        # The rate for small messages and the time per message explain
        # each other's run in part (a 1 MiB message pays its time per
        # message too): fit each with the other fixed, twice over.
        for _ in range(2):
            if small is not None:
                fit = bisect(
                    lambda m: self.predict(small, self.sim_link(bw, small=m)),
                    small["measured_ms"], self.calibrated[bw] / 30.0,
                    self.calibrated[bw] * 30.0, geometric=True, falling=True)
                if fit is not None:
                    self.small[bw] = fit
            if msgs is not None:
                def at_message(us):
                    return self.predict(msgs, self.sim_link(bw, message=us))
                at_zero = at_message(0.0)
                if at_zero is not None and at_zero >= msgs["measured_ms"]:
                    self.message[bw] = 0.0
                else:
                    fit = bisect(at_message, msgs["measured_ms"], 0.0,
                                 1000.0, geometric=False, falling=False)
                    if fit is not None:
                        self.message[bw] = fit
        p3 = self.calibration_run(bw, "p3")
        if p3 is None:
            return
        def at_latency(latency):
            return self.predict(p3, self.sim_link(bw, latency=latency))
        at_zero = at_latency(0.0)
        if at_zero is not None and at_zero >= p3["measured_ms"]:
            self.latency[bw] = 0.0
            return
        latency = bisect(at_latency, p3["measured_ms"], 0.0, 5000.0,
                         geometric=False, falling=False)
        if latency is not None:
            self.latency[bw] = latency

    def calibration_run(self, bw, preset, partition_size=None):
        """One real run of CAL_MODEL at bw (runs/cal-BW[-PRESET][-SIZE]),
        optionally with its tensors cut into partitions of
        partition_size: the run dict with measured_ms added, None where
        it failed."""
        # 120 s, or the longest run timeout asked for (--run-timeout)
        timeout = max([120] + [c["run_timeout_s"]
                               for c in self.plan["counts"].values()])
        run = {"model": CAL_MODEL, "model_file": resolve_model(CAL_MODEL)[1],
               "bw": bw, "transport": "tcp", "preset": preset,
               "rep": 1, "warmup": 2, "measured": 16, "total_iters": 18,
               "timeout": timeout, "partition_size": partition_size}
        what = preset + (", partitions of %d B" % partition_size
                         if partition_size else "")
        log("calibrating ps-sim at %g Gbit/s: %s, %s, %d iterations"
            % (bw, CAL_MODEL, what, run["total_iters"]))
        name = "cal-%g" % bw + ("" if preset == "baseline" else "-" + preset)
        if partition_size:
            name += "-%d" % partition_size
        rec = self.one(name, run)
        self.calibration.setdefault("%g" % bw, {})[what] = rec
        if rec["status"] != "ok":
            return None
        run["measured_ms"] = rec["iter_ms"]
        return run

    def predict(self, run, link):
        res = self.sim_once(run, link)
        return res.get("iteration_ms") if isinstance(res, dict) else None

    def estimate_left(self, runs):
        done = {}
        for r in self.results:
            done.setdefault((r["model"], r["bw"]), []).append(r["wall_s"])
        every = [r["wall_s"] for r in self.results]
        left = 0.0
        for run in runs:
            same = done.get((run["model"], run["bw"]))
            if same:
                left += statistics.mean(same)
                continue
            sim = self.sim.get((run["model"], run["bw"], run["transport"],
                                run["preset"]))
            if isinstance(sim, dict) and sim.get("iteration_ms"):
                est = 3.0 + run["total_iters"] * sim["iteration_ms"] * \
                    run.get("dilation", self.dilation) / 1000.0
                if every:  # scale by how the machine did on earlier runs
                    est *= 1.5
                left += est
            elif every:
                left += statistics.mean(every)
            else:
                left += 5.0 + 2.0 * run["total_iters"]
        return left

    def one(self, idx, run):
        """Runs one job; idx: its number in the plan, or a name."""
        run_dir = os.path.join(self.out, "runs", "%03d" % idx
                               if isinstance(idx, int) else idx)
        if len(run_dir) > CFG_STR_MAX:
            raise UsageError("--out path too long: output.dir must fit in "
                             "%d characters" % CFG_STR_MAX)
        os.makedirs(run_dir, exist_ok=True)
        ini = os.path.join(run_dir, "job.ini")
        with open(ini, "w") as f:
            f.write(self.job_ini(run, run_dir))
            # [job] keys go on the command line (below) so that a key the
            # file also sets is overridden, as the scenario says
        cfg = dict(run)
        cfg["ini"] = ini
        rec = dict(run)
        rec.update({"run": idx, "dir": run_dir, "status": "ok",
                    "reason": ""})
        t = time.monotonic()
        extra = []
        for kv in self.plan["job"]:
            extra += ["--set", kv]
        r = Run(self, cfg, run_dir, extra)
        failure = None
        try:
            failure = r.execute()
        finally:
            r.kill()
        rec["wall_s"] = time.monotonic() - t
        if not failure:
            try:
                per = read_metrics(run_dir, self.plan["workers"],
                                   run["warmup"])
                rec.update(summarize_run(per))
                undilate_run(rec, run.get("dilation", self.dilation))
                if len(rec["iters_ms"]) < run["measured"]:
                    failure = "only %d of %d measured iterations in the " \
                        "metrics" % (len(rec["iters_ms"]), run["measured"])
            except (OSError, ValueError, KeyError) as e:
                failure = "cannot read the metrics: %s" % e
        ntl = merge_timeline(run_dir, self.plan["servers"],
                             self.plan["workers"])
        rec["timeline"] = os.path.join(run_dir, "timeline.json") if ntl \
            else ""
        # NIC throughput per host over the measured window
        nic = {}
        ev = r.events
        if "start" in ev and "end" in ev and ev["start"][1] and \
                ev["end"][1] and ev["end"][0] > ev["start"][0]:
            dt = ev["end"][0] - ev["start"][0]
            dt /= run.get("dilation", self.dilation)  # undilated time
            for host, (tx1, rx1) in ev["end"][1].items():
                tx0, rx0 = ev["start"][1].get(host, (tx1, rx1))
                nic[host] = ((tx1 - tx0) * 8 / dt / 1e9,
                             (rx1 - rx0) * 8 / dt / 1e9)
        rec["nic"] = nic
        rec["cpu_pct"] = None
        if "start" in ev and "end" in ev and ev["start"][2] and ev["end"][2]:
            (b0, t0), (b1, t1) = ev["start"][2], ev["end"][2]
            if t1 > t0:
                rec["cpu_pct"] = 100.0 * (b1 - b0) / (t1 - t0)
        if failure:
            rec["status"] = "failed"
            rec["reason"] = failure
            log("    run %s FAILED: %s (logs in %s)" % (idx, failure,
                                                      run_dir))
        else:
            busiest = max(nic.items(), key=lambda kv: max(kv[1]))[0] \
                if nic else None
            log("    %.1f ms/iteration, %.1f samples/s, E %.3f, straggler "
                "%.3f%s (%.1f s)" % (rec["iter_ms"], rec["samples_per_s"],
                                     rec["efficiency"], rec["straggler"],
                                     ", busiest NIC %s %.2f/%.2f Gbit/s "
                                     "tx/rx" % ((busiest,) + nic[busiest])
                                     if busiest else "", rec["wall_s"]))
        return rec

    def cleanup(self):
        for p in Run.LIVE:
            kill_group(p)
        for c in self.clusters.values():
            c.teardown()
        if self.cluster and self.cluster not in self.clusters.values():
            self.cluster.teardown()

    # -- tuning (--tune) ---------------------------------------------------
    def execute_tune(self):
        """ps-tune on the emulated cluster, once per model x bandwidth x
        seed, after the links are measured and ps-sim calibrated there
        (its prior, with --set tune.prior=sim): ps-tune runs in the
        scheduler's namespace (it listens on 127.0.0.1) and starts each
        trial's job through `ps-bench --launch-job`, which puts every node
        in its own namespace as a run does."""
        self.build_cluster()
        t0 = time.monotonic()
        if self.mode == "netns":
            self.measure_machine()
        plan = [(m, p, bw, seed) for m, p in self.plan["models"]
                for bw in self.plan["bandwidths"]
                for seed in self.plan["tune_seeds"]]
        for i, (model, path, bw, seed) in enumerate(plan):
            if self.cluster.bandwidth != bw:
                self.shape(bw, [])
            log("[%d/%d] ps-tune: %s %s Gbit/s seed %d -- elapsed %s" % (
                i + 1, len(plan), model, bw_label(bw), seed,
                fmt_dur(time.monotonic() - t0)))
            self.tunes.append(self.tune_one(model, path, bw, seed))
        self.wall = time.monotonic() - t0

    def tune_one(self, model, path, bw, seed):
        cnt = self.plan["counts"][model]
        trials = self.plan["tune_trials"]
        label = self.plan["presets"][0]
        base, part, credit, _ = self.plan["preset_def"][label]
        d = os.path.join(self.out, "tune", "%s-%s-seed%d" % (
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
            f.write(self.job_ini(run, d))
        state = os.path.join(d, "cluster.json")
        with open(state, "w") as f:
            json.dump({"bin_dir": self.bin_dir,
                       "nodes": [[n, role, self.cluster.ns(n)
                                  if self.mode == "netns" else "",
                                  self.cluster.addr[n]]
                                 for n, role, _ in self.cluster.nodes]}, f)
        launcher = os.path.join(d, "launch-job")
        with open(launcher, "w") as f:
            f.write("#!/bin/sh\n# written by ps-bench --tune: a ps-tune "
                    "launcher that starts the job in the emulated cluster\n"
                    "exec %s %s --launch-job %s \"$@\"\n" % (
                        shlex.quote(sys.executable),
                        shlex.quote(os.path.abspath(sys.argv[0])),
                        shlex.quote(state)))
        os.chmod(launcher, 0o755)
        argv = self.cluster.prefix_cmd("sched") + [
            os.path.join(self.bin_dir, "ps-tune"), "--launcher", launcher,
            "--config", ini]
        for kv in self.plan["job"]:
            argv += ["--set", kv]
        # ps-sim's calibrated links, for tune.prior = sim
        argv += ["--set", "link.sharing=fair"] + \
            self.sim_sets(self.sim_link(bw))
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
            for n, _, _ in self.cluster.nodes:  # the job's processes
                if self.mode == "netns":
                    kill_netns_processes(self.cluster.ns(n))
        rec["wall_s"] = time.monotonic() - t
        rec.update(read_tune(d, self.dilation))
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

    def report_head(self, title, argv):
        """A report's first lines: title, command, machine, date."""
        return ["# " + title, "",
                "- command: `%s`" % " ".join(shlex.quote(a) for a in argv),
                "- machine: %s" % self.machine(),
                "- date: %s" % datetime.datetime.now().strftime(
                    "%Y-%m-%d %H:%M")]

    def report_tune(self, argv):
        out = self.report_head("ps-bench --tune report", argv)
        w = out.append
        w("- cluster: 1 scheduler, %d server(s), %d worker(s)%s" % (
            self.plan["servers"], self.plan["workers"],
            ", each in its own network namespace" if self.mode == "netns"
            else " on loopback (links NOT shaped)"))
        if self.mode == "netns" and not self.args.no_calibration:
            w("- ps-sim's links (the prior of tune.prior = sim): %s" %
              "; ".join(self.calibration_notes()))
        if self.dilation != 1:
            w("- time dilation x%g: samples/s below are undilated "
              "(measured x %g)" % (self.dilation, self.dilation))
        w("- ps-tune runs: %d, %d completed; wall time %s; results in %s" %
          (len(self.tunes), sum(r["status"] == "ok" for r in self.tunes),
           fmt_dur(self.wall), self.out))
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
        with open(os.path.join(self.out, "report.md"), "w") as f:
            f.write(text)
        with open(os.path.join(self.out, "tune.csv"), "w", newline="") as f:
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
                                 b.get("credit", ""), "%g" % self.dilation])
        sys.stdout.write(text + "\nFiles: %s/report.md, tune.csv (every "
                         "trial of every run), tune/MODEL-BW-seedN/ (ps-tune's"
                         " tune.csv, best.ini, tune.png, ps-tune.log)\n" %
                         self.out)
        sys.stdout.flush()

    # -- report ---------------------------------------------------------------
    def aggregate(self):
        rows = []
        keys = []
        for r in self.results:
            k = (r["model"], r["bw"], r["transport"], r["preset"])
            if k not in keys:
                keys.append(k)
        order = {p: i for i, p in enumerate(self.plan["presets"])}
        bws = self.plan["bandwidths"]
        # rdma rows that ran sit at the port's rate, after the tcp ones
        keys.sort(key=lambda k: ([m for m, _ in self.plan["models"]].index(
            k[0]), k[2] != "tcp", bws.index(k[1]) if k[1] in bws
            else len(bws), order[k[3]]))
        by = {}
        for r in self.results:
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
            sim = self.sim.get(k)
            a["sim"] = sim
            rows.append(a)
        # speedups over the reference preset
        for a in rows:
            base = [b for b in rows
                    if b["preset"] == self.plan["reference"] and
                    (b["model"], b["bw"], b["transport"]) ==
                    (a["model"], a["bw"], a["transport"])]
            a["speedup"] = a["ci"] = None
            a["ci_over"] = ""
            if base and "iter_ms" in base[0] and "iter_ms" in a:
                b = base[0]
                a["speedup"] = b["iter_ms"] / a["iter_ms"]
                if len(b["rep_ms"]) >= 2 and len(a["rep_ms"]) >= 2:
                    a["ci"] = bootstrap_ratio(b["rep_ms"], a["rep_ms"],
                                              self.rng)
                    a["ci_over"] = "repetitions"
                else:
                    a["ci"] = bootstrap_ratio(b["all_iters"], a["all_iters"],
                                              self.rng)
                    a["ci_over"] = "iterations"
        return rows

    def machine(self):
        cpu = "?"
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("model name"):
                        cpu = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        return "%d CPU(s) (nproc), %s, Linux %s" % (
            len(os.sched_getaffinity(0)), cpu, platform.release())

    def calibration_notes(self):
        notes = []
        for bw in self.plan["bandwidths"]:
            recs = self.calibration.get("%g" % bw)
            if recs is None:
                continue
            link = self.sim_link(bw)
            how = ", ".join(
                "%s %.1f ms per iteration measured" % (p, r["iter_ms"])
                if r["status"] == "ok" else "%s failed: %s" % (p, r["reason"])
                for p, r in recs.items())
            notes.append("%g Gbit/s: links of %.3f Gbit/s%s, %s, %s, %s, %s "
                         "(%s)"
                         % (bw, link["rate"], ", tbf bucket %d B emptied at "
                            "%.3f Gbit/s" % (link["burst"],
                                             link["burst_rate"])
                            if link["burst"] else "", self.machine_label(bw),
                            self.small_label(bw), self.message_label(bw),
                            self.latency_label(bw), how))
        return notes or ["none (no calibration run)"]

    def report(self, argv):
        rows = self.aggregate()
        self.rows = rows
        out = self.report_head("ps-bench report", argv)
        w = out.append
        if "tcp" not in self.clusters:
            w("- cluster: 1 scheduler, %d server(s), %d worker(s)%s" % (
                self.plan["servers"], self.plan["workers"],
                ", every node on %s (the RDMA device's address), links not "
                "shaped" % self.rdma["port"]["addr"] if self.rdma["mode"] ==
                "run" else ": no tcp run"))
        w = (lambda line: None) if "tcp" not in self.clusters else out.append
        w("- cluster: 1 scheduler, %d server(s), %d worker(s), each in its "
          "own network namespace" % (self.plan["servers"],
                                     self.plan["workers"])
          if self.mode == "netns" else
          "- cluster: 1 scheduler, %d server(s), %d worker(s) on loopback" %
          (self.plan["servers"], self.plan["workers"]))
        if self.mode == "netns":
            w("- links: veth pairs to a bridge, tbf in both directions of "
              "every host at the bandwidth of the row, MTU %d" %
              self.plan["mtu"])
            if self.link_rate or self.machine_probe:
                w("- bulk TCP streams from every worker to every server at "
                  "once got %s per host link" % ", ".join(
                      (["%.3f Gbit/s unshaped" % self.machine_probe]
                       if self.machine_probe else []) +
                      ["%.3f Gbit/s on %g" % (v, k)
                       for k, v in sorted(self.link_rate.items())]))
            if self.args.no_calibration:
                w("- ps-sim's links: the bulk streams' rate with tbf's "
                  "bucket; machine not calibrated (--no-calibration)")
            else:
                w("- ps-sim's links (docs/bench.md), calibrated on the real "
                  "job with %s (runs/cal-*): %s" % (
                      CAL_MODEL, "; ".join(self.calibration_notes())))
        else:
            w("- **WARNING: loopback mode, links NOT shaped** (%s): the "
              "bandwidth column only sets the E oracle and ps-sim; iteration"
              " times are those of loopback" % self.mode_note)
        if self.dilation != 1:
            w("- **time dilation x%g** (DieCast, NSDI 2006): every link "
              "shaped to its bandwidth / %g, every op time x %g "
              "(model.compute_scale %g), tbf's queue limit x %g in time (the"
              " same bytes); every time and rate in the tables is "
              "undilated (measured / %g, x %g); the link rates and ps-sim's "
              "calibration above are of the dilated links; CPU busy %% is "
              "the real machine's" % ((self.dilation,) * 3 + (
                  self.plan["compute_scale"] * self.dilation,) +
                  (self.dilation,) * 3))
        w = out.append
        if "rdma" in self.plan["transports"]:
            w("- rdma: " + self.rdma_label())
        w("- runs: %d, %d completed, %d failed; wall time %s; results in %s"
          % (len(self.results),
             sum(r["status"] == "ok" for r in self.results),
             sum(r["status"] != "ok" for r in self.results),
             fmt_dur(self.wall), self.out))
        counts = sorted({(m, c["warmup"], c["iterations"], c["repetitions"])
                         for m, c in self.plan["counts"].items()})
        w("- per run: " + "; ".join(
            "%s %d warm-up + %d measured iterations, %d repetition(s)" % c
            for c in counts))
        w("")
        hdr = ["model", "Gbit/s", "transport", "preset", "runs ok",
               "iteration ms (median)", "spread min-max", "samples/s",
               "speedup vs %s [95%% CI]" % self.plan["reference"], "E",
               "straggler",
               "busiest NIC Gbit/s (% of link)", "CPU busy %", "sim ms",
               "physical lower ms", "measured / lower"]
        w("| " + " | ".join(hdr) + " |")
        w("|" + "|".join(["---"] * 4 + ["---:"] * (len(hdr) - 4)) + "|")
        done_rdma = set()
        for a in rows:
            cells = [a["model"], bw_label(a["bw"]), a["transport"],
                     a["preset"], "%d/%d" % (a["ok"], a["runs"])]
            if "iter_ms" in a:
                cells += [fnum(a["iter_ms"]),
                          "%s-%s (%.0f%%)" % (fnum(a["iter_min"]),
                                              fnum(a["iter_max"]),
                                              a["spread_pct"]),
                          fnum(a["samples_per_s"])]
                if a["speedup"] is None:
                    cells.append("n/a (no baseline)")
                elif a["ci"]:
                    cells.append("%.3f [%.3f, %.3f]%s" % (
                        a["speedup"], a["ci"][0], a["ci"][1],
                        "" if a["ci_over"] == "repetitions" else " (iter.)"))
                else:
                    cells.append("%.3f" % a["speedup"])
                cells += [fnum(a["efficiency"], 3), fnum(a["straggler"], 3)]
                if a.get("nic_max") is not None:
                    cells.append("%.2f (%.0f%%)" % (
                        a["nic_max"], 100 * a["nic_max"] / a["bw"]))
                else:
                    cells.append("n/a (rdma device)" if a["transport"] ==
                                 "rdma" else "n/a (loopback)"
                                 if self.mode != "netns" else "n/a")
                cells.append(fnum(a.get("cpu_pct"), 0))
            else:
                cells += ["FAILED: " + a["failed_reasons"][:80]] + \
                    ["-"] * 7
            sim = a["sim"]
            if isinstance(sim, dict):
                low = sim.get("physical_lower_ms")
                cells += [fnum(sim.get("iteration_ms")), fnum(low),
                          "%.2f" % (a["iter_ms"] / low)
                          if low and "iter_ms" in a else "n/a"]
            else:
                cells += [sim or "n/a", sim or "n/a", "n/a"]
            w("| " + " | ".join(cells) + " |")
        for a in self.predicted_rows():
            sim = a["sim"]
            cells = [a["model"], bw_label(a["bw"]), "rdma", a["preset"],
                     "0/0", "predicted only, %s" % a["why"], "-"]
            if isinstance(sim, dict):
                def simv(k, d=1):
                    v = sim.get(k)
                    return "n/a" if v is None or not math.isfinite(v) \
                        else "%s (sim)" % fnum(v, d)
                cells += [simv("samples_per_second"),
                          "%.3f (sim)" % a["speedup"] if a["speedup"]
                          else "n/a", simv("efficiency", 3),
                          simv("straggler", 3), "-",
                          "-", fnum(sim.get("iteration_ms")),
                          fnum(sim.get("physical_lower_ms")), "n/a"]
            else:
                cells += ["-"] * 6 + [sim or "n/a", "n/a", "n/a"]
            w("| " + " | ".join(cells) + " |")
        w("")
        w("Iteration ms: per run, the mean over the measured iterations of "
          "the slowest worker's iteration time; median and min-max over "
          "the repetitions. Speedup: " + self.plan["reference"] +
          "'s median iteration time over "
          "this preset's, 95% percentile-bootstrap interval over the "
          "repetitions ((iter.): over iterations, when a configuration has "
          "one repetition). E: TicTac's ordering efficiency (mean over "
          "workers and measured iterations, transfers timed at the row's "
          "bandwidth). Straggler: the largest share of the measured time "
          "any worker waited for parameters. Busiest NIC: the host whose "
          "tx or rx rate over the measured window was highest (per-host "
          "table below). CPU busy: the whole machine's CPU use over that "
          "window (/proc/stat; near 100% the emulation itself, not the "
          "links, may be the bottleneck). sim / physical lower: ps-sim's predicted iteration "
          "time and its physical lower bound for the same job" + (
              "; rdma rows: ps-sim's rdma link model" if "rdma" in
              self.plan["transports"] else "") + ".")
        self.report_predicted(w)
        nic_rows = [a for a in rows if a.get("nic")]
        if nic_rows:
            w("")
            w("NIC throughput per host over the measured window, Gbit/s "
              "tx/rx (median over repetitions; read from the bridge-side "
              "veth byte counters):")
            w("")
            hosts = [n for n, _, _ in self.cluster.nodes]
            w("| model | Gbit/s | preset | " + " | ".join(hosts) + " |")
            w("|---|---:|---|" + "---:|" * len(hosts))
            for a in nic_rows:
                w("| %s | %s | %s | " % (a["model"], bw_label(a["bw"]),
                                        a["preset"]) +
                  " | ".join("%.2f/%.2f" % a["nic"][h] if h in a["nic"]
                             else "n/a" for h in hosts) + " |")
        failed = [r for r in self.results if r["status"] != "ok"]
        if failed:
            w("")
            w("Failed runs:")
            w("")
            for r in failed:
                w("- run %d (%s %s Gbit/s %s rep %d): %s; logs in %s" % (
                    r["run"], r["model"], bw_label(r["bw"]), r["preset"],
                    r["rep"], r["reason"], r["dir"]))
        text = "\n".join(out) + "\n"
        with open(os.path.join(self.out, "report.md"), "w") as f:
            f.write(text)
        self.write_csv(rows)
        png = self.plot(rows)
        files = "\nFiles: %s/report.md, results.csv (one row per " \
            "configuration), runs.csv (one row per run), nic.csv, " % self.out
        files += ("plot.png" if png else "no plot (%s)" % self.plot_note)
        files += ", runs/NNN/ (job.ini, logs, metrics, timeline.json)\n"
        sys.stdout.write(text + files)
        sys.stdout.flush()

    # -- rdma ------------------------------------------------------------------
    def rdma_label(self):
        """One line on what the rdma rows are."""
        r = self.rdma
        if r["mode"] == "run":
            return "ran on %s (%s, port rate %s), every node on %s, links " \
                "not shaped; ps-sim's rdma link model beside them%s" % (
                    r["port"]["where"], r["port"]["gid_note"],
                    r["port"]["rate"], r["port"]["addr"],
                    "; **" + RDMA_EMULATED_NOTE + "**" if r["emulated"]
                    else "")
        return "**predicted only, not run**: %s. The rdma rows give " \
            "ps-sim's rdma link model (link.model = rdma: a %s us, %s of " \
            "the link's rate; docs/sim.md) on separate hosts at the row's " \
            "bandwidth; the table after the main one sets it beside the " \
            "TCP model on the same hosts" % (
                r["reason"], self.rdma_default("link.rdma_latency_us", "2"),
                self.rdma_default("link.rdma_efficiency", "0.97"))

    def rdma_default(self, key, default):
        for kv in self.plan["job"]:
            if kv.startswith(key + "="):
                return kv.split("=", 1)[1]
        return default

    def predicted_rows(self):
        """The rdma rows that did not run: one per model x bandwidth x
        preset, ps-sim's rdma model on separate hosts."""
        if "rdma" not in self.plan["transports"] or \
                self.rdma["mode"] == "run":
            return []
        out = []
        for m, _ in self.plan["models"]:
            for bw in self.plan["bandwidths"]:
                base = self.predicted.get(
                    (m, bw, self.plan["reference"]), {}).get("rdma")
                for p in self.plan["presets"]:
                    sim = self.predicted.get((m, bw, p), {}).get("rdma")
                    sp = None
                    if isinstance(sim, dict) and isinstance(base, dict) and \
                            sim.get("iteration_ms"):
                        sp = base["iteration_ms"] / sim["iteration_ms"]
                    out.append({"model": m, "bw": bw, "preset": p,
                                "sim": sim, "speedup": sp,
                                "why": "not run: " + self.rdma["reason"]})
        return out

    def report_predicted(self, w):
        """TCP vs RDMA, predicted: ps-sim's two link models on the same
        separate hosts, every model x bandwidth x preset."""
        if not self.predicted:
            return
        mtu = self.plan["mtu"]
        w("")
        w("TCP vs RDMA, predicted by ps-sim (not measured): %d worker(s) x "
          "%d server(s) on separate hosts whose NICs run at the row's "
          "bandwidth (no emulation: no tbf bucket, no shared machine), "
          "link.sharing = fair; TCP model: a = link.latency_us (ordo over "
          "ZeroMQ), %.4f of the rate (TCP/IPv4 payload at MTU %d); RDMA "
          "model: a = link.rdma_latency_us, link.rdma_efficiency of the "
          "rate (docs/sim.md, published perftest figures):" % (
              self.plan["workers"], self.plan["servers"],
              (mtu - 52.0) / (mtu + 38.0), mtu))
        w("")
        w("| model | Gbit/s | preset | TCP model ms | RDMA model ms | "
          "RDMA / TCP |")
        w("|---|---:|---|---:|---:|---:|")
        for m, _ in self.plan["models"]:
            for bw in self.plan["bandwidths"]:
                for p in self.plan["presets"]:
                    pr = self.predicted.get((m, bw, p), {})
                    t, r = pr.get("tcp"), pr.get("rdma")
                    ok = isinstance(t, dict) and isinstance(r, dict) and \
                        t.get("iteration_ms")
                    w("| %s | %s | %s | %s | %s | %s |" % (
                        m, bw_label(bw), p,
                        fnum(t.get("iteration_ms")) if isinstance(t, dict)
                        else (t or "n/a"),
                        fnum(r.get("iteration_ms")) if isinstance(r, dict)
                        else (r or "n/a"),
                        "%.3f" % (r["iteration_ms"] / t["iteration_ms"])
                        if ok else "n/a"))

    def write_predicted_csv(self):
        if not self.predicted:
            return
        with open(os.path.join(self.out, "predicted.csv"), "w",
                  newline="") as f:
            cw = csv.writer(f)
            cw.writerow(["model", "bandwidth_gbps", "preset",
                         "tcp_model_iteration_ms", "rdma_model_iteration_ms",
                         "rdma_over_tcp", "note"])
            for m, _ in self.plan["models"]:
                for bw in self.plan["bandwidths"]:
                    for p in self.plan["presets"]:
                        pr = self.predicted.get((m, bw, p), {})
                        t, r = pr.get("tcp"), pr.get("rdma")
                        ok = isinstance(t, dict) and isinstance(r, dict) \
                            and t.get("iteration_ms")
                        cw.writerow([
                            m, "%g" % bw, p,
                            "%.6g" % t["iteration_ms"] if ok else "",
                            "%.6g" % r["iteration_ms"] if ok else "",
                            "%.6g" % (r["iteration_ms"] / t["iteration_ms"])
                            if ok else "",
                            "ps-sim, separate hosts" if ok else
                            "%s / %s" % (t, r)])

    def report_predict_only(self, argv):
        out = self.report_head("ps-bench --predict-only report", argv)
        out.append("- nothing ran: ps-sim's TCP and RDMA link models only "
                   "(rdma here: %s)" % self.rdma["reason"]
                   if self.rdma["mode"] != "run" else
                   "- nothing ran: ps-sim's TCP and RDMA link models only")
        self.report_predicted(out.append)
        text = "\n".join(out) + "\n"
        with open(os.path.join(self.out, "report.md"), "w") as f:
            f.write(text)
        self.write_predicted_csv()
        sys.stdout.write(text + "\nFiles: %s/report.md, predicted.csv\n" %
                         self.out)

    def write_csv(self, rows):
        cols = ["model", "bandwidth_gbps", "transport", "preset", "mode",
                "dilation", "runs", "runs_ok", "iteration_ms_median", "iteration_ms_min",
                "iteration_ms_max", "samples_per_s", "speedup",
                "speedup_ci_low", "speedup_ci_high", "ci_over", "efficiency",
                "straggler", "nic_busiest_gbps", "cpu_busy_pct",
                "sim_iteration_ms",
                "sim_physical_lower_ms", "measured_over_lower", "sim_note"]
        with open(os.path.join(self.out, "results.csv"), "w", newline="") \
                as f:
            cw = csv.writer(f)
            cw.writerow(cols)
            for a in rows:
                sim = a["sim"] if isinstance(a["sim"], dict) else {}
                low = sim.get("physical_lower_ms")

                def g(k, d=None):
                    v = a.get(k, d)
                    return "" if v is None else (
                        "%.6g" % v if isinstance(v, float) else v)
                cw.writerow([
                    a["model"], "%g" % a["bw"], a["transport"], a["preset"],
                    self.mode, "%g" % self.dilation, a["runs"], a["ok"], g("iter_ms"),
                    g("iter_min"), g("iter_max"), g("samples_per_s"),
                    g("speedup"), "%.6g" % a["ci"][0] if a.get("ci") else "",
                    "%.6g" % a["ci"][1] if a.get("ci") else "",
                    a.get("ci_over", ""), g("efficiency"), g("straggler"),
                    g("nic_max"), g("cpu_pct"),
                    "%.6g" % sim["iteration_ms"] if sim.get("iteration_ms")
                    else "", "%.6g" % low if low else "",
                    "%.6g" % (a["iter_ms"] / low) if low and "iter_ms" in a
                    else "", "" if sim else (a["sim"] or "")])
            for a in self.predicted_rows():
                sim = a["sim"] if isinstance(a["sim"], dict) else {}
                low = sim.get("physical_lower_ms")
                # measured columns empty: nothing ran
                cw.writerow([a["model"], "%g" % a["bw"], "rdma", a["preset"],
                             "predicted", "1", 0, 0] + [""] * 12 + [
                             "%.6g" % sim["iteration_ms"]
                             if sim.get("iteration_ms") else "",
                             "%.6g" % low if low else "", "",
                             "predicted only (ps-sim, rdma link model), %s"
                             % a["why"] if sim else
                             "%s; %s" % (a["sim"], a["why"])])
        self.write_predicted_csv()
        with open(os.path.join(self.out, "runs.csv"), "w", newline="") as f:
            cw = csv.writer(f)
            cw.writerow(["run", "model", "bandwidth_gbps", "transport",
                         "preset", "repetition", "status", "reason",
                         "warmup", "measured", "iteration_ms",
                         "iterations_ms", "samples_per_s", "efficiency",
                         "straggler", "cpu_busy_pct", "wall_s",
                         "timeline"])
            for r in self.results:
                ok = r["status"] == "ok"
                cw.writerow([r["run"], r["model"], "%g" % r["bw"],
                             r["transport"], r["preset"], r["rep"],
                             r["status"], r["reason"], r["warmup"],
                             r["measured"],
                             "%.3f" % r["iter_ms"] if ok else "",
                             " ".join("%.3f" % x for x in r["iters_ms"])
                             if ok else "",
                             "%.3f" % r["samples_per_s"] if ok else "",
                             "%.4f" % r["efficiency"] if ok else "",
                             "%.4f" % r["straggler"] if ok else "",
                             "%.1f" % r["cpu_pct"]
                             if r.get("cpu_pct") is not None else "",
                             "%.3f" % r["wall_s"], r["timeline"]])
        with open(os.path.join(self.out, "nic.csv"), "w", newline="") as f:
            cw = csv.writer(f)
            cw.writerow(["run", "model", "bandwidth_gbps", "preset",
                         "repetition", "host", "tx_gbps", "rx_gbps"])
            for r in self.results:
                for h, (tx, rx) in sorted(r["nic"].items()):
                    cw.writerow([r["run"], r["model"], "%g" % r["bw"],
                                 r["preset"], r["rep"], h, "%.4f" % tx,
                                 "%.4f" % rx])

    def plot(self, rows):
        """plot.png: speedup over the reference with its 95% CI, one cluster per
        model x bandwidth, one bar per preset."""
        self.plot_note = ""
        if self.args.no_plot:
            self.plot_note = "--no-plot"
            return None
        gp = shutil.which("gnuplot")
        if not gp:
            self.plot_note = "gnuplot not installed: Debian package " \
                "gnuplot-nox"
            log("no plot: " + self.plot_note)
            return None
        presets = self.plan["presets"]
        groups = []
        for a in rows:
            g = (a["model"], a["bw"])
            if g not in groups:
                groups.append(g)
        dat = os.path.join(self.out, "plot.dat")
        with open(dat, "w") as f:
            f.write("# group " + " ".join("%s %s_lo %s_hi" % (p, p, p)
                                          for p in presets) + "\n")
            for g in groups:
                cells = []
                for p in presets:
                    a = [x for x in rows if (x["model"], x["bw"]) == g and
                         x["preset"] == p]
                    if a and a[0].get("speedup"):
                        s = a[0]["speedup"]
                        lo, hi = a[0]["ci"] if a[0].get("ci") else (s, s)
                        cells += ["%.4f" % s, "%.4f" % lo, "%.4f" % hi]
                    else:
                        cells += ["NaN", "NaN", "NaN"]
                f.write('"%s %s Gbit/s" %s\n' % (g[0], bw_label(g[1]),
                                           " ".join(cells)))
        png = os.path.join(self.out, "plot.png")
        title = "ordo presets: speedup over %s (95%% CI)%s" % (
            self.plan["reference"],
            "" if self.mode == "netns" else " - LOOPBACK, links not shaped")
        script = [
            "set terminal png size %d,520" % max(720, 60 * len(groups) *
                                                 (1 + len(presets))),
            "set output '%s'" % png,
            "set title '%s'" % title,
            "set ylabel 'speedup over %s'" % self.plan["reference"],
            "set style data histogram",
            "set style histogram errorbars gap 1 lw 1",
            "set style fill solid 0.8 border -1",
            "set key outside bottom center horizontal",
            "set xtics noenhanced",
            "set key noenhanced",
            "set yrange [0:*]",
            "set grid ytics",
            "set arrow from graph 0, first 1 to graph 1, first 1 nohead "
            "dt 2",
            "plot " + ", ".join(
                "'%s' using %d:%d:%d%s title '%s'" % (
                    dat, 2 + 3 * i, 3 + 3 * i, 4 + 3 * i,
                    ":xtic(1)" if i == 0 else "", p)
                for i, p in enumerate(presets)),
        ]
        p = subprocess.run([gp], input="\n".join(script) + "\n", text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0 or not os.path.isfile(png):
            self.plot_note = "gnuplot failed: %s" % p.stderr.strip()[:200]
            log(self.plot_note)
            return None
        return png


RDMA_EMULATED_NOTE = "Soft-RoCE (rxe) or the project's emulated VM " \
    "(ORDO_RDMA_VM=1): these rdma numbers show that the path works, never " \
    "RDMA speed"
IB_SYS = "/sys/class/infiniband"


def read_sys(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def ipv4_of_gid(gid):
    """'0000:...:ffff:c000:0201' (an IPv4-mapped GID) -> '192.0.2.1'."""
    h = gid.replace(":", "").lower()
    if len(h) != 32 or h[:24] != "0" * 20 + "ffff":
        return None
    return ".".join(str(int(h[24 + 2 * i:26 + 2 * i], 16)) for i in range(4))


def parse_port_rate(text):
    """'100 Gb/sec (4X EDR)' -> 100.0 (Gbit/s), None when unreadable."""
    m = re.match(r"^\s*([0-9.]+)\s*Gb/sec", text)
    return float(m.group(1)) if m else None


def rdma_ports(root=IB_SYS):
    """Every port of every RDMA device with an IPv4-mapped RoCE v2 GID:
    dicts of dev, port, state, rate, rate_gbps, addr, gid_index."""
    out = []
    devs = sorted(os.listdir(root)) if os.path.isdir(root) else []
    for dev in devs:
        pdir = os.path.join(root, dev, "ports")
        ports = sorted(os.listdir(pdir), key=lambda x: int(x)
                       if x.isdigit() else 0) if os.path.isdir(pdir) else []
        for port in ports:
            base = os.path.join(pdir, port)
            gdir = os.path.join(base, "gids")
            idx = sorted(os.listdir(gdir), key=lambda x: int(x)
                         if x.isdigit() else 0) if os.path.isdir(gdir) else []
            for i in idx:
                addr = ipv4_of_gid(read_sys(os.path.join(gdir, i)))
                kind = read_sys(os.path.join(base, "gid_attrs", "types", i))
                if addr and addr != "0.0.0.0" and "v2" in kind.lower():
                    rate = read_sys(os.path.join(base, "rate"))
                    out.append({"dev": dev, "port": port, "gid_index": i,
                                "state": read_sys(os.path.join(base,
                                                               "state")),
                                "rate": rate or "?",
                                "rate_gbps": parse_port_rate(rate),
                                "addr": addr})
                    break
    return out


def rdma_status(bin_dir, vm=False, want_addr=None, root=IB_SYS):
    """Whether this machine can run the rdma rows: {"mode": "run", "port":
    ...} (an active port with an IPv4 RoCE v2 GID, an RDMA build), else
    {"mode": "predict", "reason": why not}."""
    st = {"mode": "predict", "port": None, "emulated": False}
    devs = sorted(os.listdir(root)) if os.path.isdir(root) else []
    netns = "ps-bench's emulated hosts (network namespaces, links shaped " \
        "with tc) carry TCP only"
    if not devs:
        st["reason"] = "no RDMA device here (%s empty or absent), and %s" \
            % (root, netns)
        return st
    ports = rdma_ports(root)
    if want_addr:
        ports = [p for p in ports if p["addr"] == want_addr]
    active = [p for p in ports if "ACTIVE" in p["state"] and p["rate_gbps"]]
    if not active:
        st["reason"] = "RDMA device(s) %s present, but no active port with " \
            "an IPv4 RoCE v2 GID%s (rdma_cm needs the device's IPv4 " \
            "address; ps-rdma-devices lists them), and %s" % (
                ", ".join(devs), " carrying %s" % want_addr if want_addr
                else "", netns)
        return st
    probe = os.path.join(bin_dir, "ps-sim")
    if os.access(probe, os.X_OK):
        p = run_cmd([probe, "--set", "transport.type=rdma", "--set",
                     "model.file=" + os.path.join(SOURCE_DIR, "conf",
                                                  "models", "seq32.json"),
                     "--set", "train.iterations=1", "--json"], check=False)
        if p.returncode == 2 and "not in this build" in p.stderr:
            st["reason"] = "RDMA device(s) %s present, but %s was built " \
                "without the rdma transport (configure with " \
                "-DPS_WITH_RDMA=ON)" % (", ".join(devs), bin_dir)
            return st
    port = dict(active[0])
    port["where"] = "%s port %s" % (port["dev"], port["port"])
    port["gid_note"] = "GID index %s" % port["gid_index"]
    st.update({"mode": "run", "port": port, "reason": "",
               "emulated": vm or port["dev"].startswith("rxe")})
    return st


# --------------------------------------------------------------------------
# Command line

EPILOG = """\
scenario files (conf/bench/*.ini):
  [bench]  %s
  [job]    any ordo config key as section.key = value, given to every
           node (and to ps-sim) with --set; keys ps-bench sets per run
           (cluster size and addresses, model.file, worker.mode,
           train.iterations, scheduling.preset, transport.type,
           output.dir, metrics/link.bandwidth_gbps) are refused
  [model:NAME]  warmup, iterations, repetitions, run_timeout_s for one model

modes:
  netns     one network namespace per node, veth pairs to a bridge (in a
            namespace of its own), tbf on both directions of every host's
            link; needs root, ip and tc (iproute2)
  loopback  every node on 127.0.0.1, links NOT shaped (the report warns)
  auto      netns when possible, else loopback with a warning (default)

exit status: 0 every run completed; 1 a run failed; 2 bad input (unknown
preset, bad bandwidth, missing model or scenario, netns requested but not
possible); 130 interrupted (everything is cleaned up).
""" % "\n           ".join("%-16s %s" % kv for kv in SCENARIO_KEYS.items())


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="ps-bench",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Benchmarks ordo's scheduling presets on an emulated "
        "cluster on this machine: one network namespace per node, every "
        "host's link shaped with tc to a given bandwidth. Prints a Markdown "
        "table and writes CSVs, a PNG plot and one timeline per run.",
        epilog=EPILOG)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true",
                   help="the CI scenario conf/bench/quick.ini (~90 s): "
                   "ResNet-50, 1 Gbit/s, every preset")
    g.add_argument("--scenario", metavar="NAME",
                   help="a named scenario: conf/bench/NAME.ini (see "
                   "--list-scenarios); default: 'default'")
    g.add_argument("--config", metavar="FILE",
                   help="a scenario file (format below)")
    ap.add_argument("--list-scenarios", action="store_true",
                    help="list the named scenarios and exit")
    ap.add_argument("--models", metavar="LIST",
                    help="override the scenario's models (comma-separated "
                    "names under conf/models/, or .json paths)")
    ap.add_argument("--bandwidths", dest="bandwidths_gbps", metavar="LIST",
                    help="override the bandwidths, Gbit/s per direction "
                    "(e.g. 1,10,25)")
    ap.add_argument("--transports", metavar="LIST",
                    help="override the transports: tcp, rdma (rdma runs "
                    "where an RDMA device with an IPv4 RoCE v2 GID and an "
                    "RDMA build exist, every node on the device's address, "
                    "links not shaped; elsewhere its rows are ps-sim's "
                    "rdma link model, predicted only, with the reason)")
    ap.add_argument("--predict-only", action="store_true",
                    help="run nothing: print ps-sim's TCP and RDMA link "
                    "models side by side (separate hosts at every "
                    "bandwidth, every model and preset) and write "
                    "predicted.csv; needs neither root nor an RDMA device")
    ap.add_argument("--presets", metavar="LIST",
                    help="override the presets: " + ", ".join(PRESETS))
    ap.add_argument("--reference", metavar="PRESET",
                    help="the preset speedups are measured against "
                    "(default: the scenario's reference, else baseline "
                    "when it runs, else the first preset)")
    ap.add_argument("--workers", type=int, metavar="N",
                    help="worker processes")
    ap.add_argument("--servers", type=int, metavar="N",
                    help="server processes")
    ap.add_argument("--warmup", type=int, metavar="N",
                    help="warm-up iterations per run (not measured)")
    ap.add_argument("--iterations", type=int, metavar="N",
                    help="measured iterations per run")
    ap.add_argument("--repetitions", type=int, metavar="N",
                    help="runs per configuration")
    ap.add_argument("--run-timeout", dest="run_timeout_s", type=int,
                    metavar="S", help="seconds before a run counts as "
                    "failed and is killed")
    ap.add_argument("--grid", metavar="SIZES",
                    help="sweep partition x credit: each preset becomes "
                    "PRESET@P/C for every pair of SIZES with P <= C (e.g. "
                    "256K,1M,4M,16M,64M); a preset may also be given as "
                    "PRESET@PARTITION/CREDIT in --presets, and followed "
                    "by +KEY=VALUE for other [scheduling] keys (e.g. "
                    "ordo+credit_refine=off)")
    ap.add_argument("--dilation", metavar="N",
                    help="time dilation (after DieCast, NSDI 2006): links "
                    "shaped to bandwidth / N, op times and tbf's queue x N,"
                    " results reported in undilated time; lets 2 cores "
                    "emulate 10 or 25 Gbit/s without being CPU-bound "
                    "(default 1: none)")
    ap.add_argument("--tune", action="store_true",
                    help="run ps-tune on the emulated cluster instead of "
                    "the preset runs: once per model x bandwidth x "
                    "--tune-seeds, tuning the partition and credit sizes of"
                    " --presets' one preset (default ordo); trials of "
                    "--warmup + --iterations iterations, --set tune.trials="
                    "N, tune.prior=sim (ps-sim calibrated here)...")
    ap.add_argument("--tune-seeds", metavar="LIST", default="1",
                    help="--tune: tune.seed values, one ps-tune run each "
                    "(default 1)")
    ap.add_argument("--set", action="append", metavar="SECTION.KEY=VALUE",
                    help="an ordo config key for every node and ps-sim "
                    "(repeatable; after the scenario's [job])")
    ap.add_argument("--mode", choices=["auto", "netns", "loopback"],
                    default="auto", help="how nodes are connected "
                    "(default auto)")
    ap.add_argument("--out", metavar="DIR",
                    help="results directory (default ps-bench-out/"
                    "DATE-TIME under the current directory)")
    ap.add_argument("--bin-dir", metavar="DIR",
                    help="where ps-scheduler, ps-server, ps-worker and "
                    "ps-sim are (default: beside ps-bench, else build/)")
    ap.add_argument("--no-plot", action="store_true",
                    help="do not run gnuplot")
    ap.add_argument("--no-calibration", action="store_true",
                    help="do not calibrate ps-sim on %s (saves two short "
                    "runs per bandwidth; ps-sim then sets no limit on what "
                    "the machine moves and uses its default latency)" %
                    CAL_MODEL)
    ap.add_argument("--dry-run", action="store_true",
                    help="print the runs that would be made and exit")
    ap.add_argument("--explain", metavar="RUN_DIR",
                    help="print where the time of one finished run went, "
                    "read from its timeline.json (per process: compute, "
                    "wait, gate queueing, transfers in flight), counting "
                    "from iteration --warmup (default 2) and exit")
    ap.add_argument("--cleanup", action="store_true",
                    help="remove namespaces and processes left by a "
                    "crashed ps-bench and exit")
    return ap.parse_args(argv)


def find_bin_dir(arg):
    cands = [arg] if arg else [
        os.path.dirname(os.path.abspath(sys.argv[0])),
        os.path.join(SOURCE_DIR, "build"),
        os.path.join(SOURCE_DIR, "build-release")]
    for d in cands:
        if d and all(os.access(os.path.join(d, b), os.X_OK)
                     for b in ("ps-scheduler", "ps-server", "ps-worker")):
            return os.path.abspath(d)
    raise UsageError("ps-scheduler, ps-server and ps-worker not found in %s "
                     "(build them, or give --bin-dir)" % " or ".join(
                         c for c in cands if c))


def main(argv):
    if argv[:1] == ["--launch-job"] and len(argv) >= 2:
        return launch_job(argv[1], argv[2:])
    args = parse_args(argv)
    if args.list_scenarios:
        d = os.path.join(SOURCE_DIR, "conf", "bench")
        for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if f.endswith(".ini"):
                text = []
                with open(os.path.join(d, f)) as fh:
                    for line in fh:  # the first comment paragraph
                        line = line.strip().lstrip(";").strip()
                        if not line:
                            break
                        text.append(line)
                summary = " ".join(text).split(" - ", 1)[-1]
                print("%-10s %s" % (f[:-4], summary))
        return 0
    if args.explain:
        try:
            print_explain(args.explain, 2 if args.warmup is None
                          else args.warmup)
        except (OSError, ValueError, KeyError) as e:
            raise UsageError("--explain %s: %s" % (args.explain, e))
        return 0
    if args.cleanup:
        if os.geteuid() != 0:
            raise UsageError("--cleanup needs root")
        remove_stale_namespaces()
        return 0
    if args.quick:
        path = scenario_path("quick")
    elif args.config:
        path = args.config
    else:
        path = scenario_path(args.scenario or "default")
    plan = build_plan(load_scenario(path), args)
    if args.predict_only:
        if args.tune:
            raise UsageError("--predict-only runs nothing; --tune runs "
                             "ps-tune")
        if "rdma" not in plan["transports"]:
            plan["transports"].append("rdma")
    args.bin_dir = find_bin_dir(args.bin_dir)
    # ORDO_* variables are configuration to every node: the VM's marker
    # and rdma_goodput.sh's address are ps-bench's, not the job's
    vm = os.environ.pop("ORDO_RDMA_VM", "0") == "1"
    want_addr = os.environ.pop("ORDO_RDMA_ADDR", "") or None
    args.rdma = rdma_status(args.bin_dir, vm, want_addr) \
        if "rdma" in plan["transports"] else None
    if not args.out:
        args.out = os.path.join(os.getcwd(), "ps-bench-out",
                                datetime.datetime.now().strftime(
                                    "%Y%m%d-%H%M%S"))
    args.out = os.path.abspath(args.out)

    if args.dry_run and args.tune:
        for m, _ in plan["models"]:
            for bw in plan["bandwidths"]:
                for seed in plan["tune_seeds"]:
                    c = plan["counts"][m]
                    print("ps-tune %s %s Gbit/s %s seed %d: %d trials of "
                          "%d+%d iterations" % (
                              m, bw_label(bw), plan["presets"][0], seed,
                              plan["tune_trials"], c["warmup"],
                              c["iterations"]))
        return 0
    if args.predict_only:
        if not args.out:
            args.out = os.path.join(os.getcwd(), "ps-bench-out",
                                    datetime.datetime.now().strftime(
                                        "%Y%m%d-%H%M%S"))
        os.makedirs(args.out, exist_ok=True)
        bench = Bench(args, plan, "none", "--predict-only")
        bench.predict_all()
        bench.report_predict_only(argv)
        return 0
    if args.dry_run and args.rdma and args.rdma["mode"] != "run":
        print("rdma: predicted only, not run: %s" % args.rdma["reason"])
    if args.dry_run:
        for i, r in enumerate(Bench(args, plan, "?", "").runs()):
            print("%3d %s %s Gbit/s %s %s rep %d (%d+%d iterations)%s" % (
                i + 1, r["model"], bw_label(r["bw"]), r["transport"],
                r["preset"], r["rep"], r["warmup"], r["measured"],
                "" if plan["dilation"] == 1 else
                ", dilated x%g: links at %g Gbit/s, model.compute_scale %g"
                % (plan["dilation"], r["bw"] / plan["dilation"],
                   plan["compute_scale"] * plan["dilation"])))
        return 0
    mode, note = args.mode, ""
    if mode in ("auto", "netns"):
        ok, why = netns_available()
        if ok:
            mode = "netns"
        elif args.mode == "netns":
            raise UsageError("--mode netns is not possible here: %s" % why)
        else:
            mode, note = "loopback", why
            log("WARNING: cannot build network namespaces (%s): running in "
                "loopback mode, links NOT shaped; use --mode loopback to "
                "choose this explicitly" % why)
    else:
        note = "chosen with --mode loopback"
    if mode == "netns":
        remove_stale_namespaces()

    bench = Bench(args, plan, mode, note)
    os.makedirs(args.out, exist_ok=True)

    def on_signal(sig, frame):
        raise Interrupted("signal %d" % sig)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    status = 0
    try:
        if args.tune:
            bench.execute_tune()
        else:
            bench.execute()
    except Interrupted as e:
        log("%s: stopping; cleaning up" % e)
        status = 130
    finally:
        # no second signal may cut the cleanup short
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        bench.cleanup()
    if status == 130:
        return status
    if args.tune:
        bench.report_tune(argv)
        return 1 if any(r["status"] != "ok" for r in bench.tunes) else 0
    bench.report(argv)
    if any(r["status"] != "ok" for r in bench.results):
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UsageError as e:
        print("ps-bench: error: %s" % e, file=sys.stderr)
        sys.exit(2)
