#!/usr/bin/env bash
# tests/cuda/exact_gpu_server.sh BUILD_DIR SOURCE_DIR - server.device = cuda
# (a PS_WITH_CUDA=ON build, a CUDA device): aggregation and SGD on the GPU
# give the CPU's results exactly.
#
# 1. The exactness jobs (tests/integration/exact.sh: integer gradients,
#    lr 1, no momentum; exact_worker checks every value after every
#    iteration) for W = 1, 2, 4 workers, S = 1, 2, 3 servers, partitions
#    cut small (64 B), mid (1 KiB) and larger than every tensor (1 MiB).
# 2. SGD with momentum (the model worker, lr 0.05, momentum 0.9): the final
#    parameters (train.dump_params) with server.device = cuda and = cpu are
#    byte-identical (cmp), for W = 1 (the count-1 shortcut), 2 and 4.
# 3. Checkpoints: an exactness job with periodic checkpoints on the GPU,
#    resumed on the GPU under another layout, exact; and a momentum run
#    checkpointed at 10 and resumed, both on the GPU, ends with the
#    parameters of an uninterrupted CPU run (cmp).
# 4. AdamW on the servers: GPU = CPU (cmp), and checkpointed on the GPU by
#    3 servers, resumed by 1, = an uninterrupted CPU run (cmp).
#
# Without a device (no GPU, no driver) it prints "SKIP: ..." with
# ps-server's reason and exits 77.
source "$(dirname "$0")/../integration/lib.sh" "$@"

grep -q '^PS_WITH_CUDA:BOOL=ON' "$BUILD/CMakeCache.txt" ||
	fail "$BUILD is not a PS_WITH_CUDA=ON build"

# Is there a device? ps-server opens it before it joins a job (no
# scheduler listens on port 1: with a device it gives up after 1 s).
timeout 120 "$BUILD/ps-server" --config "$JOB" --set server.device=cuda \
	--set cluster.scheduler_port=1 --set cluster.connect_timeout_ms=1000 \
	>/dev/null 2>"$WORK/probe.log"
if grep -q "no CUDA device: " "$WORK/probe.log"; then
	echo "SKIP: $(grep -o 'no CUDA device: .*' "$WORK/probe.log" | head -1)"
	exit 77
fi
grep -q "server.device = cuda: device [0-9]* (.*): aggregation and SGD on the GPU" \
	"$WORK/probe.log" || {
	cat "$WORK/probe.log" >&2
	fail "ps-server, server.device = cuda: neither a device nor a reason"
}
echo "this machine: $(grep -o 'device [0-9]* (.*): aggregation and SGD on the GPU' "$WORK/probe.log" | head -1)"

# on_gpu NAME SERVERS: every server of the job said it runs on the GPU
on_gpu() {
	local n
	n=$(cat "$WORK/$1.err.log" "$WORK/$1.out.log" |
		grep -c "server.device = cuda: device [0-9]* (.*): aggregation and SGD on the GPU")
	[ "$n" -eq "$2" ] || fail "$1: $n of $2 servers on the GPU"
}
all_exact() { # NAME WORKERS
	local n
	n=$(grep -c "^exact: .* 0 wrong$" "$WORK/$1.out.log")
	[ "$n" -eq "$2" ] || fail "$1: $n of $2 workers exact"
}

# 1. Exactness
for W in 1 2 4; do
	for S in 1 2 3; do
		for psize in 64 1K 1M; do
			name=gpu-w${W}s${S}p$psize
			EXACT_WORKER_SIZES=1000,4097,10,1 \
				launch "$name" 300 --worker "$TOOLS/exact_worker" \
				--set server.device=cuda \
				--set cluster.workers="$W" --set cluster.servers="$S" \
				--set scheduling.partition_size="$psize" \
				--set train.iterations=6 --set train.lr=1 \
				--set train.momentum=0 ||
				fail "$name: job exited $?"
			all_exact "$name" "$W"
			on_gpu "$name" "$S"
			pass "$name: exact"
		done
	done
done

# 1b. server.optimizer = none on the GPU: the averages, exact
for W in 1 2 4; do
	name=gpu-none-w${W}s2
	EXACT_WORKER_SIZES=1000,4097,10,1 \
		launch "$name" 300 --worker "$TOOLS/exact_worker" \
		--set server.device=cuda --set server.optimizer=none \
		--set cluster.workers="$W" --set cluster.servers=2 \
		--set scheduling.partition_size=1K --set train.iterations=6 ||
		fail "$name: job exited $?"
	all_exact "$name" "$W"
	on_gpu "$name" 2
	pass "$name: the averaged gradient on the GPU, exact"
done

# 2. Momentum: GPU = CPU, byte for byte
mlp() { # NAME DEVICE [args...]
	local name=$1 dev=$2
	shift 2
	launch "$name" 300 --set server.device="$dev" --set train.momentum=0.9 \
		--set train.lr=0.05 --set train.iterations=20 \
		--set train.dump_params="$WORK/$name.params" "$@" ||
		fail "$name exited $?"
	[ -s "$WORK/$name.params" ] || fail "$name: no parameters dumped"
}
for W in 1 2 4; do
	mlp "cpu-w$W" cpu --set cluster.workers=$W --set cluster.servers=3 \
		--set scheduling.partition_size=1K
	mlp "gpu-w$W" cuda --set cluster.workers=$W --set cluster.servers=3 \
		--set scheduling.partition_size=1K
	on_gpu "gpu-w$W" 3
	cmp "$WORK/cpu-w$W.params" "$WORK/gpu-w$W.params" ||
		fail "momentum, W=$W: the GPU's parameters differ from the CPU's"
	pass "momentum, W=$W, S=3: GPU parameters = CPU parameters (cmp)"
done

# 3. Checkpoints on the GPU
CK=$WORK/ckpt
EXACT_WORKER_SIZES=1000,4097,10,1 launch gpu-periodic 300 \
	--worker "$TOOLS/exact_worker" --set server.device=cuda \
	--set train.lr=1 --set train.momentum=0 --set checkpoint.dir="$CK" \
	--set cluster.workers=2 --set cluster.servers=3 \
	--set scheduling.partition_size=1K --set train.iterations=12 \
	--set checkpoint.every=3 --set checkpoint.keep=10 ||
	fail "gpu-periodic exited $?"
all_exact gpu-periodic 2
ck6=$(printf '%s/ckpt-%012d' "$CK" 6)
[ -s "$ck6/manifest.json" ] || fail "gpu-periodic: no checkpoint at 6"
"$BUILD/ps-ckpt" verify "$ck6" >"$WORK/verify.log" 2>&1 ||
	fail "ps-ckpt verify: $(cat "$WORK/verify.log")"
EXACT_WORKER_SIZES=1000,4097,10,1 launch gpu-resume 300 \
	--worker "$TOOLS/exact_worker" --set server.device=cuda \
	--set train.lr=1 --set train.momentum=0 \
	--set checkpoint.dir="$WORK/relayout" \
	--set cluster.workers=2 --set cluster.servers=2 \
	--set scheduling.partition_size=64 --set train.iterations=12 \
	--set checkpoint.resume="$ck6" || fail "gpu-resume exited $?"
all_exact gpu-resume 2
on_gpu gpu-resume 2
grep -q "^exact: worker 0 of 2: .* over iterations 7..12, 0 wrong$" \
	"$WORK/gpu-resume.out.log" || fail "gpu-resume did not start at 7"
pass "checkpoints on the GPU: written every 3, resumed at 6 with S=2, exact through 12"

rm -rf "$CK"
mlp straight cpu --set cluster.workers=2 --set cluster.servers=2
mlp first cuda --set cluster.workers=2 --set cluster.servers=3 \
	--set scheduling.partition_size=1K --set checkpoint.dir="$CK" \
	--set checkpoint.every=10 --set train.iterations=10
mlp second cuda --set cluster.workers=2 --set cluster.servers=1 \
	--set checkpoint.dir="$CK" --set checkpoint.resume=latest
on_gpu second 1
cmp "$WORK/straight.params" "$WORK/second.params" ||
	fail "momentum: checkpointed and resumed on the GPU, the parameters differ from an uninterrupted CPU run"
pass "momentum: checkpoint at 10 and resume on the GPU = uninterrupted CPU run (cmp)"

# 4. AdamW: GPU = CPU byte for byte, and its two moments through a
#    checkpoint on the GPU (written by 3 servers, resumed by 1)
rm -rf "$CK"
adamw=(--set server.optimizer=adamw --set train.lr=0.01 --set train.weight_decay=0.01)
mlp adamw-straight cpu "${adamw[@]}" --set cluster.workers=2 --set cluster.servers=2
mlp adamw-gpu cuda "${adamw[@]}" --set cluster.workers=2 --set cluster.servers=3 \
	--set scheduling.partition_size=1K
on_gpu adamw-gpu 3
cmp "$WORK/adamw-straight.params" "$WORK/adamw-gpu.params" ||
	fail "adamw: the GPU's parameters differ from the CPU's"
mlp adamw-first cuda "${adamw[@]}" --set cluster.workers=2 --set cluster.servers=3 \
	--set scheduling.partition_size=1K --set checkpoint.dir="$CK" \
	--set checkpoint.every=10 --set train.iterations=10
mlp adamw-second cuda "${adamw[@]}" --set cluster.workers=2 --set cluster.servers=1 \
	--set checkpoint.dir="$CK" --set checkpoint.resume=latest
on_gpu adamw-second 1
cmp "$WORK/adamw-straight.params" "$WORK/adamw-second.params" ||
	fail "adamw: checkpointed and resumed on the GPU, the parameters differ from an uninterrupted CPU run"
pass "adamw: GPU = CPU (cmp); checkpoint at 10 and resume on the GPU = uninterrupted CPU run (cmp)"
assert_no_leftovers
