"""ps-sim beside the runs: the links ps-sim models (Simulator.link: the
emulated cluster's as measured and calibrated here, tbf's bucket, the
machine's rate and time per message; Simulator.host_link: separate hosts
with TCP's or RDMA's costs), those links as ps-sim's --set keys or INI
lines, one prediction of a run (its JSON, undilated), the predictions of
every run of the plan (a time estimate too) and of every model x
bandwidth x preset on both link models (TCP vs RDMA). The numbers the
calibration fits are held here; calibration.py fits them.
"""

import json
import os
import subprocess

from .common import run_cmd
from .runs import job_ini

# Messages of at most ZeroMQ's batch size (ZMQ_IN_BATCH_SIZE and
# ZMQ_OUT_BATCH_SIZE, 8192 by default) are copied through its batch
# buffers and share system calls with their neighbours; larger ones get a
# read or write of their own. ps-sim charges its time per message above it
# (sim.machine_message_min_bytes).
ZMQ_BATCH_BYTES = 8192

# Each message's latency is drawn within this share of link.latency_us on
# either side (link.latency_jitter): ps-sim's identical workers otherwise
# fall into a lock-step that no real cluster keeps, and p3's predictions
# moved by up to 9 % for under a microsecond of latency (docs/sim.md,
# "Latency jitter").
LATENCY_JITTER = 0.5


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


class Simulator:
    """ps-sim (bin_dir/ps-sim) for a plan, its config files written in
    out; cluster: a function that returns the cluster the runs use now
    (namespaces.Cluster: tbf's bucket), None before there is one."""

    def __init__(self, plan, mode, bin_dir, out, cluster):
        self.plan = plan
        self.mode = mode
        self.out = out
        self.cluster = cluster
        self.dilation = plan["dilation"]
        self.sim_bin = os.path.join(bin_dir, "ps-sim")
        self.cache = {}  # (model, bw, transport, preset) -> dict or str
        # ps-sim's TCP and RDMA models on separate hosts at each
        # bandwidth: (model, bw, preset) -> {"tcp": ..., "rdma": ...}
        self.predicted = {}
        # what the links and the machine are here (calibration.py)
        self.link_rate = {}  # bw -> Gbit/s of ps-sim's links
        # bw -> Gbit/s bulk TCP streams measured, where link_rate[bw] was
        # fitted to CAL_MODEL's bulk run instead (the links bind there)
        self.link_probe = {}
        self.calibrated = {}  # bw -> sim.machine_gbps fitted on CAL_MODEL
        self.latency = {}  # bw -> link.latency_us fitted on CAL_MODEL, p3
        self.small = {}  # bw -> sim.machine_small_gbps fitted on CAL_MODEL
        self.small_bytes = l2_cache_bytes()  # sim.machine_small_bytes
        self.message = {}  # bw -> sim.machine_message_us fitted on CAL_MODEL
        self.machine_probe = None  # bulk TCP streams without shaping

    def ini(self, link):
        """sets(link) and fair sharing as INI lines, by section."""
        argv = self.sets(link) + ["--set", "link.sharing=fair"]
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

    def simulate(self, run):
        """ps-sim's prediction of a run of the plan, made once."""
        key = (run["model"], run["bw"], run["transport"], run["preset"])
        if key not in self.cache:
            link = self.link(run["bw"]) if run["transport"] == "tcp" \
                else self.host_link(run["bw"], "rdma")
            self.cache[key] = self.once(run, link)
        return self.cache[key]

    def forget(self, bw):
        """Drops the predictions at bw (its links have changed)."""
        for k in [k for k in self.cache if k[1] == bw]:
            del self.cache[k]

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

    def link(self, bw, machine=None, small=None, latency=None,
             message=None, rate=None):
        """ps-sim's links at bw (docs/bench.md, "ps-sim's links"): the
        rate bulk TCP streams got through them, or the rate fitted to
        CAL_MODEL's bulk run where the links bind there (or `rate`; else
        the nominal rate);
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
        if rate is None:
            rate = self.link_rate.get(bw, bw / self.dilation)
        link = {"rate": rate,
                "burst": 0,
                "burst_rate": 0.0, "machine": machine, "latency": latency,
                "small": small if machine else 0.0,
                "message": message if machine else 0.0}
        if self.mode == "netns" and self.machine_probe and \
                self.machine_probe > link["rate"]:
            link["burst"] = self.cluster().burst_bytes(bw)
            link["burst_rate"] = self.machine_probe
        return link

    def jitter_applies(self):
        """LATENCY_JITTER goes with every prediction, unless the plan's
        job keys set the jitter themselves or links other than fair
        (which keep one latency)."""
        for kv in self.plan["job"]:
            key, _, value = kv.partition("=")
            if key.strip() == "link.latency_jitter" or (
                    key.strip() == "link.sharing" and
                    value.strip() != "fair"):
                return False
        return True

    def sets(self, link):
        """ps-sim's keys for `link` (link()) as --set arguments."""
        argv = ["--set", "link.bandwidth_gbps=%.6g" % link["rate"],
                "--set", "link.burst_bytes=%d" % link["burst"],
                "--set", "link.burst_gbps=%.6g" % link["burst_rate"],
                "--set", "sim.machine_gbps=%.6g" % link["machine"]]
        if link["latency"] is not None:
            argv += ["--set", "link.latency_us=%.6g" % link["latency"]]
        if self.jitter_applies():
            argv += ["--set", "link.latency_jitter=%g" % LATENCY_JITTER]
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

    def once(self, run, link):
        """ps-sim's prediction for run on `link` (link()): its JSON as a
        dict, or a string saying why there is none."""
        if not os.access(self.sim_bin, os.X_OK):
            return "n/a (ps-sim not built)"
        ini = os.path.join(self.out, "sim-job.ini")
        with open(ini, "w") as f:
            f.write(job_ini(self.plan, run, None))
        # one in-order stream per peer pair sharing the links fairly; the
        # job's keys may override the sharing
        argv = [self.sim_bin, "--config", ini, "--set", "link.sharing=fair"]
        for kv in self.plan["job"]:
            argv += ["--set", kv]
        argv += self.sets(link) + ["--json"]
        try:
            p = run_cmd(argv, check=False, timeout=120)
            if p.returncode != 0:
                msg = (p.stderr.strip().splitlines() or ["?"])[-1]
                return "n/a (ps-sim failed: %s)" % msg[:100]
            return undilate_sim(json.loads(p.stdout.strip().splitlines()[-1]),
                                run.get("dilation", self.dilation))
        except (subprocess.TimeoutExpired, ValueError, IndexError) as e:
            return "n/a (ps-sim failed: %s)" % str(e)[:100]

    def predict(self, run, link):
        """ps-sim's iteration time for run on `link`, None where it has
        none."""
        res = self.once(run, link)
        return res.get("iteration_ms") if isinstance(res, dict) else None

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
                        m: self.once(run, self.host_link(bw, m))
                        for m in ("tcp", "rdma")}
