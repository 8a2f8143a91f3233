#!/usr/bin/env bash
# tests/cuda/replay.sh BUILD_DIR SOURCE_DIR - worker.gradients = cuda: a
# replaying worker holds its gradients and parameters in device memory
# (worker/replay.c, docs/cuda.md), so the copies to and from the device are
# in its measured iteration times.
#
#  - ps-worker as built: without a CUDA device the job fails at once naming
#    it ("worker.gradients = cuda: no CUDA device: ..."); with one, both
#    workers say which device they use and the job completes;
#  - ps-worker over the host emulation of CUDA (tests/cuda/emulated_cuda.c,
#    NOT a GPU), where a copy to the host takes EMULATED_CUDA_COPY_US:
#    every partition of every push is copied and handed to the gate right
#    after its own copy (tests/tools/handover_order.py), and every
#    iteration takes at least its ops' time plus its copies' (a lower
#    bound only: a busy machine can only make an iteration longer).
source "$(dirname "$0")/../integration/lib.sh" "$@"

grep -q '^PS_WITH_CUDA:BOOL=ON' "$BUILD/CMakeCache.txt" ||
	fail "$BUILD is not a PS_WITH_CUDA=ON build"
MODEL=$SRC/tests/models/chain8.json # 8 x 1024 floats; ops: 100 ms
replay=(--set worker.mode=replay --set model.file="$MODEL"
	--set worker.gradients=cuda)

launch device 300 "${replay[@]}" --set train.iterations=3
rc=$?
if grep -q "worker.gradients = cuda: no CUDA device: cudaGetDeviceCount: " \
	"$WORK/device.err.log"; then
	[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "ps-launch without a device: exit $rc"
	pass "no CUDA device: the job fails naming it (exit $rc)"
else
	[ $rc -eq 0 ] || fail "ps-launch, worker.gradients = cuda: exit $rc"
	n=$(grep -c "worker.gradients = cuda: device 0 (" "$WORK/device.err.log")
	[ "$n" -eq 2 ] || fail "$n of 2 workers said which device holds their gradients"
	pass "a CUDA device: both workers replay from device memory, exit 0"
fi

# ps-launch starts the ps-worker next to it: a directory of copies
BIN=$WORK/bin
mkdir -p "$BIN"
for f in ps-launch ps-scheduler ps-server CMakeCache.txt; do
	cp "$BUILD/$f" "$BIN/" || fail "no $BUILD/$f"
done
cp "$BUILD/tests/cuda/ps-worker-emulated" "$BIN/ps-worker" ||
	fail "no ps-worker-emulated (build the target ordo_cuda_tests)"
BUILD=$BIN # launch() runs $BUILD/ps-launch

launch emu_w2s2 300 "${replay[@]}" --set train.iterations=4 ||
	fail "the emulated 2 x 2 replay exited $?"
n=$(grep -c "worker.gradients = cuda: device 0 (host emulation, not a GPU" \
	"$WORK/emu_w2s2.err.log")
[ "$n" -eq 2 ] || fail "$n of 2 workers logged their device"
pass "2 x 2 replay from (emulated) device memory, exit 0"

# one worker: its stderr lines are its own. 1 KiB partitions: each tensor
# is 4 of them, 32 copies an iteration, 2 ms each.
copy_us=2000 iters=6
EMULATED_CUDA_TRACE=1 EMULATED_CUDA_COPY_US=$copy_us \
	launch emu_w1s1 300 "${replay[@]}" --set cluster.workers=1 \
	--set cluster.servers=1 --set scheduling.partition_size=1024 \
	--set scheduling.fusion=off --set train.iterations=$iters \
	--set log.level=debug || fail "the emulated 1 x 1 replay exited $?"
want=$(seq -s, -f "l%g.weight=4" 0 7)
python3 "$SRC/tests/tools/handover_order.py" "$WORK/emu_w1s1.err.log" \
	--iterations $iters --want "$want" --copies-are-pushes \
	>"$WORK/order.check" || fail "hand-over: $(cat "$WORK/order.check")"
pass "hand-over: $(cat "$WORK/order.check")"
copies=$(grep -c "^emulated CUDA: device-to-host copy of" "$WORK/emu_w1s1.err.log")
[ "$copies" -eq $((iters * 32)) ] || fail "$copies copies, want $((iters * 32))"
bound=$(awk -v c="$copies" -v i=$iters -v us=$copy_us \
	'BEGIN { print 100 + c / i * us / 1000 }')
times=$(sed -n "s|^worker 0 iter \([0-9]*\)/$iters time \([0-9.]*\) ms .*|\1 \2|p" \
	"$WORK/emu_w1s1.out.log" | awk '$1 >= 2 { print $2 }')
[ "$(echo "$times" | wc -w)" -eq $((iters - 1)) ] ||
	fail "progress lines of iterations 2..$iters: $(echo $times)"
for t in $times; do
	awk -v t="$t" -v b="$bound" 'BEGIN { exit !(t >= b - 0.01) }' ||
		fail "an iteration took $t ms, less than its ops and copies' $bound ms"
done
pass "iterations of $(echo $times) ms, each at least its ops (100 ms) and copies ($bound ms in all)"
assert_no_leftovers
