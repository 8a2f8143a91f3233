"""The reports: report.md (also on stdout) with its header (the command,
the machine, the cluster, ps-sim's calibrated links, time dilation, the
rdma rows' status), the main table, the TCP-vs-RDMA predictions and the
NICs per host; the CSV files (results.csv, runs.csv, nic.csv,
predicted.csv) and the gnuplot PNG of the speedups. --predict-only's
report; report_head and machine, which --tune's report shares.
"""

import csv
import datetime
import math
import os
import platform
import random
import shlex
import shutil
import subprocess
import sys

from .calibration import CAL_MODEL
from .common import fmt_dur, fnum, log
from .rdma import RDMA_EMULATED_NOTE
from .runs import busiest_thread
from .scenario import bw_label
from .stats import aggregate


def report_head(title, argv):
    """A report's first lines: title, command, machine, date."""
    return ["# " + title, "",
            "- command: `%s`" % " ".join(shlex.quote(a) for a in argv),
            "- machine: %s" % machine(),
            "- date: %s" % datetime.datetime.now().strftime(
                "%Y-%m-%d %H:%M")]


def machine():
    """This machine in one line: CPUs, their model, the kernel."""
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


class Report:
    """The report of a bench.Bench (after its runs, or --predict-only's
    predictions)."""

    def __init__(self, bench):
        self.b = bench
        self.plan = bench.plan
        self.args = bench.args
        self.mode = bench.mode
        self.mode_note = bench.mode_note
        self.out = bench.out
        self.dilation = bench.dilation
        self.rdma = bench.rdma
        self.sim = bench.sim
        self.rng = random.Random(1)  # the bootstrap's resamples
        self.plot_note = ""

    def write(self, argv):
        """The report of the runs: report.md, results.csv, runs.csv,
        nic.csv, predicted.csv (rdma), plot.png; the report on stdout."""
        rows = aggregate(self.b.results, self.plan, self.sim.cache,
                         self.rng)
        out = report_head("ps-bench report", argv)
        w = out.append
        if "tcp" not in self.b.clusters:
            w("- cluster: 1 scheduler, %d server(s), %d worker(s)%s" % (
                self.plan["servers"], self.plan["workers"],
                ", every node on %s (the RDMA device's address), links not "
                "shaped" % self.rdma["port"]["addr"] if self.rdma["mode"] ==
                "run" else ": no tcp run"))
        w = (lambda line: None) if "tcp" not in self.b.clusters else out.append
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
            if self.sim.link_rate or self.sim.machine_probe:
                w("- bulk TCP streams from every worker to every server at "
                  "once got %s per host link" % ", ".join(
                      (["%.3f Gbit/s unshaped" % self.sim.machine_probe]
                       if self.sim.machine_probe else []) +
                      ["%.3f Gbit/s on %g" % (self.sim.link_probe.get(k, v), k)
                       for k, v in sorted(self.sim.link_rate.items())]))
            if self.args.no_calibration:
                w("- ps-sim's links: the bulk streams' rate with tbf's "
                  "bucket; machine not calibrated (--no-calibration)")
            else:
                w("- ps-sim's links (docs/bench.md), calibrated on the real "
                  "job with %s (runs/cal-*): %s" % (
                      CAL_MODEL, "; ".join(self.b.calib.notes())))
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
          % (len(self.b.results),
             sum(r["status"] == "ok" for r in self.b.results),
             sum(r["status"] != "ok" for r in self.b.results),
             fmt_dur(self.b.wall), self.out))
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
            hosts = [n for n, _, _ in self.b.cluster.nodes]
            w("| model | Gbit/s | preset | " + " | ".join(hosts) + " |")
            w("|---|---:|---|" + "---:|" * len(hosts))
            for a in nic_rows:
                w("| %s | %s | %s | " % (a["model"], bw_label(a["bw"]),
                                        a["preset"]) +
                  " | ".join("%.2f/%.2f" % a["nic"][h] if h in a["nic"]
                             else "n/a" for h in hosts) + " |")
        failed = [r for r in self.b.results if r["status"] != "ok"]
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
                base = self.sim.predicted.get(
                    (m, bw, self.plan["reference"]), {}).get("rdma")
                for p in self.plan["presets"]:
                    sim = self.sim.predicted.get((m, bw, p), {}).get("rdma")
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
        if not self.sim.predicted:
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
                    pr = self.sim.predicted.get((m, bw, p), {})
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
        if not self.sim.predicted:
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
                        pr = self.sim.predicted.get((m, bw, p), {})
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

    def predict_only(self, argv):
        """--predict-only's report: ps-sim's TCP and RDMA models only."""
        out = report_head("ps-bench --predict-only report", argv)
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
                         "timeline", "busiest_thread"])
            for r in self.b.results:
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
                             "%.3f" % r["wall_s"], r["timeline"],
                             busiest_thread(r)])
        with open(os.path.join(self.out, "nic.csv"), "w", newline="") as f:
            cw = csv.writer(f)
            cw.writerow(["run", "model", "bandwidth_gbps", "preset",
                         "repetition", "host", "tx_gbps", "rx_gbps"])
            for r in self.b.results:
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
