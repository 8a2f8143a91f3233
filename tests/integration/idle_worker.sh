# A worker away from the library - computing, say - for longer than the
# heartbeat timeout. In synchronous training without a credit window the
# client's communication thread is parked between a wait and the next push
# (client/driving.c, DESIGN driving): it must still wake for the
# heartbeats, or the scheduler takes the worker for dead. The workers hold
# iteration 5 for 2.5 heartbeat timeouts, counted from when a hold began
# (EXACT_WORKER_HELD); the job must then finish with every value exact.
source "$(dirname "$0")/lib.sh" "$@"
held=$WORK/held
go=$WORK/go

EXACT_WORKER_SIZES=1000,4097 EXACT_WORKER_HOLD=$go EXACT_WORKER_HELD=$held \
	EXACT_WORKER_HOLD_AT=5 start_job idle --worker "$TOOLS/exact_worker" \
	--set train.iterations=10 --set train.lr=1 --set train.momentum=0 \
	--set cluster.heartbeat_interval_ms=200 \
	--set cluster.heartbeat_timeout_ms=2000
job=$JOB_PID
poll_until 120 test -e "$held" || fail "no worker began its hold"
# The duration is what is tested, not a synchronisation: the worker is
# away from the library for at least this long, however loaded the machine.
sleep 5
touch "$go"
wait $job
status=$?
assert_job_ended idle $status "workers idle for 5 s"
[ $status -eq 0 ] || fail "the job failed while a worker was idle (status $status)"
n=$(grep -c "^exact: .* 0 wrong$" "$WORK/idle.out.log")
[ "$n" -eq 2 ] || fail "$n of 2 workers exact after the idle time"
pass "workers idle 5 s (heartbeat timeout 2 s): job finished, values exact"
assert_no_leftovers
