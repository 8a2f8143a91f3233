# Ordered transfers end to end: every preset trains exactly (partitions,
# gates, credit windows and the parameter barrier, in both directions,
# lose and repeat nothing) for every W, S in {1,2,3}; VGG16 and
# Inception-v3 replay with every preset; the timeline shows each
# direction's transfers released as its gate says (config.ini's push_gate
# for the workers' pushes, params_gate for the servers' parameter sends:
# counter - strictly per receiver and iteration; priority - never a
# release while something more urgent was waiting; fifo - in the order
# they became ready), and with the barrier no parameter send ready before
# its server's last update of the iteration.
source "$(dirname "$0")/lib.sh" "$@"
PRESETS="baseline tensorflow mxnet p3 tictac-tio tictac-tao bytescheduler ordo"

# exact NAME W SIZES [ps-launch args...]: a job (lr 1, no momentum) whose
# W workers each found every value exact
exact() {
	local name=$1 w=$2 sizes=$3 n
	shift 3
	EXACT_WORKER_SIZES=$sizes launch "$name" 120 \
		--worker "$TOOLS/exact_worker" --set cluster.workers="$w" \
		--set train.lr=1 --set train.momentum=0 "$@" ||
		fail "$name: exactness job exited $?"
	n=$(grep -c "^exact: .* 0 wrong$" "$WORK/$name.out.log")
	[ "$n" -eq "$w" ] || fail "$name: $n of $w workers exact"
}

# ordo's sizes are auto: the scheduler simulates the job's model (a chain
# of the exact worker's tensors) and chooses them before the WELCOME
python3 "$SRC/tests/tools/chain_model.py" 1000,100000,10,50000 >"$WORK/chain.json" ||
	fail "cannot write the chain model"
for p in $PRESETS; do
	model=()
	[ "$p" = ordo ] && model=(--set model.file="$WORK/chain.json")
	for W in 1 2 3; do
		for S in 1 2 3; do
			exact "exact-$p-w${W}s$S" $W 1000,100000,10,50000 \
				--set scheduling.preset="$p" \
				--set cluster.servers=$S --set train.iterations=5 \
				"${model[@]}"
		done
	done
	grep "^scheduling: preset $p:" "$WORK/exact-$p-w1s1.out.log" >/dev/null ||
		fail "$p: settings not printed at start-up"
done
pass "every preset exact, W and S in {1,2,3}: $(grep -h '^scheduling: preset' "$WORK"/exact-*-w1s1.out.log | sed 's/ (worker.*//' | paste -sd';')"
for W in 1 2 3; do
	for S in 1 2 3; do
		grep -q "^scheduling: auto sizes: partition .* (ps-sim: .* on $W x $S at [0-9.e+]* Gbit/s (measured to server 0 at 127.0.0.1: " \
			"$WORK/exact-ordo-w${W}s$S.out.log" ||
			fail "ordo W=$W S=$S: no auto sizes chosen by ps-sim on the measured link at start-up"
	done
done
pass "auto sizes chosen by simulating the model: $(grep -h '^scheduling: auto sizes' "$WORK/exact-ordo-w2s2.out.log")"

# without a model there are no timings: the stated fallback, exact too;
# a model of 590 KiB on 2 servers gets 128K partitions (two per server);
# the default preset is ordo, and the link is measured (link.bandwidth_gbps
# is 0) and in force in the job's config.ini
exact auto-fallback 2 1000,100000,10,50000 \
	--set cluster.servers=2 --set train.iterations=3 \
	--set output.dir="$WORK/auto-fallback.d"
grep -q "^scheduling: auto sizes: partition 128K, push credit [0-9.]*[KM], params credit unlimited (no model timings.*fallback, 1M partitions (less: two per server) and the bandwidth-delay push credit (at least 4 partitions) at [0-9.e+]* Gbit/s (measured to server 0 at 127.0.0.1: .* probes" \
	"$WORK/auto-fallback.out.log" || fail "auto without a model: no fallback stated"
grep -q "^preset = ordo$" "$WORK/auto-fallback.d/config.ini" || fail "the default preset is not ordo"
grep -q "^bandwidth_gbps = [0-9]" "$WORK/auto-fallback.d/config.ini" &&
	! grep -q "^bandwidth_gbps = 0$" "$WORK/auto-fallback.d/config.ini" ||
	fail "the measured link rate is not in the job's config.ini"
# a link rate given is taken as it is: nothing measured
exact auto-given 2 1000,100000,10,50000 --set cluster.servers=2 \
	--set train.iterations=3 --set link.bandwidth_gbps=5
grep -q "^scheduling: auto sizes: .*credit (at least 4 partitions) at 5 Gbit/s)" "$WORK/auto-given.out.log" &&
	! grep -q "measured" "$WORK/auto-given.out.log" ||
	fail "link.bandwidth_gbps = 5: not taken as given"
pass "auto without a model: the stated fallback on the measured link, exact"

# the credit chosen at the start is refined from measured iterations:
# credits tried at iteration boundaries, the fastest kept, every value
# exact through the changes; off, or a credit given, leaves it alone
exact refine 2 1000,100000,10,50000 --set cluster.servers=2 \
	--set train.iterations=40 --set model.file="$WORK/chain.json"
grep -q "^scheduling: credit refinement: trying [0-9.]*[KMG]* from iteration [0-9]*$" "$WORK/refine.out.log" ||
	fail "refine: no credit tried"
grep -q "^scheduling: credit refined from measured iterations: .* ms, .* ms.*; kept [0-9.]*[KMG]* (from iteration [0-9]*)$" \
	"$WORK/refine.out.log" || fail "refine: no credit kept"
# the pushes' window is refined; the parameters' (auto: none) stays none,
# so no server is sent a CREDIT it would refuse
grep -q "^scheduling: auto sizes: partition [0-9.]*[KMG], push credit [0-9.]*[KMG], params credit unlimited " \
	"$WORK/refine.out.log" || fail "refine: the parameters have a window"
! grep -q "dropped .*CREDIT" "$WORK/refine.err.log" ||
	fail "refine: a CREDIT refused: $(grep "dropped .*CREDIT" "$WORK/refine.err.log" | head -n 1)"
exact refine-off 2 1000,100000,10,50000 --set cluster.servers=2 \
	--set train.iterations=40 --set scheduling.credit_refine=off
exact refine-given 2 1000,100000,10,50000 --set cluster.servers=2 \
	--set train.iterations=40 --set scheduling.credit_size=1M
! grep -q "credit refine" "$WORK/refine-off.out.log" "$WORK/refine-given.out.log" ||
	fail "the credit refined where it is off or given"
pass "credit refined during the job, exact: $(grep -h '^scheduling: credit refined' "$WORK/refine.out.log")"

# a training job without a model is measured: its workers time their
# first iterations after the first, the scheduler writes the model they
# make to output.dir and checkpoint.dir and says what ps-sim chooses on
# it; the next start with that checkpoint.dir takes it for its sizes and
# orders (exact); a measured model of other tensors, or a broken one, is
# refused with a warning and the job runs on the fallback
exact measure 2 1000,100000,10,50000 --set cluster.servers=2 \
	--set train.iterations=9 --set model.measure_iterations=3 \
	--set output.dir="$WORK/measure.d" --set checkpoint.dir="$WORK/measure.ck"
grep -q "^scheduling: measured model: 3 iteration(s) on each of 2 worker(s), [0-9.]* ms of compute per iteration; on it, auto sizes: partition [0-9.]*[KMG], .*credit .*; the sizes in force (partition 128K, push credit [0-9.]*[KM], params credit unlimited): [0-9.]* ms per iteration; written to $WORK/measure.ck/measured-model.json .* and $WORK/measure.d/measured-model.json " \
	"$WORK/measure.out.log" ||
	fail "measure: no measured model said: $(grep '^scheduling' "$WORK/measure.out.log" | tr '\n' ';')"
cmp -s "$WORK/measure.d/measured-model.json" "$WORK/measure.ck/measured-model.json" ||
	fail "measure: the two files differ"
"$BUILD/ps-model" check "$WORK/measure.d/measured-model.json" >"$WORK/measure.check.log" 2>&1 ||
	fail "measure: the measured model does not load: $(cat "$WORK/measure.check.log")"
exact measured 2 1000,100000,10,50000 --set cluster.servers=2 \
	--set train.iterations=3 --set checkpoint.dir="$WORK/measure.ck"
grep -q "^scheduling: model: the timings an earlier run of this job measured ($WORK/measure.ck/measured-model.json)$" \
	"$WORK/measured.out.log" &&
	grep -q "^scheduling: auto sizes: partition .* (ps-sim: .* on 2 x 2 at " "$WORK/measured.out.log" &&
	! grep -q "no model.file" "$WORK/measured.out.log" ||
	fail "measured: the measured model not taken: $(grep '^scheduling' "$WORK/measured.out.log" | tr '\n' ';')"
mkdir -p "$WORK/measure-other.ck"
sed 's/"t0"/"other"/g' "$WORK/measure.ck/measured-model.json" \
	>"$WORK/measure-other.ck/measured-model.json"
exact measure-other 2 1000,100000,10,50000 --set cluster.servers=2 \
	--set train.iterations=3 --set checkpoint.dir="$WORK/measure-other.ck"
grep -q "not taking the measured model .*: tensor 0 is 'other' there, 't0' here" "$WORK/measure-other.err.log" &&
	grep -q "^scheduling: auto sizes: .*no model timings" "$WORK/measure-other.out.log" ||
	fail "measure-other: a model of other tensors not refused: $(grep -h 'measured\|^scheduling: auto' "$WORK"/measure-other.*.log | tr '\n' ';')"
mkdir -p "$WORK/measure-fifo.ck"
mkfifo "$WORK/measure-fifo.ck/measured-model.json"
exact measure-fifo 2 1000,100000,10,50000 --set cluster.servers=2 \
	--set train.iterations=3 --set checkpoint.dir="$WORK/measure-fifo.ck"
grep -q "not taking the measured model .*: not a regular file" "$WORK/measure-fifo.err.log" ||
	fail "measure-fifo: a FIFO not refused"
pass "measured model: $(grep -h '^scheduling: measured model' "$WORK/measure.out.log" | cut -c1-160)...; taken at the next start, exact; other tensors and a FIFO refused"

# Each direction its own partition size: the partition a server sums is
# the larger, the other direction sends it in pieces (the 100000-element
# tensor in 7 pieces of 64K), in order, under priority gates and credit
# windows; exact for every W, S in {1,2,3}
for W in 1 2 3; do
	for S in 1 2 3; do
		exact "pieces-push-w${W}s$S" $W 1000,100000,10,50000 \
			--set scheduling.preset=p3 --set cluster.servers=$S \
			--set scheduling.push_partition_size=64K \
			--set scheduling.params_partition_size=1T \
			--set scheduling.push_credit_size=128K \
			--set scheduling.params_credit_size=0 --set train.iterations=4
		exact "pieces-params-w${W}s$S" $W 1000,100000,10,50000 \
			--set scheduling.preset=bytescheduler --set cluster.servers=$S \
			--set scheduling.params_partition_size=64K \
			--set scheduling.push_partition_size=256K --set train.iterations=4
	done
done
grep -q "^scheduling: preset p3: pushes order layer, gate priority, partition 64K, credit 128K; parameters order layer, gate priority, partition whole tensors, credit unlimited; fusion off" \
	"$WORK/pieces-push-w2s2.out.log" || fail "pieces: the per-direction sizes not said at start-up"
pass "each direction its own partition size (pushes or parameters in pieces), exact, W and S in {1,2,3}"

# a replay with parameters in pieces: every piece released in its gate's
# order, and more parameter sends than partitions (pieces, not wholes)
out=$WORK/pieces-replay
launch pieces-replay 600 --set worker.mode=replay --set cluster.workers=2 \
	--set cluster.servers=2 --set model.file="$SRC/conf/models/resnet50.json" \
	--set scheduling.preset=p3 --set scheduling.params_partition_size=64K \
	--set train.iterations=2 --set output.dir="$out" || fail "pieces replay exited $?"
python3 "$SRC/tests/tools/release_order.py" "$out" ||
	fail "pieces replay: transfers released out of order"
python3 - "$out" <<'PY' || fail "pieces replay: parameters did not go in pieces"
import csv, glob, json, sys
out = sys.argv[1]
parts = sum(1 for _ in csv.DictReader(open(out + "/placement.csv")))
sends = acks = 0
for f in glob.glob(out + "/server-*.json"):
    ev = json.load(open(f))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    sends += sum(1 for e in ev if e.get("name", "").startswith("params to worker"))
    acks += sum(1 for e in ev if e.get("name", "").startswith("params ack from worker"))
# 2 workers, the initial values and 2 iterations' updates
assert sends > 3 * 2 * parts, (sends, parts)
# p3's parameters go one at a time under a credit: each send's PARAMS_ACK
# is in the server's receive lane (bench/credit_round_trips.py reads them)
assert sends - 2 * parts <= acks <= sends, (acks, sends)
print("pieces replay: %d parameter sends for %d partitions, %d acknowledged"
      % (sends, parts, acks))
PY
pass "a replay with parameters in pieces: release orders held"

# MXNet's placement splits a tensor of a million elements or more into one
# piece per server: exact too, and the placement says so
for S in 2 3; do
	exact "mxnet-s$S" 2 1000,1000001,10 --set scheduling.preset=mxnet \
		--set cluster.servers=$S --set train.iterations=3
	grep -q "placement: $((S + 2)) partitions .*(mxnet)" "$WORK/mxnet-s$S.out.log" ||
		fail "mxnet S=$S: the large tensor was not split over the servers"
done
pass "MXNet's placement (a large tensor split over the servers) exact"

# Fusion beside cutting: with 256 KiB partitions the 100000-element tensor
# is cut in two while the small ones around it are fused (two fused
# partitions: tensors 2-4 and 6-7), under both gates that order transfers.
for p in ordo tictac-tao; do
	exact "fused-$p" 2 1000,100000,10,50000,7,300000,3000,20 \
		--set scheduling.preset="$p" --set scheduling.fusion=on \
		--set scheduling.partition_size=256K \
		--set scheduling.credit_size=512K --set train.iterations=5
	grep -q "2 of them fused from small tensors" "$WORK/fused-$p.out.log" ||
		fail "fused $p: the placement did not fuse as expected"
done
pass "fused partitions exact under the priority and counter gates"

for model in vgg16 inception_v3; do
	for p in $PRESETS; do
		out=$WORK/$model-$p
		launch "$model-$p" 1200 --set worker.mode=replay \
			--set model.file="$SRC/conf/models/$model.json" \
			--set scheduling.preset="$p" --set train.iterations=2 \
			--set output.dir="$out" || fail "$model $p: replay exited $?"
		python3 "$SRC/tests/tools/release_order.py" "$out" ||
			fail "$model $p: transfers released out of order"
	done
done
pass "VGG16 and Inception-v3 replayed with every preset; release orders held"

# Not vacuous: a broken push order fails under each gate (fifo: TicTac's
# pushes; priority: ordo's), and the barrier check fails on a timeline
# without a barrier (the baseline's, its config.ini saying there was one).
for p in tictac-tio ordo; do
	rc=0
	python3 "$SRC/tests/tools/release_order.py" --break-order \
		"$WORK/inception_v3-$p" >"$WORK/broken.log" 2>&1 || rc=$?
	[ $rc -eq 1 ] || { cat "$WORK/broken.log"; fail "$p: the check of a broken order exited $rc, not 1"; }
done
cp -r "$WORK/inception_v3-baseline" "$WORK/no-barrier"
sed -i 's/^params_barrier = off$/params_barrier = on/' "$WORK/no-barrier/config.ini"
rc=0
python3 "$SRC/tests/tools/release_order.py" "$WORK/no-barrier" \
	>"$WORK/broken.log" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "barrier" "$WORK/broken.log" ||
	{ cat "$WORK/broken.log"; fail "the barrier check passed a timeline without a barrier (exit $rc)"; }
pass "the checks fail on a broken order and on a missing barrier"
assert_no_leftovers
