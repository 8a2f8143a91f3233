#!/usr/bin/env bash
# tests/rdma/presets.sh BUILD_DIR SOURCE_DIR - every preset's release order
# over the verbs transport, inside scripts/rdma-vm (ORDO_RDMA_VM=1; skips
# elsewhere): MobileNetV2 (158 tensors of 0.1 KiB to 5 MiB) replayed with
# each preset over transport.type = rdma on rxe0, 2 workers x 2 servers,
# and the timeline checked by tests/tools/release_order.py as
# tests/integration/presets.sh does over tcp: under the counter gate
# (TicTac) strictly in order per sender, receiver and iteration; under the
# priority gate never a release while something more urgent was waiting.
# The checker is shown to fail on a timeline whose order was broken.
source "$(dirname "$0")/guest_lib.sh" "$@"
check="$SRC/tests/tools/release_order.py"

for p in baseline p3 tictac-tio tictac-tao bytescheduler ordo; do
	out=$WORK/$p
	launch "$p" 240 --set worker.mode=replay \
		--set model.file="$SRC/conf/models/mobilenet_v2.json" \
		"${rdma[@]}" --set scheduling.preset="$p" --set train.iterations=2 \
		--set output.dir="$out" || fail "$p: replay over rdma exited $?"
	case $p in
	tictac-*) gate=counter ;;
	baseline) continue ;; # FIFO: no order to check
	*) gate=priority ;;
	esac
	python3 "$check" "$out" "$gate" ||
		fail "$p: transfers released out of order over rdma"
	pass "$p over rdma: release order held"
done

# Not vacuous: the same check on a timeline whose order was broken
# (release_order.py --break-order) must fail.
for pg in tictac-tao:counter ordo:priority; do
	rc=0
	python3 "$check" --break-order "$WORK/${pg%:*}" "${pg#*:}" \
		>"$WORK/broken.log" 2>&1 || rc=$?
	[ $rc -eq 1 ] || { cat "$WORK/broken.log"; fail "${pg#*:} check on a broken order exited $rc, not 1"; }
done
pass "the checker fails on a broken order (counter and priority gates)"
assert_no_leftovers
