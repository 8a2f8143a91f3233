#!/usr/bin/env bash
# tests/rdma/errors.sh BUILD_DIR SOURCE_DIR - failures over the verbs
# transport end a job cleanly with a named reason, inside scripts/rdma-vm
# (ORDO_RDMA_VM=1; skips elsewhere), as tests/integration/failure.sh shows
# over tcp:
#   1. a worker killed (SIGKILL) mid-job: its QPs die with the process;
#      the scheduler names it (silence, or a server's send that failed:
#      PEER_LOST), every process exits non-zero, nothing hangs;
#   2. a server killed: the same, naming the server.
# Timing is never asserted: a job that hangs is ended by start_job's hang
# guard, which assert_job_ended tells apart.
if [ "${ORDO_RDMA_VM:-0}" != 1 ]; then
	echo "SKIP: not inside scripts/rdma-vm (ORDO_RDMA_VM is not 1)"
	exit 77
fi
unset ORDO_RDMA_VM # ps-launch reads ORDO_* as configuration
source "$2/tests/integration/lib.sh" "$1" "$2"

rdma=(--set transport.type=rdma --set cluster.bind_host=192.0.2.1
	--set cluster.scheduler_host=192.0.2.1)

# kill_mid_job NAME ROLE: starts a long job over rdma, kills one process of
# ROLE (worker|server) once worker 1 is at iteration 3, and checks the end.
kill_mid_job() {
	local name=$1 role=$2 victim status
	start_job "$name" "${rdma[@]}" --set train.iterations=1000000 \
		--set cluster.heartbeat_timeout_ms=5000
	local job=$JOB_PID
	wait_for "$WORK/$name.out.log" '^worker 1 iter 3/'
	victim=$(pgrep -f "ps-$role.*$WORK" | head -n 1)
	[ -n "$victim" ] || fail "$name: no $role process found"
	kill -9 "$victim"
	wait "$job"
	status=$?
	assert_job_ended "$name" $status "a $role killed"
	[ $status -ne 0 ] || fail "$name: the job exited 0 after a $role was killed"
	grep -Eq "scheduler\] error: aborting the job: $role [01] \(pid $victim " \
		"$WORK/$name.err.log" ||
		fail "$name: the scheduler did not name the dead $role (pid $victim)"
	local n
	n=$(grep -c 'exited with status' "$WORK/$name.err.log")
	[ "$n" -eq 5 ] || fail "$name: $n of 5 processes exited non-zero"
	pass "$name: $role pid $victim killed over rdma: named by the scheduler, job stopped with status $status"
}

kill_mid_job worker-killed worker
kill_mid_job server-killed server
assert_no_leftovers
