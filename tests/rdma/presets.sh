#!/usr/bin/env bash
# tests/rdma/presets.sh BUILD_DIR SOURCE_DIR - every preset's release order
# over the verbs transport, inside scripts/rdma-vm (ORDO_RDMA_VM=1; skips
# elsewhere): MobileNetV2 (158 tensors of 0.1 KiB to 5 MiB) replayed with
# each preset over transport.type = rdma on rxe0, 2 workers x 2 servers,
# and the timeline checked by tests/tools/release_order.py as
# tests/integration/presets.sh does over tcp, direction by direction: under
# the counter gate (TicTac's parameter sends) strictly in order per sender,
# receiver and iteration; under the priority gate never a release while
# something more urgent was waiting; under fifo in the order transfers
# became ready; with the barrier no parameter send before its server's
# last update. The checker is shown to fail on a timeline whose order was
# broken.
source "$(dirname "$0")/guest_lib.sh" "$@"
check="$SRC/tests/tools/release_order.py"

for p in baseline tensorflow mxnet p3 tictac-tio tictac-tao bytescheduler ordo; do
	out=$WORK/$p
	launch "$p" 240 --set worker.mode=replay \
		--set model.file="$SRC/conf/models/mobilenet_v2.json" \
		"${rdma[@]}" --set scheduling.preset="$p" --set train.iterations=2 \
		--set output.dir="$out" || fail "$p: replay over rdma exited $?"
	python3 "$check" "$out" ||
		fail "$p: transfers released out of order over rdma"
	pass "$p over rdma: release order held"
done

# Not vacuous: the same check on a timeline whose order was broken
# (release_order.py --break-order) must fail.
for p in tictac-tao ordo; do
	rc=0
	python3 "$check" --break-order "$WORK/$p" >"$WORK/broken.log" 2>&1 || rc=$?
	[ $rc -eq 1 ] || { cat "$WORK/broken.log"; fail "$p: the check of a broken order exited $rc, not 1"; }
done
pass "the checker fails on a broken order (fifo and priority gates)"
assert_no_leftovers
