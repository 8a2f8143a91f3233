#!/usr/bin/env bash
# tests/cuda/emulated.sh BUILD_DIR SOURCE_DIR - exact_gpu_server.sh with
# ps-server-emulated (tests/cuda/emulated_cuda.c: the CUDA runtime emulated
# on the host, copies and kernels deferred to the synchronisations) in
# place of ps-server. NOT a GPU: it checks server/gpu.c's wiring
# (partition offsets, pinned staging and its event, copy-on-write of the
# values, synchronisation before sends, momentum at checkpoints, uploads on
# INIT and resume) on any machine; whether the device computes what the
# CPU does is test_cuda_optimizer's and exact_gpu_server.sh's on a GPU.
source "$(dirname "$0")/../integration/lib.sh" "$@"

grep -q '^PS_WITH_CUDA:BOOL=ON' "$BUILD/CMakeCache.txt" ||
	fail "$BUILD is not a PS_WITH_CUDA=ON build"
# ps-launch starts the ps-server next to it: a directory of copies
BIN=$WORK/bin
mkdir -p "$BIN/tests"
for f in ps-launch ps-scheduler ps-worker ps-ckpt CMakeCache.txt; do
	cp "$BUILD/$f" "$BIN/" || fail "no $BUILD/$f"
done
cp "$BUILD/tests/cuda/ps-server-emulated" "$BIN/ps-server" ||
	fail "no ps-server-emulated (build the target ordo_cuda_tests)"
cp "$BUILD/tests/exact_worker" "$BIN/tests/" || fail "no exact_worker"

# a negative control: with the staging event not waited for, a round of
# two pushes must come out wrong (the emulation would catch the race)
EMULATED_CUDA_NO_EVENT=1 EXACT_WORKER_SIZES=1000,4097,10,1 \
	timeout --kill-after=5 300 "$BIN/ps-launch" --config "$JOB" \
	--worker "$BIN/tests/exact_worker" --set server.device=cuda \
	--set cluster.workers=2 --set cluster.servers=1 \
	--set train.iterations=3 --set train.lr=1 --set train.momentum=0 \
	>"$WORK/control.out.log" 2>"$WORK/control.err.log" &&
	fail "the negative control (no wait for the staging buffer) passed: the emulation checks nothing"
grep -q "^exact: .* [1-9][0-9]* wrong$" "$WORK/control.out.log" ||
	fail "the negative control failed without wrong values"
pass "negative control: without the staging event's wait, values are wrong"

# (exact_gpu_server.sh cleans up after itself; its jobs' command lines
# carry $BIN, so this test's own exit kills any straggler)
bash "$SRC/tests/cuda/exact_gpu_server.sh" "$BIN" "$SRC" ||
	fail "exact_gpu_server.sh with the emulated runtime: exit $?"
pass "exact_gpu_server.sh with the host emulation of CUDA (not a GPU)"
