# A worker killed mid-job: the scheduler notices through the heartbeat
# timeout (or a server's failed send) and reports the dead worker by name, every process exits
# non-zero, nothing hangs. How long it takes is not asserted (a busy
# machine only makes it longer): a job that hangs is ended by start_job's
# hang guard, which assert_job_ended tells apart.
source "$(dirname "$0")/lib.sh" "$@"

start_job job --set train.iterations=1000000 \
	--set cluster.heartbeat_timeout_ms=2000
job=$JOB_PID
wait_for "$WORK/job.out.log" '^worker 1 iter 5/'
victim=$(pgrep -f "ps-worker.*$WORK" | head -n 1)
[ -n "$victim" ] || fail "no worker process found"
kill -9 "$victim"
wait $job
status=$?
assert_job_ended job $status "a worker killed"
[ $status -ne 0 ] || fail "the job exited 0 after a worker was killed"
# Named through its silence, or, first, by a server whose send to it
# failed (PEER_LOST): which comes first is a race, both name it.
grep -Eq "scheduler\] error: aborting the job: worker [01] \(pid $victim .*(silent for [0-9]+ ms \(cluster.heartbeat_timeout_ms = 2000\)|unreachable from server [01] )" \
	"$WORK/job.err.log" || fail "the scheduler did not name the dead worker"
n=$(grep -c 'exited with status' "$WORK/job.err.log")
[ "$n" -eq 5 ] || fail "$n of 5 processes exited non-zero"
pass "worker pid $victim killed: named by the scheduler, job stopped with status $status"
assert_no_leftovers
