# Ordered transfers end to end: every preset trains exactly (partitions,
# gates and credit windows in both directions lose and repeat nothing);
# VGG16 and Inception-v3 replay with every preset; the timeline shows the
# servers' parameter sends and the workers' gradient pushes released in the
# computed order: strictly per receiver and iteration under the counter
# gate, and under the priority gate never a release while something more
# urgent was waiting.
source "$(dirname "$0")/lib.sh" "$@"
PRESETS="baseline p3 tictac-tio tictac-tao bytescheduler ordo"

for p in $PRESETS; do
	EXACT_WORKER_SIZES=1000,100000,10,50000 \
		launch "exact-$p" 120 --worker "$TOOLS/exact_worker" \
		--set scheduling.preset="$p" --set train.iterations=5 \
		--set train.lr=1 --set train.momentum=0 ||
		fail "$p: exactness job exited $?"
	n=$(grep -c "^exact: .* 0 wrong$" "$WORK/exact-$p.out.log")
	[ "$n" -eq 2 ] || fail "$p: $n of 2 workers exact"
	grep "^scheduling: preset $p:" "$WORK/exact-$p.out.log" >/dev/null ||
		fail "$p: settings not printed at start-up"
done
pass "every preset exact: $(grep -h '^scheduling: preset' "$WORK"/exact-*.out.log | sed 's/ (worker.*//' | paste -sd';')"

# Fusion beside cutting: with 256 KiB partitions the 100000-element tensor
# is cut in two while the small ones around it are fused (two fused
# partitions: tensors 2-4 and 6-7), under both gates that order transfers.
for p in ordo tictac-tao; do
	EXACT_WORKER_SIZES=1000,100000,10,50000,7,300000,3000,20 \
		launch "fused-$p" 120 --worker "$TOOLS/exact_worker" \
		--set scheduling.preset="$p" --set scheduling.fusion=on \
		--set scheduling.partition_size=256K \
		--set scheduling.credit_size=512K --set train.iterations=5 \
		--set train.lr=1 --set train.momentum=0 ||
		fail "fused $p: exactness job exited $?"
	n=$(grep -c "^exact: .* 0 wrong$" "$WORK/fused-$p.out.log")
	[ "$n" -eq 2 ] || fail "fused $p: $n of 2 workers exact"
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
		case $p in
		tictac-*) gate=counter ;;
		baseline) continue ;;
		*) gate=priority ;;
		esac
		python3 "$SRC/tests/tools/release_order.py" "$out" "$gate" ||
			fail "$model $p: transfers released out of order"
	done
done
pass "VGG16 and Inception-v3 replayed with every preset; release orders held"
assert_no_leftovers
