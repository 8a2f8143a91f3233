#!/usr/bin/env bash
# tests/rdma/job.sh BUILD_DIR SOURCE_DIR - a real job over the verbs
# transport, inside scripts/rdma-vm (ORDO_RDMA_VM=1; skips elsewhere):
# ps-launch with transport.type = rdma on 192.0.2.1 (rxe0), 2 workers x 2
# servers, the exactness worker (tests/tools/exact_worker.c, as in
# tests/integration/exact.sh): integer gradients, lr 1, no momentum, and
# every parameter checked against the closed form after every iteration.
if [ "${ORDO_RDMA_VM:-0}" != 1 ]; then
	echo "SKIP: not inside scripts/rdma-vm (ORDO_RDMA_VM is not 1)"
	exit 77
fi
# ps-launch reads ORDO_* variables as configuration: this one is not.
unset ORDO_RDMA_VM
source "$2/tests/integration/lib.sh" "$1" "$2"

for psize in 1024 1M; do
	name=rdma_w2s2p$psize
	EXACT_WORKER_SIZES=1000,4097,10,1 \
		launch "$name" 240 --worker "$TOOLS/exact_worker" \
		--set transport.type=rdma \
		--set cluster.bind_host=192.0.2.1 \
		--set cluster.scheduler_host=192.0.2.1 \
		--set cluster.workers=2 --set cluster.servers=2 \
		--set scheduling.partition_size="$psize" \
		--set train.iterations=6 --set train.lr=1 \
		--set train.momentum=0 ||
		fail "$name: job exited $?"
	n=$(grep -c "^exact: .* 0 wrong$" "$WORK/$name.out.log")
	[ "$n" -eq 2 ] || fail "$name: $n of 2 workers exact"
	pass "$name"
done
assert_no_leftovers
