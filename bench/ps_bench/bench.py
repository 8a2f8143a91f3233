"""The benchmark itself (Bench): the plan's runs made one after the
other on their clusters (the emulated one for tcp, the RDMA device's
address for rdma), the links shaped, measured and ps-sim calibrated once
per bandwidth, each run's record (runs.Run's job, its metrics, its NICs'
rates and the CPU's use over the measured window), a time estimate as it
goes, and the cleanup. ps-sim's side is a simulate.Simulator, the
calibration a calibration.Calibration, both composed here; report.py and
tune.py read a Bench.
"""

import os
import statistics
import subprocess
import time

from .calibration import Calibration
from .common import (CFG_STR_MAX, UsageError, dilated, fmt_dur, kill_group,
                     log, run_cmd)
from .namespaces import Cluster
from .rdma import RDMA_EMULATED_NOTE
from .runs import (Run, busiest_thread, job_ini, merge_timeline,
                   read_metrics, summarize_run, thread_load, undilate_run,
                   write_threads)
from .scenario import bw_label, plan_runs
from .simulate import Simulator


class Bench:
    """One ps-bench: args (parse_args's, with bin_dir, out and rdma set),
    the plan (scenario.build_plan), the mode (netns, loopback; "none"
    for --predict-only) and why it is that mode (mode_note)."""

    def __init__(self, args, plan, mode, mode_note):
        self.args = args
        self.plan = plan
        self.mode = mode
        self.mode_note = mode_note
        self.bin_dir = args.bin_dir
        self.out = args.out
        self.dilation = plan["dilation"]
        self.cluster = None
        self.clusters = {}  # "tcp" (netns/loopback), "rdma" (device)
        self.results = []  # one dict per run
        self.wall = 0.0
        self.rdma = getattr(args, "rdma", None) or \
            {"mode": "predict", "reason": "not probed", "port": None,
             "emulated": False}
        self.sim = Simulator(plan, mode, self.bin_dir, self.out,
                             lambda: self.cluster)
        self.calib = Calibration(plan, self.sim, self.one,
                                 getattr(args, "no_calibration", False))

    def check_job_config(self, runs):
        """Every node would refuse a bad key with status 2: try the job's
        config on a scheduler first (loopback, ephemeral port, 100 ms)."""
        ini = os.path.join(self.out, "check-job.ini")
        with open(ini, "w") as f:
            f.write(job_ini(self.plan, runs[0], None))
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
        """Every run of the plan, in order (the results: one record
        each)."""
        runs = plan_runs(self.plan, self.rdma)
        os.makedirs(os.path.join(self.out, "runs"), exist_ok=True)
        if runs:
            self.check_job_config(runs)
        for r in runs:  # the simulator's predictions (also a time estimate)
            self.sim.simulate(r)
        if "rdma" in self.plan["transports"]:
            self.sim.predict_all()
        t0 = time.monotonic()
        if any(r["transport"] == "tcp" for r in runs):
            self.build_cluster()
            if self.mode == "netns":
                self.calib.measure_machine(self.cluster)
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

    def build_cluster(self):
        """The tcp runs' cluster (netns or loopback), built."""
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
                (bw / self.dilation, dilated(bw, self.dilation)))
            self.calib.measure_link(self.cluster, bw, runs)

    def estimate_left(self, runs):
        """Seconds the runs left will take: as long as the done runs of
        their model and bandwidth, else from ps-sim's prediction."""
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
            sim = self.sim.cache.get((run["model"], run["bw"],
                                      run["transport"], run["preset"]))
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
            f.write(job_ini(self.plan, run, run_dir, self.sim))
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
        r = Run(self.cluster, self.bin_dir, self.plan["workers"], cfg,
                run_dir, extra)
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
        # each thread's share of a core over the measured window (real
        # time, not dilated): is one thread, a node's ZeroMQ I/O thread
        # say, what binds?
        rec["threads"] = thread_load(ev["start"][3], ev["end"][3],
                                     ev["end"][0] - ev["start"][0]) \
            if "start" in ev and "end" in ev else []
        if rec["threads"]:
            write_threads(run_dir, rec["threads"])
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
            if rec["threads"]:
                log("    busiest thread: %s" % busiest_thread(rec))
        return rec

    def cleanup(self):
        """Every process killed, every cluster torn down."""
        for p in Run.LIVE:
            kill_group(p)
        for c in self.clusters.values():
            c.teardown()
        if self.cluster and self.cluster not in self.clusters.values():
            self.cluster.teardown()
