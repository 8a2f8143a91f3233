"""ps-sim's links calibrated on this machine: what bulk TCP streams get
through the namespaces unshaped and through the shaped links
(Calibration.measure_machine, measure_link), and real runs of the job on
CAL_MODEL (runs/cal-*) to which ps-sim's machine rate, its rate for small
messages, its time per message and the links' latency are fitted by
bisection on ps-sim's predictions (Calibration.calibrate), with the lines
the log and the report say them in. The fitted numbers go into the
Simulator (simulate.py), whose links every prediction then uses.
"""

import math
import statistics

from .common import dilated, log
from .scenario import resolve_model
from .simulate import LATENCY_JITTER, ZMQ_BATCH_BYTES

# The model ps-bench calibrates ps-sim's link rate on (Calibration.calibrate):
# TicTac's Seq-32, 32 parameters of 2 MiB in a chain with almost no
# compute, i.e. bulk transfers through the real binaries; not a model of
# the tables.
CAL_MODEL = "seq32"
# Where ps-sim without a machine limit comes within this share of
# CAL_MODEL's measured bulk run, the links bind there and not the cores:
# what the run lost is the links' (their rate is fitted to it), not a
# machine's, which would also slow every burst a link makes after idling
# (Calibration.calibrate; docs/bench.md, "ps-sim's links").
LINKS_BIND_WITHIN = 0.10
# p3 runs of CAL_MODEL whose median the latency is fitted to: one such
# run varied by 4 % within one ps-bench (673.1, 697.2 and 703.0 ms on the
# 2-vCPU VM), which moved the latency fitted to it by about 40 us of 340.
LATENCY_CAL_RUNS = 3
# ...cut into partitions of this size to calibrate ps-sim's time per message
# (sim.machine_message_us): most tensors of the CNNs with many small
# tensors are below it (EfficientNet-B0, RegNetY-400MF: four in five).
MESSAGE_CAL_BYTES = 65536


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


class Calibration:
    """Measures and calibrates ps-sim's links (sim: simulate.Simulator)
    for the plan; run_one(name, run): one real run, its record (bench.py's
    Bench.one). no_calibration: measure the links, run nothing."""

    def __init__(self, plan, sim, run_one, no_calibration):
        self.plan = plan
        self.sim = sim
        self.run_one = run_one
        self.no_calibration = no_calibration
        self.dilation = plan["dilation"]
        self.records = {}  # "%g" % bw -> {preset: its run record}

    def measure_machine(self, cluster):
        """Before any shaping: what bulk TCP streams get between the
        namespaces: the rate at which a link with tokens in its bucket
        empties it, in ps-sim."""
        self.sim.machine_probe = cluster.probe_rate()
        if self.sim.machine_probe is not None:
            log("bulk TCP streams worker -> server get %.3f Gbit/s per host "
                "link without shaping" % self.sim.machine_probe)

    def measure_link(self, cluster, bw, runs):
        """Once per bandwidth: measures what bulk TCP streams get through
        the shaped links, calibrates ps-sim's machine on CAL_MODEL and
        simulates bw's rows again."""
        if bw in self.sim.link_rate or "%g" % bw in self.records:
            return
        rate = cluster.probe_rate()
        if rate is None:
            log("could not measure the links' rate at %g Gbit/s with bulk "
                "TCP streams" % bw)
        else:
            self.sim.link_rate[bw] = rate
            log("bulk TCP streams worker -> server get %.3f Gbit/s per "
                "host link at %g Gbit/s%s" % (rate, bw / self.dilation,
                                              dilated(bw, self.dilation)))
        if not self.no_calibration:
            self.calibrate(bw)
        log("ps-sim at %g Gbit/s: links of %.3f Gbit/s, %s" %
            (bw, self.sim.link(bw)["rate"], ", ".join(self.labels(bw))))
        self.sim.forget(bw)
        for r in runs:
            if r["bw"] == bw:
                self.sim.simulate(r)

    def machine_label(self, bw):
        if bw not in self.sim.calibrated:
            return "machine not calibrated (no limit)"
        if bw in self.sim.link_probe:
            return "no machine limit: the links bind on %s, baseline " \
                "(ps-sim without one within %g %% of it), their rate " \
                "fitted to it (bulk TCP streams: %.3f Gbit/s)" % (
                    CAL_MODEL, 100 * LINKS_BIND_WITHIN,
                    self.sim.link_probe[bw])
        if not self.sim.calibrated[bw]:
            return "the links alone explain %s (no machine limit)" % \
                CAL_MODEL
        return "machine moving %.3f Gbit/s over all links (calibrated " \
            "on %s, baseline)" % (self.sim.calibrated[bw], CAL_MODEL)

    def labels(self, bw):
        """What ps-sim's links at bw are, beyond their rate and bucket:
        the machine, its costs where it has a limit, the latency."""
        machine = [self.small_label(bw), self.message_label(bw)] \
            if self.sim.calibrated.get(bw) != 0.0 else []
        return [self.machine_label(bw)] + machine + [self.latency_label(bw)]

    def small_label(self, bw):
        if bw not in self.sim.small:
            return "messages up to a core's L2 cache not calibrated"
        return "%.3f Gbit/s for messages up to %d B (a core's L2 cache; " \
            "calibrated on %s, baseline in such partitions)" % (
                self.sim.small[bw], self.sim.small_bytes, CAL_MODEL)

    def message_label(self, bw):
        if bw not in self.sim.message:
            return "time per message not calibrated"
        return "%.1f us of the machine per message over %d B (calibrated " \
            "on %s, baseline in partitions of %d B)" % (
                self.sim.message[bw], ZMQ_BATCH_BYTES, CAL_MODEL,
                MESSAGE_CAL_BYTES)

    def latency_label(self, bw):
        if bw not in self.sim.latency:
            return "latency not calibrated (ps-sim's default)"
        return "%.0f us per message (calibrated on %s, p3, the median of " \
            "%d runs%s)" % (
            self.sim.latency[bw], CAL_MODEL, LATENCY_CAL_RUNS,
            "; each within +-%g %%" % (100 * LATENCY_JITTER)
            if self.sim.jitter_applies() else "")

    def calibrate(self, bw):
        """Runs the real job on CAL_MODEL (a model the tables do not hold)
        on links shaped to bw, four to six times, and fits the numbers of
        ps-sim's links that cannot be measured directly (docs/bench.md),
        each by bisection on ps-sim's prediction of one run's measured
        iteration time; nothing is fitted to the runs it predicts:
        - with the baseline preset (whole tensors, bandwidth-bound):
          nothing where ps-sim is as slow without a machine limit; where
          it is at most LINKS_BIND_WITHIN faster, the links bind: their
          rate (fit_link_rate), and no machine; else the cores bind:
          sim.machine_gbps, the rate at which the one emulating machine
          moves bytes over all links together (its two cores copy every
          byte: ZeroMQ, the kernel, veth, the bridge, tbf), and then
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
        - in every case, with p3 (small slices, stop-and-wait:
          latency-bound), LATENCY_CAL_RUNS runs: link.latency_us, what a
          message waits beyond its bytes on this machine (waking the
          receiving process on busy cores), fitted to their median.
        Leaves either uncalibrated where its run or ps-sim fails."""
        sim = self.sim
        base = self.calibration_run(bw, "baseline")
        if base is None:
            return

        def at_machine(machine):
            return sim.predict(base, sim.link(bw, machine))
        unlimited = at_machine(0)
        if unlimited is None:
            return
        if unlimited >= base["measured_ms"]:
            sim.calibrated[bw] = 0.0
        elif unlimited >= (1.0 - LINKS_BIND_WITHIN) * base["measured_ms"]:
            if not self.fit_link_rate(bw, base):
                return
            sim.calibrated[bw] = 0.0
        else:
            # never binding above every host's two directions at full rate
            hi = 2.0 * (self.plan["workers"] + self.plan["servers"]) * \
                max(sim.link(bw)["rate"], sim.machine_probe or 0)
            machine = bisect(at_machine, base["measured_ms"], hi / 1000.0, hi,
                             geometric=True, falling=True)
            if machine is None:
                return
            sim.calibrated[bw] = machine
        small = msgs = None
        if sim.calibrated[bw] and sim.small_bytes:
            small = self.calibration_run(bw, "baseline", sim.small_bytes)
        if sim.calibrated[bw]:
            msgs = self.calibration_run(bw, "baseline", MESSAGE_CAL_BYTES)
        # The rate for small messages and the time per message explain
        # each other's run in part (a 1 MiB message pays its time per
        # message too): fit each with the other fixed, twice over.
        for _ in range(2):
            if small is not None:
                fit = bisect(
                    lambda m: sim.predict(small, sim.link(bw, small=m)),
                    small["measured_ms"], sim.calibrated[bw] / 30.0,
                    sim.calibrated[bw] * 30.0, geometric=True, falling=True)
                if fit is not None:
                    sim.small[bw] = fit
            if msgs is not None:
                def at_message(us):
                    return sim.predict(msgs, sim.link(bw, message=us))
                at_zero = at_message(0.0)
                if at_zero is not None and at_zero >= msgs["measured_ms"]:
                    sim.message[bw] = 0.0
                else:
                    fit = bisect(at_message, msgs["measured_ms"], 0.0,
                                 1000.0, geometric=False, falling=False)
                    if fit is not None:
                        sim.message[bw] = fit
        p3s = [self.calibration_run(bw, "p3", rep=k + 1)
               for k in range(LATENCY_CAL_RUNS)]
        if None in p3s:
            return
        p3 = dict(p3s[0], measured_ms=statistics.median(
            r["measured_ms"] for r in p3s))
        def at_latency(latency):
            return sim.predict(p3, sim.link(bw, latency=latency))
        at_zero = at_latency(0.0)
        if at_zero is not None and at_zero >= p3["measured_ms"]:
            sim.latency[bw] = 0.0
            return
        latency = bisect(at_latency, p3["measured_ms"], 0.0, 5000.0,
                         geometric=False, falling=False)
        if latency is not None:
            sim.latency[bw] = latency

    def fit_link_rate(self, bw, base):
        """The links bind on CAL_MODEL's bulk run `base`: the links' rate
        at which ps-sim, without a machine limit, predicts its measured
        iteration time (the bulk streams' rate stays in link_probe).
        False where ps-sim fails or no rate down to half of it fits."""
        sim = self.sim
        probe = sim.link(bw)["rate"]
        rate = bisect(lambda r: sim.predict(base, sim.link(bw, 0, rate=r)),
                      base["measured_ms"], probe / 2.0, probe,
                      geometric=False, falling=True)
        if rate is None:
            return False
        sim.link_probe[bw] = probe
        sim.link_rate[bw] = rate
        return True

    def calibration_run(self, bw, preset, partition_size=None, rep=1):
        """One real run of CAL_MODEL at bw (runs/cal-BW[-PRESET][-SIZE]
        [-rREP]), optionally with its tensors cut into partitions of
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
                         if partition_size else "") + \
            (", run %d" % rep if rep > 1 else "")
        log("calibrating ps-sim at %g Gbit/s: %s, %s, %d iterations"
            % (bw, CAL_MODEL, what, run["total_iters"]))
        name = "cal-%g" % bw + ("" if preset == "baseline" else "-" + preset)
        if partition_size:
            name += "-%d" % partition_size
        if rep > 1:
            name += "-r%d" % rep
        rec = self.run_one(name, run)
        self.records.setdefault("%g" % bw, {})[what] = rec
        if rec["status"] != "ok":
            return None
        run["measured_ms"] = rec["iter_ms"]
        return run

    def notes(self):
        """One line per calibrated bandwidth: ps-sim's links there and the
        calibration runs they were fitted on (the reports' header)."""
        notes = []
        for bw in self.plan["bandwidths"]:
            recs = self.records.get("%g" % bw)
            if recs is None:
                continue
            link = self.sim.link(bw)
            how = ", ".join(
                "%s %.1f ms per iteration measured" % (p, r["iter_ms"])
                if r["status"] == "ok" else "%s failed: %s" % (p, r["reason"])
                for p, r in recs.items())
            notes.append("%g Gbit/s: links of %.3f Gbit/s%s, %s (%s)"
                         % (bw, link["rate"], ", tbf bucket %d B emptied at "
                            "%.3f Gbit/s" % (link["burst"],
                                             link["burst_rate"])
                            if link["burst"] else "",
                            ", ".join(self.labels(bw)), how))
        return notes or ["none (no calibration run)"]
