# SIGINT to ps-launch stops the whole job cleanly: nothing left running.
source "$(dirname "$0")/lib.sh" "$@"

start_job job --set train.iterations=1000000
job=$JOB_PID
wait_for "$WORK/job.out.log" '^worker 1 iter 5/'
kill -INT $job
start=$(date +%s)
wait $job
status=$?
[ $status -ne 0 ] || fail "interrupted job exited 0"
[ $status -ne 124 ] && [ $status -ne 137 ] || fail "the job hung after SIGINT"
[ $(($(date +%s) - start)) -lt 10 ] || fail "took too long to stop"
pass "SIGINT: job stopped with status $status"
assert_no_leftovers
