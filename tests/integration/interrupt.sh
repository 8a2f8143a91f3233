# SIGINT to ps-launch stops the whole job cleanly: nothing left running.
# SIGHUP and SIGTERM to ps-launch of a curve job with per-job keys stop it
# the same way and remove its key directory. SIGKILL to ps-launch leaves
# no process of the job running (each local process gets SIGTERM when
# ps-launch goes); only its key directory stays (nothing can run then).
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

# ---- SIGHUP and SIGTERM: per-job keys removed
export TMPDIR=$WORK/tmp
mkdir -p "$TMPDIR"
for sig in HUP TERM; do
	start_job $sig --set train.iterations=1000000 --set security.mode=curve
	job=$JOB_PID
	wait_for "$WORK/$sig.out.log" '^worker 1 iter 5/'
	keys=$(grep -o 'a key pair for this job in .*' "$WORK/$sig.err.log" | awk '{print $NF}')
	[ -n "$keys" ] && [ -f "$keys/job.key" ] || fail "SIG$sig: no per-job keys ($keys)"
	kill -$sig $job # timeout(1) passes it on to ps-launch
	wait $job
	status=$?
	assert_job_ended $sig $status "SIG$sig"
	num=$(kill -l $sig)
	[ $status -eq $((128 + num)) ] || fail "SIG$sig: ps-launch exited $status, not $((128 + num))"
	grep -q "^ps-launch: signal $num: stopping the job" "$WORK/$sig.err.log" ||
		fail "ps-launch did not report SIG$sig"
	[ ! -e "$keys" ] || fail "SIG$sig: the per-job key directory $keys is left"
	assert_no_leftovers
	pass "SIG$sig: job stopped with status $status, per-job keys removed"
done

# ---- SIGKILL: no process of the job left
start_job kill --set train.iterations=1000000 --set security.mode=curve
job=$JOB_PID
wait_for "$WORK/kill.out.log" '^worker 1 iter 5/'
launcher=$(pgrep -P $job -f ps-launch) || fail "no ps-launch under timeout $job"
kill -KILL $launcher
wait $job
assert_no_leftovers
pass "SIGKILL: every process of the job ended with ps-launch"
