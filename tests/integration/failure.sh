# A worker killed mid-job: the scheduler reports it by name within the
# heartbeat timeout, every process exits non-zero, nothing hangs.
source "$(dirname "$0")/lib.sh" "$@"

start_job job --set train.iterations=1000000 \
	--set cluster.heartbeat_timeout_ms=2000
job=$JOB_PID
wait_for "$WORK/job.out.log" '^worker 1 iter 5/'
victim=$(pgrep -f "ps-worker.*$WORK" | head -n 1)
[ -n "$victim" ] || fail "no worker process found"
start=$(date +%s%N)
kill -9 "$victim"
wait $job
status=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
[ $status -ne 0 ] || fail "the job exited 0 after a worker was killed"
grep -q "scheduler\] error: aborting the job: worker [01] (pid $victim .* silent for" "$WORK/job.err.log" ||
	fail "the scheduler did not name the dead worker"
n=$(grep -c 'exited with status' "$WORK/job.err.log")
[ "$n" -eq 5 ] || fail "$n of 5 processes exited non-zero"
# (the timeout above is 120 s: stopping this fast means nothing hung)
[ $elapsed_ms -lt 15000 ] || fail "took $elapsed_ms ms to stop"
pass "worker pid $victim killed: job stopped in $elapsed_ms ms with status $status"
assert_no_leftovers
