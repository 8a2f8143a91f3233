#!/usr/bin/env bash
# tests/cuda/no_device.sh BUILD_DIR SOURCE_DIR - in a PS_WITH_CUDA=ON build,
# server.device = cuda is accepted by the configuration and checked when
# ps-server starts: without a CUDA device (no GPU, no driver) ps-server and
# ps-launch fail at once with "no CUDA device: cudaGetDeviceCount: ...";
# with one, the server says which device it opened and that it aggregates
# and applies SGD there (tests/cuda/exact_gpu_server.sh checks the values).
# Either way never a hang and never a job that silently runs on the CPU.
source "$(dirname "$0")/../integration/lib.sh" "$@"

grep -q '^PS_WITH_CUDA:BOOL=ON' "$BUILD/CMakeCache.txt" ||
	fail "$BUILD is not a PS_WITH_CUDA=ON build"

# (no scheduler listens on port 1: with a device the server gets as far as
# joining, and gives up after connect_timeout_ms)
timeout 120 "$BUILD/ps-server" --config "$JOB" --set server.device=cuda \
	--set cluster.scheduler_port=1 --set cluster.connect_timeout_ms=1000 \
	>/dev/null 2>"$WORK/server.log"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 2 ] ||
	fail "ps-server, server.device = cuda: exit $rc (expected a start-up failure, not 0, 2 or a hang)"
if grep -q "no CUDA device: cudaGetDeviceCount: " "$WORK/server.log"; then
	device=0
	echo "this machine: $(grep -o 'no CUDA device: .*' "$WORK/server.log")"
	pass "ps-server: no CUDA device, exit $rc"
elif grep -q "server.device = cuda: device 0 (.*, .* GiB): aggregation and SGD on the GPU" "$WORK/server.log"; then
	device=1
	pass "ps-server: CUDA device 0 opened for aggregation and SGD (no scheduler: exit $rc)"
else
	cat "$WORK/server.log" >&2
	fail "ps-server, server.device = cuda: no clear message"
fi

# a device index the machine does not have
timeout 120 "$BUILD/ps-server" --config "$JOB" --set server.device=cuda \
	--set server.cuda_device=255 >/dev/null 2>"$WORK/index.log"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "ps-server, server.cuda_device = 255: exit $rc"
if [ $device = 0 ]; then
	grep -q "no CUDA device: cudaGetDeviceCount: " "$WORK/index.log" ||
		fail "ps-server, server.cuda_device = 255: no clear message"
else
	grep -q "server.cuda_device = 255, but this machine has [0-9]* CUDA device(s): 0 " "$WORK/index.log" ||
		fail "ps-server, server.cuda_device = 255: the error does not list the devices"
fi
pass "ps-server: server.cuda_device = 255, exit $rc"

# the whole job: without a device ps-launch fails (its servers do) and
# shows why; the scheduler gives up after cluster.connect_timeout_ms. With
# one, the job runs on it.
timeout 300 "$BUILD/ps-launch" --config "$JOB" --set server.device=cuda \
	>/dev/null 2>"$WORK/launch.log"
rc=$?
if [ $device = 0 ]; then
	[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "ps-launch, server.device = cuda: exit $rc"
	grep -q "no CUDA device: cudaGetDeviceCount: " "$WORK/launch.log" || {
		cat "$WORK/launch.log" >&2
		fail "ps-launch, server.device = cuda: the server's error is not shown"
	}
	pass "ps-launch: server.device = cuda fails the job, exit $rc"
else
	[ $rc -eq 0 ] || {
		cat "$WORK/launch.log" >&2
		fail "ps-launch, server.device = cuda, with a device: exit $rc"
	}
	n=$(grep -c "aggregation and SGD on the GPU" "$WORK/launch.log")
	[ "$n" -eq 2 ] || fail "ps-launch: $n of 2 servers said they run on the GPU"
	pass "ps-launch: server.device = cuda, both servers on the GPU, exit 0"
fi
