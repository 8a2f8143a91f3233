#!/usr/bin/env bash
# tests/rdma/errors.sh BUILD_DIR SOURCE_DIR - failures over the verbs
# transport end a job cleanly with a named reason, inside scripts/rdma-vm
# (ORDO_RDMA_VM=1; skips elsewhere), as tests/integration/failure.sh shows
# over tcp:
#   1. a worker killed (SIGKILL) mid-job: its QPs die with the process;
#      the scheduler names it (silence, or a server's send that failed:
#      PEER_LOST), every process exits non-zero, nothing hangs;
#   2. a server killed: the same, naming the server;
#   3. the device removed under a running job (`rdma link delete rxe0`):
#      every process's transport reports "rdma: device rxe0 removed", every
#      process exits non-zero, nothing hangs; then rxe0 is added back (GID
#      index 1 = ::ffff:192.0.2.1, as the later guest tests need).
# Timing is never asserted: a job that hangs is ended by start_job's hang
# guard, which assert_job_ended tells apart.
source "$(dirname "$0")/guest_lib.sh" "$@"

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

gid1=/sys/class/infiniband/rxe0/ports/1/gids/1
device_back() { grep -q "0000:0000:0000:0000:0000:ffff:c000:0201" "$gid1" 2>/dev/null; }
start_job removed "${rdma[@]}" --set train.iterations=1000000 \
	--set cluster.heartbeat_timeout_ms=5000
job=$JOB_PID
wait_for "$WORK/removed.out.log" '^worker 1 iter 3/'
# the delete returns once every process has let go of the device
rdma link delete rxe0 >"$WORK/delete.log" 2>&1 &
del=$!
wait "$job"
status=$?
wait $del || fail "rdma link delete rxe0 failed: $(cat "$WORK/delete.log")"
rdma link add rxe0 type rxe netdev rxenet0 || fail "could not add rxe0 back"
poll_until 60 device_back || fail "rxe0 came back without GID index 1 = ::ffff:192.0.2.1"
assert_job_ended removed $status "the device removed"
[ $status -ne 0 ] || fail "the job exited 0 after its device was removed"
n=$(grep -c 'rdma: device rxe0 removed' "$WORK/removed.err.log")
[ "$n" -ge 1 ] || fail "no process named the removed device"
n=$(grep -c 'exited with status' "$WORK/removed.err.log")
[ "$n" -eq 5 ] || fail "$n of 5 processes exited non-zero after the device was removed"
pass "rxe0 removed under a running job: named ('rdma: device rxe0 removed'), all 5 processes exited non-zero; rxe0 added back"
assert_no_leftovers
