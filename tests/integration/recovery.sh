# Recovery: with fault.restarts, ps-launch restarts a job whose server or
# worker was killed (kill -9, mid-iteration) from the newest complete
# checkpoint, and the job ends exactly as an uninterrupted run: every value
# of the exactness job exact (no update lost, none applied twice), and SGD
# with momentum and AdamW on the servers bit-identical. Without ps-launch's restarts, a dead node
# fails the job and the scheduler names the checkpoint to resume from.
source "$(dirname "$0")/lib.sh" "$@"
SIZES=1000,4097,10,1
RANDOM=${ORDO_TEST_SEED:-11} # the kills' timing: reproducible

completed() { grep -c '^checkpoint: iteration .* complete' "$1"; }
checkpoints_past() { [ "$(completed "$1")" -ge "$2" ]; }

# kill_after NAME CHECKPOINTS ROLE: waits until CHECKPOINTS more
# checkpoints are complete (training goes on meanwhile: the kill lands
# mid-iteration, maybe mid-write), then kills a random process of ROLE
# (server or worker) with SIGKILL. Sets VICTIM.
kill_after() {
	local name=$1 want=$2 role=$3 log=$WORK/$1.out.log pids prog
	local before
	before=$(completed "$log")
	poll_until 300 checkpoints_past "$log" $((before + want)) ||
		fail "$name: $want checkpoints never completed"
	prog="ps-server"
	[ "$role" = worker ] && prog="(ps-worker|exact_worker)"
	pids=($(pgrep -f "^[^ ]*$prog .*$WORK/" || true))
	[ ${#pids[@]} -gt 0 ] || fail "$name: no $role process found"
	VICTIM=${pids[$(((RANDOM >> 3) % ${#pids[@]}))]}
	echo "$name: killing $role pid $VICTIM (one of ${#pids[@]}: ${pids[*]})"
	kill -9 "$VICTIM"
}

# restarted NAME RESTARTS: ps-launch said what died and what it resumed from.
restarted() {
	grep -q "^ps-launch: .* (pid $VICTIM) killed by signal 9; restart 1 of $2 from checkpoint .*/ckpt-[0-9]* (iteration [0-9]*)$" \
		"$WORK/$1.err.log" || fail "$1: no recovery line for pid $VICTIM"
	grep "^ps-launch: .* restart 1 of" "$WORK/$1.err.log"
}

# 1. The exactness job, a server then a worker killed, several seeds.
for round in 1 2 3; do
	for role in server worker; do
		name=exact-$role-$round
		EXACT_WORKER_SIZES=$SIZES start_job "$name" \
			--worker "$TOOLS/exact_worker" --set train.lr=1 \
			--set train.momentum=0 --set cluster.servers=3 \
			--set scheduling.partition_size=1K \
			--set train.iterations=400 --set checkpoint.every=20 \
			--set checkpoint.dir="$WORK/$name" --set fault.restarts=2
		job=$JOB_PID
		kill_after "$name" $((1 + RANDOM % 3)) $role
		wait $job || fail "$name: recovered job exited $?"
		restarted "$name" 2
		n=$(grep -c "^exact: .* 0 wrong$" "$WORK/$name.out.log")
		[ "$n" -eq 2 ] || fail "$name: $n of 2 workers exact"
		grep -q "^exact: .* [1-9][0-9]* wrong$" "$WORK/$name.out.log" &&
			fail "$name: inexact values"
		pass "$name: $role pid $VICTIM killed, recovered, every value exact"
	done
done

# 2. The servers' optimizer state through a kill: killed and recovered =
#    uninterrupted, bit for bit. SGD with momentum (the velocity), and
#    AdamW (both moments in the checkpoints).
# same_as_straight NAME SETS...: an uninterrupted run and one whose
# server is killed, with the same settings, end with the same parameters
same_as_straight() {
	local name=$1
	shift
	launch "straight-$name" 300 "$@" --set train.iterations=150 \
		--set train.dump_params="$WORK/straight-$name.params" ||
		fail "$name: uninterrupted run exited $?"
	start_job "$name" "$@" --set train.iterations=150 \
		--set train.dump_params="$WORK/$name.params" \
		--set checkpoint.dir="$WORK/$name" --set checkpoint.every=10 \
		--set fault.restarts=1
	local job=$JOB_PID
	kill_after "$name" 2 server
	wait $job || fail "$name: recovered job exited $?"
	restarted "$name" 1
	cmp -s "$WORK/straight-$name.params" "$WORK/$name.params" ||
		fail "$name: recovered parameters differ from the uninterrupted run's"
	pass "$name: server killed, recovered, parameters identical to an uninterrupted run"
}
same_as_straight momentum --set train.momentum=0.9 --set train.lr=0.05
same_as_straight adamw --set server.optimizer=adamw --set train.lr=0.01 \
	--set train.weight_decay=0.01

# 3. Asynchronous mode: a server killed, recovered; every partition ends
#    at workers x iterations updates (every push applied exactly once).
#    (baseline: a partition per tensor, so that both servers hold some)
start_job async --set train.mode=async --set train.lr=0.05 \
	--set scheduling.preset=baseline --set train.iterations=300 --set checkpoint.dir="$WORK/async" \
	--set checkpoint.every=10 --set fault.restarts=1
job=$JOB_PID
kill_after async 2 server
wait $job || fail "async: recovered job exited $?"
restarted async 1
n=$(grep -c 'server [01]\] info: partitions at versions 600\.\.600$' "$WORK/async.err.log")
none=$(grep -c 'server [01]\] info: partitions at versions: it holds none$' "$WORK/async.err.log")
[ "$n" -ge 1 ] && [ $((n + none)) -eq 2 ] || fail "async: $n of 2 servers at 600 updates: $(grep 'partitions at' "$WORK/async.err.log")"
pass "async: server killed, recovered, every partition at 2 x 300 updates"

# 4. Restarts run out: the job fails, saying so.
EXACT_WORKER_SIZES=$SIZES start_job twice --worker "$TOOLS/exact_worker" \
	--set train.lr=1 --set train.momentum=0 --set train.iterations=1000000 \
	--set checkpoint.every=20 --set checkpoint.dir="$WORK/twice" \
	--set fault.restarts=1
job=$JOB_PID
kill_after twice 1 worker
first=$VICTIM
wait_for "$WORK/twice.err.log" "restart 1 of 1"
kill_after twice 1 worker
wait $job
st=$?
assert_job_ended twice $st "restarts used up"
[ $st -ne 0 ] || fail "the job exited 0 after its one restart was used up"
grep -q "(pid $VICTIM) exited with status\|(pid $VICTIM) killed" "$WORK/twice.err.log" ||
	fail "the second death is not reported"
grep -q "restart 2 of" "$WORK/twice.err.log" && fail "restarted more than fault.restarts"
pass "fault.restarts = 1: worker $first recovered, worker $VICTIM's death ends the job"

# 5. No ps-launch restarts (other launchers): the job fails and the
#    scheduler names the checkpoint to resume from.
start_job across --set train.iterations=1000000 --set checkpoint.every=5 \
	--set checkpoint.dir="$WORK/across"
job=$JOB_PID
kill_after across 1 worker
wait $job
st=$?
assert_job_ended across $st "no restarts"
[ $st -ne 0 ] || fail "the job exited 0 after a worker died"
grep -q "scheduler\] error: to resume, start the job again with --set checkpoint.resume=$WORK/across/ckpt-[0-9]* (iteration [0-9]*) or checkpoint.resume=latest" \
	"$WORK/across.err.log" || fail "the scheduler did not name the checkpoint"
pass "without restarts: the job fails and names the checkpoint to resume from"
assert_no_leftovers
