# SIGINT to ps-launch stops the whole job cleanly: nothing left running.
# "Stops" is all it checks: a job that hangs after SIGINT is ended by
# start_job's hang guard, which assert_job_ended tells apart; how long
# stopping takes is not asserted (a busy machine only makes it longer).
source "$(dirname "$0")/lib.sh" "$@"

start_job job --set train.iterations=1000000
job=$JOB_PID
wait_for "$WORK/job.out.log" '^worker 1 iter 5/'
kill -INT $job
wait $job
status=$?
assert_job_ended job $status "SIGINT"
[ $status -ne 0 ] || fail "interrupted job exited 0"
# stopped by the signal, not by a failure of its own
grep -q '^ps-launch: signal 2: stopping the job' "$WORK/job.err.log" ||
	fail "ps-launch did not report the signal"
pass "SIGINT: job stopped with status $status"
assert_no_leftovers
