# tests/rdma/guest_lib.sh - sourced by the guest tests (job.sh,
# presets.sh, errors.sh, gid.sh) with BUILD_DIR SOURCE_DIR: skips (77)
# outside scripts/rdma-vm (ORDO_RDMA_VM=1), then tests/integration/lib.sh;
# defines `rdma` (the --set arguments of a job over the verbs transport on
# rxe0's 192.0.2.1) and exact_job.
if [ "${ORDO_RDMA_VM:-0}" != 1 ]; then
	echo "SKIP: not inside scripts/rdma-vm (ORDO_RDMA_VM is not 1)"
	exit 77
fi
unset ORDO_RDMA_VM # ps-launch reads ORDO_* as configuration
source "$2/tests/integration/lib.sh" "$1" "$2"

rdma=(--set transport.type=rdma --set cluster.bind_host=192.0.2.1
	--set cluster.scheduler_host=192.0.2.1)

# exact_job NAME PARTITION_SIZE [ps-launch args...]: the exactness worker
# (tests/tools/exact_worker.c) over rdma, 2 workers x 2 servers, 6
# iterations; fails unless both workers report 0 wrong values.
exact_job() {
	local name=$1 psize=$2 n
	shift 2
	EXACT_WORKER_SIZES=1000,4097,10,1 \
		launch "$name" 240 --worker "$TOOLS/exact_worker" "${rdma[@]}" \
		--set cluster.workers=2 --set cluster.servers=2 \
		--set scheduling.partition_size="$psize" \
		--set train.iterations=6 --set train.lr=1 \
		--set train.momentum=0 "$@" ||
		fail "$name: job exited $?"
	n=$(grep -c "^exact: .* 0 wrong$" "$WORK/$name.out.log")
	[ "$n" -eq 2 ] || fail "$name: $n of 2 workers exact"
}
