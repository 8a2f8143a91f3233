# Slow starters: worker programs that take longer than
# cluster.connect_timeout_ms to register (importing a large framework on a
# busy machine) do not fail the job. The scheduler keeps waiting, up to
# cluster.register_timeout_ms, and says whom it waits for; once they start,
# the job runs and is exact. Then a register_timeout_ms that passes ends the
# job naming the key, and a worker that dies before registering stops it
# (ps-launch sees the exit) long before the registration window ends.
source "$(dirname "$0")/lib.sh" "$@"
go=$WORK/go
# a worker that starts only once the test says so: a program still loading
cat >"$WORK/slow_worker" <<SH
#!/bin/sh
while [ ! -e "$go" ]; do sleep 0.1; done
exec "$TOOLS/exact_worker" "\$@"
SH
chmod +x "$WORK/slow_worker"

EXACT_WORKER_SIZES=100,1000 start_job slow --worker "$WORK/slow_worker" \
	--set cluster.connect_timeout_ms=500 --set train.iterations=3 \
	--set train.lr=1 --set train.momentum=0
# past connect_timeout_ms, where the job used to be aborted: still waiting
wait_for "$WORK/slow.err.log" "waiting for 0 of 2 server(s) and 2 of 2 worker(s) to register"
kill -0 "$JOB_PID" 2>/dev/null || fail "the job ended while its workers were starting"
touch "$go"
wait "$JOB_PID"
rc=$?
assert_job_ended slow $rc "slow starters"
[ $rc -eq 0 ] || fail "the job with slow starters exited $rc"
n=$(grep -c '^exact: .* 0 wrong$' "$WORK/slow.out.log")
[ "$n" -eq 2 ] || fail "$n of 2 workers exact"
pass "workers registering after connect_timeout_ms: the scheduler waited, saying so; exact"

# register_timeout_ms passes: the job ends naming the key
rm -f "$go"
launch late 120 --worker "$WORK/slow_worker" --set cluster.connect_timeout_ms=300 \
	--set cluster.register_timeout_ms=1500 --set cluster.heartbeat_timeout_ms=2000 &&
	fail "a job nobody joined completed"
grep -q "only 2 of 2 server(s) and 0 of 2 worker(s) registered within 1500 ms (cluster.register_timeout_ms)" \
	"$WORK/late.err.log" || fail "register timeout: no clear message: $(tail -n 5 "$WORK/late.err.log")"
pass "register_timeout_ms passed: the job ends, naming who came and the key"
touch "$go" # the stopped workers' wrappers may still be looping

# a worker that dies before registering: ps-launch stops the job, not the
# registration window (here an hour)
launch dead 120 --worker /bin/false --set cluster.register_timeout_ms=3600000 \
	--set cluster.heartbeat_timeout_ms=2000 &&
	fail "a job whose workers exited 1 completed"
grep -q "worker #0 (pid [0-9]*) exited with status 1" "$WORK/dead.err.log" ||
	fail "the dead worker is not named: $(tail -n 5 "$WORK/dead.err.log")"
pass "a worker dead before registering stops the job (register_timeout_ms an hour)"
assert_no_leftovers
