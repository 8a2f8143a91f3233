# bench_goodput runs (a short smoke: one small size, both layouts, two
# rounds), prints a row with numbers per size and layout, and refuses bad
# arguments with exit 2 and a message. How fast it is: docs/benchmarks.md,
# never asserted here.
source "$(dirname "$0")/lib.sh" "$@"
BENCH=$BUILD/bench/bench_goodput

timeout --kill-after=10 300 "$BENCH" --sizes 64K --layouts 1x1,2x2 \
	--bytes 4M --rounds 2 --trace "$WORK/trace" \
	>"$WORK/gp.out.log" 2>"$WORK/gp.err.log" ||
	fail "bench_goodput exited $?"
for l in 1x1 2x2; do
	grep -Eq "^\| 64 KiB \| $l \| [0-9]+ \| 2 \| [0-9]+ \| [0-9]+ \| [0-9.]+ \| [0-9.]+-[0-9.]+ \|$" \
		"$WORK/gp.out.log" || fail "no row for 64 KiB $l: $(cat "$WORK/gp.out.log")"
done
[ -s "$WORK/trace/64K-1x1/worker-0.json" ] || fail "--trace wrote no timeline"
python3 "$SRC/bench/goodput_phases.py" "$WORK/trace/64K-1x1" >"$WORK/ph.log" 2>&1 ||
	fail "goodput_phases.py: $(cat "$WORK/ph.log")"
grep -q "^| update | [0-9]" "$WORK/ph.log" || fail "no update step: $(cat "$WORK/ph.log")"
pass "bench_goodput: a row per layout; --trace and goodput_phases.py work"

refuses_bad_args "$BENCH" "--sizes fast" "--sizes 6" "--layouts 2y2" "--layouts 0x1" \
	"--rounds 0" "--bytes 0" "--nosuch" "--set nosuch.key=1" "--set train.lr"
pass "bad arguments exit 2 with a message"
# --set reaches the ordo jobs: a heartbeat timeout below twice the
# benchmark's interval makes the job's config invalid, so the run fails.
timeout --kill-after=10 300 "$BENCH" --sizes 64K --layouts 1x1 --bytes 1M \
	--set cluster.connect_timeout_ms=1000 \
	--set cluster.heartbeat_timeout_ms=100 \
	>"$WORK/set.out.log" 2>"$WORK/set.err.log"
rc=$?
[ $rc -eq 1 ] || fail "bench_goodput with an invalid --set exited $rc, expected 1"
grep -q "failed" "$WORK/set.out.log" || fail "no failed row: $(cat "$WORK/set.out.log")"
pass "--set applies to the ordo jobs"
