#!/usr/bin/env bash
# tests/cuda/gpudirect_guest.sh BUILD_DIR SOURCE_DIR - the client's
# GPUDirect RDMA path (client/device.c, DESIGN GPUDirect; docs/cuda.md) in
# the Soft-RoCE VM (ORDO_RDMA_VM=1; skips elsewhere), with
# cuda_client_worker_emulated: the CUDA runtime emulated on the host (NOT a
# GPU), its "device" memory being host memory that rxe can register. So it
# runs everything but the GPU: the path chosen and logged, the device send
# buffer registered with the rdma transport (PS_MEM_CUDA, by the device
# pointer as nvidia-peermem allows), the device-to-device copies per
# partition in the gate's order, each partition sent from the registered
# buffer by the transport (zero copy: the peer READs it) and the values
# exact. The transport's own guarantee that the CPU never reads such a
# payload is tests/rdma's rxe_gpudirect (the region made unreadable).
#
#  - EMULATED_CUDA_PEERMEM=1 (nvidia-peermem "loaded"; the emulation has no
#    dma-buf): 2 workers x 2 servers exact with 1 KiB and 1 MiB partitions
#    (payloads below and above the transport's zero-copy threshold), each
#    worker logging GPUDirect RDMA by its device pointer and why not by
#    dma-buf; one worker's hand-overs each right after its own
#    device-to-device copy (tests/tools/handover_order.py);
#  - without it: the same job exact, each worker logging that its pushes
#    are staged through pinned host memory, and why.
source "$2/tests/rdma/guest_lib.sh" "$@"
W=$TOOLS/cuda/cuda_client_worker_emulated
[ -x "$W" ] || fail "no $W (build the target ordo_cuda_tests)"

job() { # NAME PSIZE WORKERS [ps-launch args...]
	local name=$1 psize=$2 workers=$3
	shift 3
	CUDA_WORKER_SIZES=70000,4097,10,1 \
		launch "$name" 600 --worker "$W" "${rdma[@]}" \
		--set cluster.workers="$workers" --set cluster.servers=2 \
		--set scheduling.partition_size="$psize" \
		--set scheduling.fusion=off --set train.iterations=6 \
		--set train.lr=1 --set train.momentum=0 "$@"
}

direct="device tensors: GPUDirect RDMA: 4 tensor(s) pushed from device memory registered by its device pointer (nvidia-peermem), no copy to the host (dma-buf: no dma-buf of device memory: the host emulation of CUDA has no dma-buf exporter)"
for psize in 1024 1M; do
	name=gd_w2s2p$psize
	EMULATED_CUDA_PEERMEM=1 job "$name" "$psize" 2 ||
		fail "$name: job exited $?"
	n=$(grep -c "^exact: .* 0 wrong$" "$WORK/$name.out.log")
	[ "$n" -eq 2 ] || fail "$name: $n of 2 workers exact"
	n=$(grep -cF "$direct" "$WORK/$name.err.log")
	[ "$n" -eq 2 ] || fail "$name: $n of 2 workers logged the GPUDirect path"
	pass "$name: pushes sent from registered (emulated) device memory, exact"
done

EMULATED_CUDA_PEERMEM=1 EMULATED_CUDA_TRACE=1 job gd_order 1024 1 \
	--set log.level=debug || fail "gd_order: job exited $?"
grep -q "^exact: .* 0 wrong$" "$WORK/gd_order.out.log" ||
	fail "gd_order: the worker was not exact"
python3 "$SRC/tests/tools/handover_order.py" "$WORK/gd_order.err.log" \
	--iterations 6 --want t0=274,t1=17,t2=1,t3=1 >"$WORK/order.check" ||
	fail "gd_order: $(cat "$WORK/order.check")"
d2d=$(grep -c "^emulated CUDA: device-to-device copy of" "$WORK/gd_order.err.log")
[ "$d2d" -eq $((6 * 293)) ] || fail "gd_order: $d2d device-to-device copies, want $((6 * 293))"
pass "gd_order: $(cat "$WORK/order.check"), all device to device"

job staged 1M 2 || fail "staged: job exited $?"
n=$(grep -c "^exact: .* 0 wrong$" "$WORK/staged.out.log")
[ "$n" -eq 2 ] || fail "staged: $n of 2 workers exact"
n=$(grep -c "device tensors: pushes staged through pinned host memory, not GPUDirect RDMA: dma-buf: no dma-buf of device memory: .*; nvidia-peermem: nvidia-peermem is not loaded" \
	"$WORK/staged.err.log")
[ "$n" -eq 2 ] || fail "staged: $n of 2 workers said why their pushes are staged"
pass "staged: without nvidia-peermem or a dma-buf, pushes staged and the log says why"
assert_no_leftovers
