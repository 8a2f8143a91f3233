"""ps-bench's command line: the options and their help (parse_args,
EPILOG), where the binaries are (find_bin_dir), and main, which turns
the options into a plan and does what they ask: --list-scenarios,
--explain, --cleanup, --launch-job (ps-tune's launcher), --dry-run,
--predict-only, --tune, or the runs and their report, with the signals
and the cleanup; entry() maps bad input to exit status 2.
"""

import argparse
import datetime
import os
import signal
import sys

from .bench import Bench
from .calibration import CAL_MODEL
from .common import SOURCE_DIR, Interrupted, UsageError, log
from .explain import print_explain
from .namespaces import netns_available, remove_stale_namespaces
from .rdma import rdma_status
from .report import Report
from .scenario import (PRESETS, SCENARIO_KEYS, build_plan, bw_label,
                       load_scenario, plan_runs, scenario_path)
from .tune import Tuning, launch_job

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
    """ps-bench ARGS: its exit status (0, 1, 130); UsageError: bad input
    (2, entry())."""
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
        bench.sim.predict_all()
        Report(bench).predict_only(argv)
        return 0
    if args.dry_run and args.rdma and args.rdma["mode"] != "run":
        print("rdma: predicted only, not run: %s" % args.rdma["reason"])
    if args.dry_run:
        for i, r in enumerate(plan_runs(plan, args.rdma)):
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
    tuning = Tuning(bench) if args.tune else None
    status = 0
    try:
        if tuning:
            tuning.execute()
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
    if tuning:
        tuning.report(argv)
        return 1 if any(r["status"] != "ok" for r in tuning.tunes) else 0
    Report(bench).write(argv)
    if any(r["status"] != "ok" for r in bench.results):
        return 1
    return 0


def entry(argv):
    """The ps-bench command: main(argv)'s status, 2 after a UsageError
    (its message on stderr); exits."""
    try:
        sys.exit(main(argv))
    except UsageError as e:
        print("ps-bench: error: %s" % e, file=sys.stderr)
        sys.exit(2)
