# Bad input on the wire: while an exactness job runs, thousands of
# malformed messages hit the scheduler and every server. They must be
# dropped (logged, counted) and the job must finish with every value exact.
# The workers hold their last iteration until the fuzzing is done
# (EXACT_WORKER_HOLD), so the job is still running then however the
# machine's load shares the cores between the job and the fuzzer.
source "$(dirname "$0")/lib.sh" "$@"
# What a stranger's messages can do once they reach a node: in
# security.mode = none (in the default, a job's secret keeps them out at
# the handshake: security.sh)
export ORDO_SECURITY_MODE=none
fuzzed=$WORK/fuzzed

EXACT_WORKER_SIZES=1000,4097 EXACT_WORKER_HOLD=$fuzzed timeout --kill-after=5 300 \
	"$BUILD/ps-launch" --config "$JOB" --worker "$TOOLS/exact_worker" \
	--set train.iterations=1500 --set train.lr=1 --set train.momentum=0 \
	--set scheduling.partition_size=1K \
	>"$WORK/fuzz.out.log" 2>"$WORK/fuzz.err.log" &
job=$!

# Wait until both servers have joined, then read every endpoint.
wait_for "$WORK/fuzz.err.log" 'server 0\] info: joined job'
wait_for "$WORK/fuzz.err.log" 'server 1\] info: joined job'
sched=$(grep -o 'scheduler\] info: job [0-9a-f]*: listening on tcp://[0-9.:]*' "$WORK/fuzz.err.log" | grep -o 'tcp://.*')
servers=$(grep -B0 'listening on' "$WORK/fuzz.err.log" | grep 'ordo server' | grep -o 'tcp://[0-9.:]*')
[ -n "$sched" ] || fail "no scheduler endpoint in the log"
[ "$(echo "$servers" | wc -l)" -eq 2 ] || fail "server endpoints not found"
seed=1
for ep in $sched $servers; do
	"$TOOLS/fuzz_sender" "$ep" 3000 $seed >>"$WORK/fuzz-sender.log" 2>&1 ||
		fail "fuzz_sender could not run against $ep"
	seed=$((seed + 1))
done
running=0
kill -0 $job 2>/dev/null && running=1
touch "$fuzzed"
wait $job || fail "the job failed after the fuzzing (status $?)"
[ $running -eq 1 ] || fail "the job was no longer running when the fuzzing ended"
n=$(grep -c "^exact: .* 0 wrong$" "$WORK/fuzz.out.log")
[ "$n" -eq 2 ] || fail "$n of 2 workers exact after the fuzzing"
grep -q 'scheduler\] warning: dropped' "$WORK/fuzz.err.log" || fail "the scheduler dropped nothing"
grep -q 'server [01]\] warning: dropped' "$WORK/fuzz.err.log" || fail "no server dropped anything"
pass "9000 malformed messages dropped; all values exact"
assert_no_leftovers
