#!/usr/bin/env bash
# tests/cuda/client.sh BUILD_DIR SOURCE_DIR - device tensors through the
# client API (docs/cuda.md): cuda_client_worker --probe checks the errors
# of a bad device index, a host pointer and pinned memory that cannot be
# had; then 2 workers x 2 servers train with every tensor in device memory
# (declared with ps_client_declare_cuda, pushed with ps_client_push_stream,
# read after ps_client_ready_event) and every parameter is exact, for
# partition sizes that cut the tensors and that fuse the small ones.
# Without a CUDA device: "SKIP: no CUDA device: ...", exit 77.
source "$(dirname "$0")/../integration/lib.sh" "$@"

"$TOOLS/cuda/cuda_client_worker" --probe >"$WORK/probe.log" 2>&1
rc=$?
cat "$WORK/probe.log"
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || fail "cuda_client_worker --probe exited $rc"

for run in 1024:off 4096:on; do
	psize=${run%:*} fusion=${run#*:}
	name=cuda_w2s2p${psize}f$fusion
	CUDA_WORKER_SIZES=1000,4097,10,1 \
		launch "$name" 300 --worker "$TOOLS/cuda/cuda_client_worker" \
		--set cluster.workers=2 --set cluster.servers=2 \
		--set scheduling.partition_size="$psize" --set scheduling.fusion="$fusion" \
		--set train.iterations=6 --set train.lr=1 \
		--set train.momentum=0 ||
		fail "$name: job exited $?"
	n=$(grep -c "^exact: .* 0 wrong$" "$WORK/$name.out.log")
	[ "$n" -eq 2 ] || fail "$name: $n of 2 workers exact"
	pass "$name: device tensors exact"
done
assert_no_leftovers
