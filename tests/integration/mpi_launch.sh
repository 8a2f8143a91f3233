# ps-launch --rank under Open MPI's mpirun: one mpirun starts every role
# (rank 0 the scheduler, ranks 1-2 the servers, 3-4 the workers, from
# OMPI_COMM_WORLD_RANK/SIZE). As root the job runs in a network namespace
# of its own, so its fixed scheduler port collides with nothing.
#  1. mpirun -np 5: exact, each rank says its role.
#  2. mpirun -np 4 for a 5-process job: the ranks stop with exit 2 saying
#     how many tasks to start (mpirun aborts the others at the first one,
#     so at least one says it); mpirun fails; nothing left.
source "$(dirname "$0")/lib.sh" "$@"
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (openmpi-bin)"; exit 77; }
mpirun --version 2>&1 | grep -q "Open MPI" || { echo "SKIP: mpirun is not Open MPI's"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# no shared memory/network transports needed: the ranks don't use MPI
export OMPI_MCA_btl=self OMPI_MCA_plm_rsh_agent=false
in_ns=()
if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null; then
	ns=ordo-mpi-$$
	ip netns add "$ns" || fail "ip netns add"
	ip -n "$ns" link set lo up
	trap 'rc=$?; ip netns del "$ns" 2>/dev/null; (exit $rc); on_exit' EXIT
	in_ns=(ip netns exec "$ns")
	port=9200
else
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
fi
exact=(--worker "$TOOLS/exact_worker" --set train.iterations=5 --set train.lr=1
	--set train.momentum=0 --set cluster.scheduler_port=$port)
run_mpi() {
	local name=$1 np=$2
	shift 2
	EXACT_WORKER_SIZES=100,3000 timeout --kill-after=5 300 "${in_ns[@]}" \
		mpirun --oversubscribe -np "$np" "$BUILD/ps-launch" --rank --config "$JOB" "$@" \
		>"$WORK/$name.out.log" 2>"$WORK/$name.err.log"
}

run_mpi job 5 "${exact[@]}" || fail "mpirun -np 5 exited $?"
[ "$(grep -c '^exact: .* 0 wrong$' "$WORK/job.out.log")" -eq 2 ] || fail "the job under mpirun is not exact"
for want in "rank 0 of 5 (OMPI_COMM_WORLD_RANK): scheduler" \
	"rank 1 of 5 (OMPI_COMM_WORLD_RANK): server #0" "rank 2 of 5 (OMPI_COMM_WORLD_RANK): server #1" \
	"rank 3 of 5 (OMPI_COMM_WORLD_RANK): worker #0" "rank 4 of 5 (OMPI_COMM_WORLD_RANK): worker #1"; do
	grep -qF "ps-launch: $want" "$WORK/job.err.log" || fail "no '$want'"
done
grep -q "^summary: job .* 2 worker(s) x 2 server(s), 5 iterations" "$WORK/job.out.log" ||
	fail "no scheduler summary"
assert_no_leftovers
pass "mpirun -np 5 ps-launch --rank: 1 scheduler, 2 servers, 2 workers by OMPI_COMM_WORLD_RANK, exact"

run_mpi short 4 "${exact[@]}" && fail "mpirun -np 4 for a 5-process job succeeded"
n=$(grep -c "ps-launch: --rank: OMPI_COMM_WORLD_SIZE = 4, but the job is 5 processes (1 scheduler, 2 server(s), 2 worker(s)): start 5 tasks" \
	"$WORK/short.err.log")
[ "$n" -ge 1 ] || fail "no rank said how many tasks to start: $(head -n 5 "$WORK/short.err.log")"
assert_no_leftovers
pass "mpirun -np 4 for 5 processes: 'start 5 tasks' ($n of 4 ranks said it before mpirun stopped them), mpirun fails, nothing left"
