# SIGINT to ps-launch stops the whole job cleanly: nothing left running.
source "$(dirname "$0")/lib.sh" "$@"

timeout --kill-after=5 120 "$BUILD/ps-launch" --config "$JOB" \
	--set train.iterations=1000000 \
	>"$WORK/job.out.log" 2>"$WORK/job.err.log" &
job=$!
for _ in $(seq 1 300); do
	grep -q '^worker 1 iter 5/' "$WORK/job.out.log" && break
	sleep 0.1
done
grep -q '^worker 1 iter 5/' "$WORK/job.out.log" || fail "the job did not start"
kill -INT $job
start=$(date +%s)
wait $job
status=$?
[ $status -ne 0 ] || fail "interrupted job exited 0"
[ $status -ne 124 ] && [ $status -ne 137 ] || fail "the job hung after SIGINT"
[ $(($(date +%s) - start)) -lt 10 ] || fail "took too long to stop"
pass "SIGINT: job stopped with status $status"
assert_no_leftovers
