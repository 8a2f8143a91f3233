# ps-launch --rank under Open MPI's mpirun and MPICH's hydra: one launcher
# starts every role (rank 0 the scheduler, ranks 1-2 the servers, 3-4 the
# workers, from OMPI_COMM_WORLD_RANK/SIZE, or PMI_RANK/SIZE under hydra). As root the job runs in a network namespace
# of its own, so its fixed scheduler port collides with nothing.
#  1. mpirun -np 5 with conf/cluster.ini (the shipped config for jobs
#     across machines): exact, each rank says its role.
#  1b. (in the namespace) cluster.scheduler_host = 10.204.0.1, on a veth
#     there, and bind_host left at its loopback default:
#     every server and worker binds the address from which it reaches the
#     scheduler, says so, and the job is exact; a scheduler host given by
#     name (localhost) is resolved by rank 0.
#  2. mpiexec.hydra -n 5 (when MPICH is installed): the same by PMI_RANK.
#  3. mpirun -np 4 for a 5-process job: the ranks stop with exit 2 saying
#     how many tasks to start (mpirun aborts the others at the first one,
#     so at least one says it); mpirun fails; nothing left.
source "$(dirname "$0")/lib.sh" "$@"
# every rank shares the job's secret, as the README says to give it
export ORDO_JOB_SECRET=$("$BUILD/ps-keygen" --secret)
mpirun=$(command -v mpirun.openmpi || command -v mpirun) ||
	{ echo "SKIP: no mpirun (openmpi-bin)"; exit 77; }
"$mpirun" --version 2>&1 | grep -q "Open MPI\|OpenRTE" || { echo "SKIP: $mpirun is not Open MPI's"; exit 77; }
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
# run_mpi NAME NP CONFIG [ps-launch args]; MPIRUN: the launcher and its
# options before the count
MPIRUN=("$mpirun" --oversubscribe -np)
run_mpi() {
	local name=$1 np=$2 config=$3
	shift 3
	EXACT_WORKER_SIZES=100,3000 timeout --kill-after=5 300 "${in_ns[@]}" \
		"${MPIRUN[@]}" "$np" "$BUILD/ps-launch" --rank --config "$config" "$@" \
		>"$WORK/$name.out.log" 2>"$WORK/$name.err.log"
}

cp "$SRC/conf/cluster.ini" "$WORK/cluster.ini" # its path finds stragglers
run_mpi job 5 "$WORK/cluster.ini" "${exact[@]}" || fail "mpirun -np 5 exited $?"
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

if [ ${#in_ns[@]} -gt 0 ]; then
	# on a veth pair (an address on lo would leave Open MPI's
	# out-of-band channel without a network)
	ip -n "$ns" link add v0 type veth peer name v1 || fail "ip link add veth"
	ip -n "$ns" addr add 10.204.0.1/24 dev v0
	ip -n "$ns" link set v0 up
	ip -n "$ns" link set v1 up
	run_mpi routed 5 "$JOB" "${exact[@]}" --set cluster.scheduler_host=10.204.0.1 ||
		fail "the job with the scheduler on 10.204.0.1 exited $?"
	[ "$(grep -c '^exact: .* 0 wrong$' "$WORK/routed.out.log")" -eq 2 ] || fail "routed job not exact"
	n=$(grep -c "ps-launch: rank [1-4] of 5 (OMPI_COMM_WORLD_RANK): \(server\|worker\) #[01], cluster.bind_host=10.204.0.1$" \
		"$WORK/routed.err.log")
	[ "$n" -eq 4 ] || fail "$n of 4 ranks bound the address that reaches the scheduler"
	n=$(grep -c "listening on tcp://10.204.0.1:" "$WORK/routed.err.log")
	[ "$n" -eq 5 ] || fail "$n of 5 processes listen on 10.204.0.1"
	run_mpi named 5 "$JOB" "${exact[@]}" --set cluster.scheduler_host=localhost ||
		fail "the job with scheduler_host = localhost exited $?"
	grep -q "ps-launch: rank 0 of 5 (OMPI_COMM_WORLD_RANK): scheduler, cluster.scheduler_host=127.0.0.1$" \
		"$WORK/named.err.log" || fail "rank 0 did not resolve localhost"
	[ "$(grep -c '^exact: .* 0 wrong$' "$WORK/named.out.log")" -eq 2 ] || fail "named job not exact"
	assert_no_leftovers
	pass "--rank: servers and workers bind the address that reaches the scheduler; a scheduler host name resolved by rank 0"
fi

if command -v mpiexec.hydra >/dev/null; then
	MPIRUN=(mpiexec.hydra -n)
	run_mpi hydra 5 "$JOB" "${exact[@]}" || fail "mpiexec.hydra -n 5 exited $?"
	[ "$(grep -c '^exact: .* 0 wrong$' "$WORK/hydra.out.log")" -eq 2 ] ||
		fail "the job under hydra is not exact"
	for r in "0 of 5 (PMI_RANK): scheduler" "2 of 5 (PMI_RANK): server #1" "4 of 5 (PMI_RANK): worker #1"; do
		grep -qF "ps-launch: rank $r" "$WORK/hydra.err.log" || fail "no 'rank $r' under hydra"
	done
	assert_no_leftovers
	pass "mpiexec.hydra -n 5 (MPICH): the roles by PMI_RANK, exact"
	MPIRUN=("$mpirun" --oversubscribe -np)
else
	echo "skipping MPICH's hydra: mpiexec.hydra not installed (mpich)"
fi

run_mpi short 4 "$JOB" "${exact[@]}" && fail "mpirun -np 4 for a 5-process job succeeded"
n=$(grep -c "ps-launch: --rank: OMPI_COMM_WORLD_SIZE = 4, but the job is 5 processes (1 scheduler, 2 server(s), 2 worker(s)): start 5 tasks" \
	"$WORK/short.err.log")
[ "$n" -ge 1 ] || fail "no rank said how many tasks to start: $(head -n 5 "$WORK/short.err.log")"
assert_no_leftovers
pass "mpirun -np 4 for 5 processes: 'start 5 tasks' ($n of 4 ranks said it before mpirun stopped them), mpirun fails, nothing left"
