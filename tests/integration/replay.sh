# Model replay: iteration time of a compute-bound model, overlap of the
# next iteration with parameter arrival (read from the timeline), and the
# metrics and timeline outputs.
source "$(dirname "$0")/lib.sh" "$@"
MODELS=$SRC/tests/models

# 1. One worker, one server, tiny tensors: an iteration takes the sum of its
#    op times (100 ms): never less (one op at a time), and the median at
#    most 25% more (sleep overshoot, a parameter round trip, a loaded
#    machine under the sanitizers). Iteration 1 is excluded: it starts with
#    the parameters already there.
launch chain 120 --set cluster.workers=1 --set cluster.servers=1 \
	--set worker.mode=replay --set model.file="$MODELS/chain8.json" \
	--set train.iterations=6 || fail "chain8 replay exited $?"
times=$(grep '^worker 0 iter [2-6]/6 ' "$WORK/chain.out.log" | awk '{print $6}')
[ "$(echo "$times" | wc -l)" -eq 5 ] || fail "missing progress lines"
for t in $times; do
	awk -v t="$t" 'BEGIN { exit !(t >= 99.9) }' ||
		fail "iteration took $t ms, less than its ops' 100 ms"
done
median=$(echo "$times" | sort -n | sed -n 3p)
awk -v t="$median" 'BEGIN { exit !(t <= 125) }' ||
	fail "median iteration $median ms, expected 100 ms (+25%)"

pass "chain8: iterations of $(echo $times) ms (sum of op times: 100 ms)"

# 2. Overlap: the next iteration's first op starts before the last layer's
#    parameters of that iteration have arrived.
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
    ok += start[0] < min(arrive)
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
