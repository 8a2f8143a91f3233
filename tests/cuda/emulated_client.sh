#!/usr/bin/env bash
# tests/cuda/emulated_client.sh BUILD_DIR SOURCE_DIR - the client's device
# tensors (ps_client_declare_cuda, ps_client_push_stream,
# ps_client_ready_event) over cuda_client_worker_emulated: cuda/staging.c
# and client/device.c as built, with the CUDA runtime emulated on the host
# (tests/cuda/emulated_cuda.c: copies deferred until something waits for
# them, one stream waiting for another's event). NOT a GPU: it checks the
# client's wiring on any machine; client.sh runs the same jobs on a GPU.
#
#  - the probe's errors: a device index the machine lacks, a host pointer,
#    pinned memory that cannot be had;
#  - 2 workers x 2 servers, every tensor in device memory, exact, with
#    partitions that cut the tensors and with fusion;
#  - a negative control: with event waits disabled the pushed gradients
#    are not there yet, and values come out wrong;
#  - the hand-over: each partition goes to the gate as soon as its own copy
#    ran, before the next copy runs (so its send overlaps the copies after
#    it): tests/tools/handover_order.py reads it from the worker's stderr.
source "$(dirname "$0")/../integration/lib.sh" "$@"

grep -q '^PS_WITH_CUDA:BOOL=ON' "$BUILD/CMakeCache.txt" ||
	fail "$BUILD is not a PS_WITH_CUDA=ON build"
W=$TOOLS/cuda/cuda_client_worker_emulated
[ -x "$W" ] || fail "no $W (build the target ordo_cuda_tests)"

EMULATED_CUDA_LIMIT=$((1 << 30)) "$W" --probe >"$WORK/probe.log" 2>&1 ||
	fail "the probe exited $?: $(cat "$WORK/probe.log")"
for what in "device 1 (of 1)" "host pointer" "2^40 elements" \
	"a good declaration"; do
	grep -q "^ok: $what" "$WORK/probe.log" ||
		fail "probe: no 'ok: $what': $(cat "$WORK/probe.log")"
done
grep -q "CUDA device 1 asked, but this machine has 1 CUDA device" \
	"$WORK/probe.log" || fail "the bad index's error does not say why"
grep -q "is host memory, not device memory" "$WORK/probe.log" ||
	fail "the host pointer's error does not say why"
grep -q "out of pinned host memory" "$WORK/probe.log" ||
	fail "the pinned allocation's error does not say why"
pass "probe: bad device index, host pointer, pinned memory refused, named"

job() { # NAME PSIZE FUSION WORKERS [ps-launch args...]
	local name=$1 psize=$2 fusion=$3 workers=$4
	shift 4
	CUDA_WORKER_SIZES=1000,4097,10,1 \
		launch "$name" 300 --worker "$W" \
		--set cluster.workers="$workers" --set cluster.servers=2 \
		--set scheduling.partition_size="$psize" \
		--set scheduling.fusion="$fusion" --set train.iterations=6 \
		--set train.lr=1 --set train.momentum=0 "$@"
}

for run in 1024:off 4096:on; do
	psize=${run%:*} fusion=${run#*:}
	name=emu_w2s2p${psize}f$fusion
	job "$name" "$psize" "$fusion" 2 || fail "$name: job exited $?"
	n=$(grep -c "^exact: .* 0 wrong$" "$WORK/$name.out.log")
	[ "$n" -eq 2 ] || fail "$name: $n of 2 workers exact"
	pass "$name: device tensors exact (emulated device)"
done
# over tcp the log says the pushes are staged, and why (never GPUDirect)
n=$(grep -c "device tensors: pushes staged through pinned host memory, not GPUDirect RDMA: transport.type = tcp sends host memory only" \
	"$WORK/emu_w2s2p1024foff.err.log")
[ "$n" -eq 2 ] || fail "$n of 2 workers said their pushes are staged over tcp, and why"
pass "over tcp both workers log that pushes are staged, and why"

# negative control: the copies to pinned memory never waited for
EMULATED_CUDA_NO_EVENT=1 job control 1024 off 2 &&
	fail "the negative control (no event waits) passed: the emulation checks nothing"
grep -q "^exact: .* [1-9][0-9]* wrong$" "$WORK/control.out.log" ||
	fail "the negative control failed without wrong values"
pass "negative control: without waiting for the copies, values are wrong"

# The hand-over, one worker (its stderr lines are its own): 4097 floats in
# 1 KiB partitions are 17 partitions; 1000 floats are 4.
EMULATED_CUDA_TRACE=1 EMULATED_CUDA_COPY_US=1000 \
	job handover 1024 off 1 --set log.level=debug ||
	fail "handover: job exited $?"
grep -q "^exact: .* 0 wrong$" "$WORK/handover.out.log" ||
	fail "handover: the worker was not exact"
python3 "$SRC/tests/tools/handover_order.py" "$WORK/handover.err.log" \
	--iterations 6 --want t0=4,t1=17,t2=1,t3=1 >"$WORK/handover.check" ||
	fail "handover: $(cat "$WORK/handover.check")"
pass "handover: $(cat "$WORK/handover.check")"
assert_no_leftovers
