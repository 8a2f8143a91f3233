#!/usr/bin/env bash
# tests/rdma/job.sh BUILD_DIR SOURCE_DIR - a real job over the verbs
# transport, inside scripts/rdma-vm (ORDO_RDMA_VM=1; skips elsewhere):
# ps-launch with transport.type = rdma on 192.0.2.1 (rxe0), 2 workers x 2
# servers, the exactness worker (tests/tools/exact_worker.c, as in
# tests/integration/exact.sh): integer gradients, lr 1, no momentum, and
# every parameter checked against the closed form after every iteration.
source "$(dirname "$0")/guest_lib.sh" "$@"

for psize in 1024 1M; do
	exact_job "rdma_w2s2p$psize" "$psize"
	pass "rdma_w2s2p$psize"
done
assert_no_leftovers
