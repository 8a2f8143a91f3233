# Model replay: iteration time of a compute-bound model, overlap of the
# next iteration with parameter arrival (read from the timeline), and the
# metrics and timeline outputs. Only lower bounds on time are asserted (a
# busy machine can only make an iteration longer); how close an iteration
# comes to the sum of its op times is measured by bench/replay_overhead.sh.
source "$(dirname "$0")/lib.sh" "$@"
MODELS=$SRC/tests/models

# Replays MODEL (tests/models/MODEL.json) for ITERS iterations on one
# worker and one server and checks iterations 2..ITERS (iteration 1 starts
# with the parameters already there): every one reported, and none shorter
# than its ops' OPS_MS (the emulated device runs one op at a time).
check_iterations() {
	local model=$1 iters=$2 ops_ms=$3 lines times
	launch "$model" 120 --set cluster.workers=1 --set cluster.servers=1 \
		--set worker.mode=replay --set model.file="$MODELS/$model.json" \
		--set train.iterations="$iters" || fail "$model replay exited $?"
	# "ITERATION TIME_MS" for iterations 2..ITERS
	lines=$(sed -n "s|^worker 0 iter \([0-9]*\)/$iters time \([0-9][0-9.]*\) ms .*|\1 \2|p" \
		"$WORK/$model.out.log" | awk '$1 >= 2')
	[ "$(echo "$lines" | awk '{print $1}' | sort -n | paste -sd,)" = "$(seq -s, 2 "$iters")" ] ||
		fail "$model: progress lines of iterations 2..$iters missing or repeated"
	times=$(echo "$lines" | awk '{print $2}')
	for t in $times; do
		awk -v t="$t" -v m="$ops_ms" 'BEGIN { exit !(t >= m - 0.01) }' ||
			fail "$model: iteration took $t ms, less than its ops' $ops_ms ms"
	done
	pass "$model: iterations of $(echo $times) ms (sum of op times: $ops_ms ms)"
}

# 1. Tiny tensors, long ops: an iteration takes at least the sum of its op
#    times (100 ms): one op at a time.
check_iterations chain8 6 100

# 1b. Many short ops: 400 ops of 25 us (10 ms). Every sleep overshoots its
#     deadline; the emulated device starts an op where the last one ended
#     on its clock, so it never starts one before that either.
check_iterations tinyops 12 10

# 2. Overlap: the next iteration's first op starts before the last layer's
#    parameters of that iteration have all arrived.
out=$WORK/overlap
launch overlap 120 --set cluster.workers=1 --set cluster.servers=1 \
	--set worker.mode=replay --set model.file="$MODELS/overlap.json" \
	--set train.iterations=4 --set output.dir="$out" ||
	fail "overlap replay exited $?"
python3 - "$out/timeline.json" <<'PY' || fail "no overlap in the timeline"
import json, sys
ev = json.load(open(sys.argv[1]))
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
         if e.get("ph") == "M" and e["name"] == "thread_name"}
def lane(e): return names.get((e["pid"], e["tid"]))
ok = 0
for it in (1, 2, 3):
    start = [e["ts"] for e in ev if e.get("ph") == "X" and lane(e) == "compute"
             and e["name"] == "first" and e["args"].get("iteration") == it]
    arrive = [e["ts"] for e in ev if e.get("ph") == "i" and lane(e) == "receive"
              and e["name"] == "last.weight" and e["args"].get("iteration") == it]
    assert len(start) == 1 and len(arrive) >= 1, (it, start, arrive)
    print(f"iteration {it}: first op starts at +0, last layer's parameters arrive at +{(max(arrive) - start[0]) / 1000:.1f} ms")
    # the layer is complete at its last partition (with small partitions,
    # some of it can come before: its gradient was pushed first)
    ok += start[0] < max(arrive)
sys.exit(0 if ok == 3 else 1)
PY
pass "overlap: the next iteration starts before the last parameters arrive"
for f in metrics-worker-0.csv summary.csv worker-0.json server-0.json; do
	[ -s "$out/$f" ] || fail "output.dir lacks $f"
done
head -1 "$out/metrics-worker-0.csv" | grep -q '^iteration,time_ms,samples_per_s,compute_ms,wait_ms,comm_oracle_ms,efficiency,speedup_bound$' ||
	fail "metrics CSV header"
[ "$(wc -l <"$out/metrics-worker-0.csv")" -eq 5 ] || fail "metrics CSV rows"
grep -q '^summary: throughput .* samples/s, ordering efficiency E .*, speedup bound S .*, straggler effect ' \
	"$WORK/overlap.out.log" || fail "no metrics in the job summary"
pass "metrics CSV, summary CSV and the job summary's metrics"
assert_no_leftovers
