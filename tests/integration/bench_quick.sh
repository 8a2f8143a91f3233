# ps-bench --quick on an emulated cluster (one network namespace per node,
# links shaped with tc): every run completes, the report names every
# preset, the CSVs have their columns, every run left a timeline, and no
# namespace or process is left behind. Then bad input exits 2, a second
# run right after works (time-dilated, a preset with its own sizes),
# ps-tune runs on the emulated cluster (--tune), and Ctrl-C mid-run
# cleans everything up. Skipped
# (77) where network namespaces cannot be made (not root, no iproute2).
source "$(dirname "$0")/lib.sh" "$@"
BENCH=$BUILD/ps-bench
PRESETS="baseline tensorflow mxnet p3 tictac-tio tictac-tao bytescheduler ordo"
[ -x "$BENCH" ] || fail "$BENCH not built"

# the same probe ps-bench makes
if [ "$(id -u)" -ne 0 ]; then
	echo "skip: not root: network namespaces, veth and tc need root"
	exit 77
fi
for t in ip tc; do
	command -v $t >/dev/null || { echo "skip: '$t' not found (iproute2)"; exit 77; }
done
probe=ordo-bench-test-probe-$$
if ! ip netns add "$probe" 2>"$WORK/probe.log"; then
	echo "skip: cannot create a network namespace: $(cat "$WORK/probe.log")"
	exit 77
fi
# a veth pair and a tbf qdisc inside it: what every emulated host needs
if ! { ip -n "$probe" link add pa type veth peer name pb &&
	ip -n "$probe" link set pa up &&
	tc -n "$probe" qdisc add dev pa root tbf rate 1gbit burst 128kb latency 25ms; } \
	2>"$WORK/probe.log"; then
	ip netns del "$probe"
	echo "skip: namespaces work but veth or tc tbf do not: $(cat "$WORK/probe.log")"
	exit 77
fi
ip netns del "$probe"

# ps-bench names its namespaces ordo-bench-PID-HOST; one whose PID is gone
# was left behind (by us, or by an earlier run elsewhere on this machine,
# which our next run must remove)
stale() {
	ip netns list | sed -n 's/^\(ordo-bench-\([0-9][0-9]*\)-[^ ]*\).*/\2 \1/p' |
		while read -r pid ns; do [ -d "/proc/$pid" ] || echo "$ns"; done
}

# 1. bad input: exit 2 and a clear message, nothing built
for bad in "--quick --presets baseline,nosuch" "--quick --bandwidths 0" \
	"--quick --bandwidths fast" "--quick --models nosuch" \
	"--config $WORK/none.ini" "--scenario nosuch" \
	"--quick --presets ordo@4M/1M" "--quick --presets ordo@1M/3" \
	"--quick --presets ordo+credit_refine" "--quick --presets ordo+a.b=1" \
	"--quick --grid 1M,fast" "--quick --dilation 0.5" "--quick --dilation x" \
	"--quick --tune --presets p3,ordo" "--quick --tune --tune-seeds none" \
	"--quick --tune --set tune.seed=4" "--quick --reference p4"; do
	# shellcheck disable=SC2086
	"$BENCH" $bad --out "$WORK/bad" >"$WORK/bad.out.log" 2>"$WORK/bad.err.log"
	rc=$?
	[ $rc -eq 2 ] || fail "ps-bench $bad exited $rc, expected 2"
	grep -q "^ps-bench: error: " "$WORK/bad.err.log" || fail "ps-bench $bad: no error message"
	[ ! -e "$WORK/bad" ] || fail "ps-bench $bad: wrote results"
done
pass "bad input exits 2 with a message"

# Hang guards, far above what the runs take on a loaded 2-core machine
# under the sanitizers: ps-bench's own per-run timeout (the scenario's 60 s;
# with three busy loops beside it a run took up to 34 s here, the whole
# --quick 5 minutes) and timeout(1) around each ps-bench (124 or 137).
RUN_TIMEOUT=(--run-timeout 600)

# 2. the quick scenario, for real. How long it takes is measured (the
#    report's header, docs/bench.md), not asserted here.
timeout --kill-after=10 1800 "$BENCH" --quick --mode netns "${RUN_TIMEOUT[@]}" \
	--out "$WORK/q" >"$WORK/quick.out.log" 2>"$WORK/quick.err.log"
rc=$?
[ $rc -eq 0 ] || { tail -n 30 "$WORK/quick.err.log"; fail "ps-bench --quick exited $rc"; }
out=$WORK/quick.out.log
for p in $PRESETS; do
	grep -q "^| resnet50 | 1 | tcp | $p | 1/1 | [0-9]" "$out" ||
		fail "report: no completed row for preset $p"
done
# rdma: no device here, so one predicted row per preset and the
# TCP-vs-RDMA table (ps-sim's two link models)
for p in $PRESETS; do
	grep -q "^| resnet50 | 1 | rdma | $p | 0/0 | predicted only, not run: " "$out" ||
		fail "report: no predicted rdma row for preset $p"
	grep -q "^| resnet50 | 1 | $p | [0-9.]* | [0-9.]* | [0-9.]* |$" "$out" ||
		fail "report: no TCP-vs-RDMA prediction for preset $p"
done
grep -q "^- runs: 8, 8 completed, 0 failed" "$out" || fail "report: not every run completed"
grep -q "each in its own network namespace" "$out" || fail "report: not in netns mode"
grep -q "LOOPBACK\|loopback mode" "$out" && fail "report warns of loopback in netns mode"
# ps-sim's links: the links' rate fitted where they bind on Seq-32's bulk
# run (no machine, no per-message runs), else a machine with its time
# per message; a latency either way, fitted to three p3 runs (docs/bench.md,
# "ps-sim's links")
links="^- ps-sim.s links .*: 1 Gbit/s: links of [0-9.]* Gbit/s"
if grep -q "$links.*, no machine limit: the links bind on seq32, baseline .*their rate fitted to it (bulk TCP streams: [0-9.]* Gbit/s), [0-9]* us per message" "$out"; then
	cals="cal-1 cal-1-p3 cal-1-p3-r2 cal-1-p3-r3"
	[ ! -e "$WORK/q/runs/cal-1-65536" ] || fail "a per-message calibration run where the links bind"
elif grep -q "$links.*, machine moving [0-9.]* Gbit/s .*, [0-9.]* us of the machine per message over 8192 B (calibrated on seq32, baseline in partitions of 65536 B), [0-9]* us per message" "$out"; then
	cals="cal-1 cal-1-65536 cal-1-p3 cal-1-p3-r2 cal-1-p3-r3"
else
	fail "report: no calibration of ps-sim's links (rate or machine, latency)"
fi
for c in $cals; do
	[ -s "$WORK/q/runs/$c/metrics-worker-0.csv" ] || fail "no calibration run $c"
done
python3 - "$WORK/q" "$PRESETS" <<'PY' || fail "CSV or timeline structure"
import csv, json, os, sys
out, presets = sys.argv[1], sys.argv[2].split()
res = list(csv.DictReader(open(os.path.join(out, "results.csv"))))
need = ["model", "bandwidth_gbps", "transport", "preset", "mode",
        "dilation", "runs",
        "runs_ok", "iteration_ms_median", "iteration_ms_min",
        "iteration_ms_max", "samples_per_s", "speedup", "speedup_ci_low",
        "speedup_ci_high", "ci_over", "efficiency", "straggler",
        "nic_busiest_gbps", "cpu_busy_pct", "sim_iteration_ms",
        "sim_physical_lower_ms",
        "measured_over_lower", "sim_note"]
assert list(res[0].keys()) == need, res[0].keys()
tcp = [r for r in res if r["transport"] == "tcp"]
assert sorted(r["preset"] for r in tcp) == sorted(presets), tcp
for r in tcp:
    assert r["mode"] == "netns" and r["runs"] == r["runs_ok"] == "1", r
    assert float(r["iteration_ms_median"]) > 0, r
    assert 0 < float(r["nic_busiest_gbps"]) <= 1.2, r  # shaped at 1 Gbit/s
    if r["sim_note"]:
        assert r["sim_note"].startswith("n/a"), r
    else:
        assert float(r["sim_iteration_ms"]) > 0, r
runs = list(csv.DictReader(open(os.path.join(out, "runs.csv"))))
assert len(runs) == len(presets) and all(r["status"] == "ok" for r in runs), runs
for r in runs:
    ev = json.load(open(r["timeline"]))
    assert isinstance(ev, list) and len(ev) > 100, r["timeline"]
    pids = {e.get("pid") for e in ev}
    assert len(pids) >= 4, pids  # 2 servers + 2 workers
    # every node's threads and their load over the measured window, the
    # busiest named in runs.csv
    th = list(csv.DictReader(open(os.path.join(os.path.dirname(
        r["timeline"]), "threads.csv"))))
    assert {t["node"] for t in th} == {"sched", "s0", "s1", "w0", "w1"}, th
    assert any(t["thread"].startswith("ZMQbg/IO") for t in th), th
    load = [float(t["cpu_pct_of_core"]) for t in th]
    assert all(0 <= x <= 150 for x in load) and max(load) > 0, th
    assert load == sorted(load, reverse=True), th
    node, name = th[0]["node"], th[0]["thread"]
    assert r["busiest_thread"].startswith("%s %s " % (node, name)), r
rdma = [r for r in res if r["transport"] == "rdma"]
assert sorted(r["preset"] for r in rdma) == sorted(presets), rdma
for r in rdma:
    assert r["mode"] == "predicted" and r["runs"] == "0", r
    assert float(r["sim_iteration_ms"]) > 0, r
    assert r["sim_note"].startswith("predicted only"), r
pred = list(csv.DictReader(open(os.path.join(out, "predicted.csv"))))
assert sorted(r["preset"] for r in pred) == sorted(presets), pred
nic = list(csv.DictReader(open(os.path.join(out, "nic.csv"))))
assert {r["host"] for r in nic} == {"sched", "s0", "s1", "w0", "w1"}, nic
print("results.csv: %d rows; runs.csv: %d runs with timelines" %
      (len(res), len(runs)))
PY
if command -v gnuplot >/dev/null && [ ! -s "$WORK/q/plot.png" ]; then
	fail "gnuplot installed but no plot.png"
fi
pass "ps-bench --quick: every preset, every run completed"

# After ps-bench returned: its namespaces are gone (it removes them before
# exiting) and, within 30 s, every process it started (one may still be
# exiting).
leftovers() {
	left=$(stale)
	[ -z "$left" ] || { echo "$left" >&2; fail "$1: namespaces left behind"; }
	if ! poll_until 30 no_process_of "$WORK/"; then
		pgrep -af "$WORK/" >&2
		fail "$1: processes left running"
	fi
}
leftovers "after --quick"
pass "no namespace or process left behind"

# 3. a second run right after the first, time-dilated x2, with a preset
#    given its own sizes
timeout --kill-after=10 900 "$BENCH" --quick --mode netns "${RUN_TIMEOUT[@]}" \
	--presets baseline,ordo@1M/4M+credit_refine=off --warmup 1 --iterations 2 --dilation 2 \
	--no-plot --no-calibration --out "$WORK/q2" \
	>"$WORK/q2.out.log" 2>"$WORK/q2.err.log" || fail "second ps-bench exited $?"
grep -q "^- runs: 2, 2 completed, 0 failed" "$WORK/q2.out.log" || fail "second run incomplete"
leftovers "after the second run"
pass "a second run right after the first works"
# dilation x2: links shaped to 0.5 Gbit/s, op times x2; the report's
# numbers are the metrics' (dilated) ones / 2 and x 2
grep -q "links shaped to 0.5 Gbit/s per direction (tbf): 1 Gbit/s dilated x2" \
	"$WORK/q2.err.log" || fail "dilation: links not shaped to 0.5 Gbit/s"
grep -q "time dilation x2" "$WORK/q2.out.log" || fail "dilation: not in the report"
grep -q "^| resnet50 | 1 | tcp | ordo@1M/4M+credit_refine=off | 1/1 | [0-9]" "$WORK/q2.out.log" ||
	fail "no row for the preset with its own sizes and settings"
python3 - "$WORK/q2" <<'PY' || fail "dilation: the report is not the metrics undilated"
import csv, os, sys
out = sys.argv[1]
runs = list(csv.DictReader(open(os.path.join(out, "runs.csv"))))
assert len(runs) == 2, runs
for r in runs:
    d = os.path.dirname(r["timeline"]) if r["timeline"] else \
        os.path.join(out, "runs", "%03d" % int(r["run"]))
    ini = open(os.path.join(d, "job.ini")).read()
    assert "compute_scale = 2\n" in ini, ini
    assert "bandwidth_gbps = 0.5\n" in ini, ini
    # ps-sim's links as ps-bench predicted the run: latencies jittered
    assert "latency_jitter = 0.5\n" in ini, ini
    if r["preset"] == "ordo@1M/4M+credit_refine=off":
        assert "preset = ordo\npartition_size = 1048576\n" \
            "credit_size = 4194304\ncredit_refine = off\n" in ini, ini
    per = []
    for w in range(2):
        rows = [x for x in csv.DictReader(open(os.path.join(
            d, "metrics-worker-%d.csv" % w))) if int(x["iteration"]) > 1]
        per.append([float(x["time_ms"]) for x in rows])
    n = min(map(len, per))
    slowest = [max(p[i] for p in per) for i in range(n)]
    want = sum(slowest) / n / 2
    got = float(r["iteration_ms"])
    assert abs(got - want) <= 1e-3 * want + 0.01, (r["preset"], got, want)
res = {r["preset"]: r for r in csv.DictReader(open(os.path.join(
    out, "results.csv"))) if r["transport"] == "tcp"}
assert set(res) == {"baseline", "ordo@1M/4M+credit_refine=off"}, res
assert all(r["dilation"] == "2" for r in res.values()), res
print("dilated x2: iteration times halved, compute_scale 2, links 0.5")
PY
pass "--dilation 2 and PRESET@PARTITION/CREDIT+KEY=VALUE"

# 4. ps-tune on the emulated cluster: two trials, each job started in the
#    namespaces by ps-bench --launch-job
timeout --kill-after=10 900 "$BENCH" --quick --mode netns "${RUN_TIMEOUT[@]}" \
	--tune --tune-seeds 5 --set tune.trials=2 --warmup 1 --iterations 1 \
	--no-calibration --out "$WORK/qt" \
	>"$WORK/qt.out.log" 2>"$WORK/qt.err.log" ||
	{ tail -n 30 "$WORK/qt/tune/resnet50-1-seed5/ps-tune.log"; fail "ps-bench --tune exited $?"; }
grep -q "^| resnet50 | 1 | ordo | 5 | 2/2 | [0-9]*[KM]*/[0-9]*[KM]* | [0-9.]* (" "$WORK/qt.out.log" ||
	fail "--tune: no row with a best pair"
t=$WORK/qt/tune/resnet50-1-seed5
[ -s "$t/best.ini" ] && [ "$(grep -c ',ok,' "$t/tune.csv")" -eq 2 ] ||
	fail "--tune: ps-tune's outputs missing"
# ps-tune used ps-bench's launcher, and the nodes ran in their namespaces
# (the scheduler and the servers listened on their hosts' addresses)
grep -q -- "--launcher $t/launch-job " "$t/ps-tune.log" ||
	fail "--tune: ps-tune not given the launcher"
for a in 1 2 3; do
	grep -q "listening on tcp://10\.77\.0\.$a:" "$t/ps-tune.log" ||
		fail "--tune: no node listened on 10.77.0.$a (not in its namespace)"
done
leftovers "after --tune"
pass "ps-bench --tune: ps-tune on the emulated cluster"

# 5. Ctrl-C during a run's second job
# (timeout passes the SIGINT on to ps-bench alone, as before it was there:
# --foreground; and it SIGKILLs ps-bench --kill-after seconds after any
# signal it passes on, so that is how long the clean-up may take here: a
# minute, for a machine that the suite's other tests keep busy)
timeout --foreground --kill-after=60 900 "$BENCH" --quick --mode netns \
	"${RUN_TIMEOUT[@]}" --no-calibration --out "$WORK/q3" >"$WORK/q3.out.log" 2>"$WORK/q3.err.log" &
bench=$!
# mid-run: the second run's job is up and a worker is iterating
wait_for "$WORK/q3.err.log" '\[2/[0-9]*\]'
# (a first iteration under ASan can take minutes on a loaded machine: p3's
# stop-and-wait moves the initial parameters 160 KiB at a time)
# (host w0 runs whichever worker rank registered first: any rank's line)
poll_until 900 grep -qs '^worker [0-9]* iter ' "$WORK/q3/runs/002/w0.log" ||
	fail "run 2's worker on w0 never finished an iteration"
kill -INT $bench
wait $bench
rc=$?
[ $rc -eq 130 ] || fail "interrupted ps-bench exited $rc, expected 130"
grep -q "signal 2: stopping; cleaning up" "$WORK/q3.err.log" ||
	fail "interrupted ps-bench did not say it stopped on the signal"
leftovers "after Ctrl-C"
pass "Ctrl-C: exit 130, namespaces and processes cleaned up"
