# Equivalence: synchronous training on W workers gives the parameters of
# one process doing SGD (with momentum) on the union of the W batches.
source "$(dirname "$0")/lib.sh" "$@"

for W in 2 4; do
	dump=$WORK/params-w$W.txt
	launch "w$W" 120 --set cluster.workers=$W --set cluster.servers=3 \
		--set scheduling.partition_size=1K --set train.iterations=20 \
		--set train.momentum=0.9 --set train.lr=0.05 \
		--set train.dump_params="$dump" || fail "W=$W: job exited $?"
	"$TOOLS/reference_train" --config "$JOB" --set cluster.workers=$W \
		--set train.iterations=20 --set train.momentum=0.9 \
		--set train.lr=0.05 --compare "$dump" --tol 1e-6 \
		>"$WORK/ref-w$W.log" 2>&1 || fail "W=$W: differs from the reference"
	pass "W=$W: $(cat "$WORK/ref-w$W.log")"
done
assert_no_leftovers
