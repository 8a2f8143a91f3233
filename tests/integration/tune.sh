# ps-tune (docs/tune.md) on real jobs on loopback, with the exactness
# worker: trials that change the partition size (checkpoint and restart)
# and trials that change only the credit (live), a job that fails during a
# trial, a launcher of the user's (--launcher), the sim backend, and bad
# input. Every job's values are checked
# against the closed form (tests/tools/exact_worker.c), so an update lost
# or applied twice across a stop, a restart or a credit change fails here.
source "$(dirname "$0")/lib.sh" "$@"
SIZES=1000,4097,10,1
EXACT=(--worker "$TOOLS/exact_worker" --set train.lr=1
	--set train.momentum=0 --set tune.warmup_iterations=1
	--set tune.measure_iterations=3)

# start_tune NAME [args...]: ps-tune in the background (TUNE_PID), under a
# hang guard only.
start_tune() {
	local name=$1
	shift
	EXACT_WORKER_SIZES=$SIZES timeout --kill-after=5 600 "$BUILD/ps-tune" \
		--config "$JOB" "$@" >"$WORK/$name.out.log" \
		2>"$WORK/$name.err.log" &
	TUNE_PID=$!
}

trials_in() { [ "$(($(wc -l <"$1" 2>/dev/null || echo 0) - 1))" -ge "$2" ]; }
# wait_trials NAME N: until tune.csv has N trials (fails if ps-tune ended)
trials_or_end() { trials_in "$1" "$2" || ! kill -0 "$TUNE_PID" 2>/dev/null; }
wait_trials() {
	poll_until 600 trials_or_end "$WORK/$1/tune.csv" "$2" &&
		trials_in "$WORK/$1/tune.csv" "$2" ||
		fail "$1: $2 trials never recorded (ps-tune: $(tail -n 3 \
			"$WORK/$1.err.log"))"
}
col() { awk -F, -v c="$2" 'NR > 1 {print $c}' "$1"; } # tune.csv column

# exact_chain NAME LAST: every exactness line of the run says 0 wrong, and
# worker 0's jobs cover 1..LAST with no gap and no overlap: each job
# started where the one before stopped.
exact_chain() {
	local name=$1 last=$2 next=1 a b
	grep -q "^exact: .* [1-9][0-9]* wrong$" "$WORK/$name.out.log" &&
		fail "$name: inexact values"
	[ "$(grep -c "^exact: .* 0 wrong$" "$WORK/$name.out.log")" -ge 2 ] ||
		fail "$name: no exactness lines"
	while read -r a b; do
		[ "$a" -eq "$next" ] ||
			fail "$name: a job started at $a, expected $next"
		next=$((b + 1))
	done < <(sed -n 's/^exact: worker 0 of 2: .* over iterations \([0-9]*\)\.\.\([0-9]*\), 0 wrong$/\1 \2/p' \
		"$WORK/$name.out.log" | sort -n)
	[ "$next" -eq $((last + 1)) ] ||
		fail "$name: the jobs ended at $((next - 1)), expected $last"
}

# 1. Three trials, the partition size changed twice (checkpoint, restart),
# then training on with the best pair to the end.
name=restart
start_tune $name "${EXACT[@]}" --set train.iterations=400 \
	--set tune.trials=3 --set tune.partition_min=1K \
	--set tune.partition_max=16K --set tune.credit_min=1K \
	--set tune.credit_max=64K --set output.dir="$WORK/$name"
export EXACT_WORKER_HOLD=$WORK/$name.go # the last iteration waits for it
wait_trials $name 3
touch "$EXACT_WORKER_HOLD"
wait $TUNE_PID || fail "$name: ps-tune exited $?"
unset EXACT_WORKER_HOLD
csv=$WORK/$name/tune.csv
[ "$(col "$csv" 4 | sort -u)" = ok ] || fail "$name: a trial failed"
[ "$(col "$csv" 10 | tr '\n' ' ')" = "start restart restart " ] ||
	fail "$name: trials were $(col "$csv" 10 | tr '\n' ' ')"
mapfile -t part < <(col "$csv" 2)
[ "${part[0]}" != "${part[1]}" ] && [ "${part[1]}" != "${part[2]}" ] ||
	fail "$name: partition sizes ${part[*]} did not change twice"
awk -F, 'NR > 1 && !($5 > 0) {exit 1}' "$csv" ||
	fail "$name: a trial without samples/s"
exact_chain $name 400
grep -q "^partition_size = " "$WORK/$name/best.ini" &&
	grep -q "^credit_size = " "$WORK/$name/best.ini" ||
	fail "$name: best.ini lacks the pair"
if command -v gnuplot >/dev/null; then
	[ -s "$WORK/$name/tune.png" ] || fail "$name: no tune.png"
fi
grep -q "^ps-tune: the job trained on with the best pair" \
	"$WORK/$name.out.log" || fail "$name: did not train on"
grep -q "^ps-tune: best: partition .*, credit .* ([0-9.]* samples/s, the mean of [0-9]* trial(s) of the pair, first trial [0-9]*)" \
	"$WORK/$name.out.log" || fail "$name: the best line does not give the pair's mean: $(grep '^ps-tune: best' "$WORK/$name.out.log")"
grep -q "^; model: .* samples/s (sd .*); measured [0-9]* time(s) (first at trial [0-9]*): mean [0-9.]* samples/s" \
	"$WORK/$name/best.ini" || fail "$name: best.ini does not give the pair's mean: $(head -n 3 "$WORK/$name/best.ini")"
pass "$name: partition ${part[*]}: two restarts, every value exact over 1..400"

# 2. Credit-only trials (the partition fixed): live changes at iteration
# boundaries, one job, then a stop at a checkpoint that a later job
# resumes to the end.
name=credit
export EXACT_WORKER_HOLD=$WORK/$name.go
start_tune $name "${EXACT[@]}" --set train.iterations=400 \
	--set tune.trials=3 --set tune.partition_min=4K \
	--set tune.partition_max=4K --set tune.credit_min=4K \
	--set tune.credit_max=64K --set tune.then=stop \
	--set output.dir="$WORK/$name"
wait $TUNE_PID || fail "$name: ps-tune exited $?"
csv=$WORK/$name/tune.csv
[ "$(col "$csv" 10 | tr '\n' ' ')" = "start credit credit " ] ||
	fail "$name: trials were $(col "$csv" 10 | tr '\n' ' ')"
[ "$(grep -c "tuner: credit window [0-9]* bytes from iteration" \
	"$WORK/$name.err.log")" -eq 2 ] || fail "$name: not 2 live changes"
[ "$(grep -c "exact-worker .* credit: window" "$WORK/$name.err.log")" -eq 4 ] ||
	fail "$name: the workers did not take 2 changes each"
stopped=$(sed -n 's/^ps-tune: the job stopped at iteration \([0-9]*\),.*/\1/p' \
	"$WORK/$name.out.log")
[ -n "$stopped" ] || fail "$name: no stop at a checkpoint"
[ -d "$WORK/$name/checkpoints/ckpt-$(printf %012d "$stopped")" ] ||
	fail "$name: no checkpoint at iteration $stopped"
touch "$EXACT_WORKER_HOLD"
EXACT_WORKER_SIZES=$SIZES launch $name-rest 300 "${EXACT[@]}" \
	--set train.iterations=400 --set checkpoint.resume=latest \
	--set checkpoint.dir="$WORK/$name/checkpoints" ||
	fail "$name: the resumed job failed"
unset EXACT_WORKER_HOLD
cat "$WORK/$name-rest.out.log" >>"$WORK/$name.out.log"
exact_chain $name 400
pass "$name: 2 live credit changes, stopped at $stopped, resumed exactly to 400"

# 3. A worker killed during trial 2: the trial is recorded as failed and
# the tuner goes on from the newest checkpoint. Trial 1 is over by
# iteration 4; iteration 9 waits for the go file, so trial 2 (which needs
# at least iteration 10) cannot be over when the kill lands.
name=failure
export EXACT_WORKER_HOLD=$WORK/$name.go EXACT_WORKER_HOLD_AT=9
start_tune $name "${EXACT[@]}" --set train.iterations=400 \
	--set tune.trials=3 --set tune.partition_min=4K \
	--set tune.partition_max=4K --set tune.credit_min=4K \
	--set tune.credit_max=64K --set checkpoint.every=5 \
	--set checkpoint.dir="$WORK/$name/checkpoints" \
	--set output.dir="$WORK/$name"
wait_trials $name 1
victim=$(pgrep -f "^[^ ]*exact_worker .*$WORK/" | head -n 1)
[ -n "$victim" ] || fail "$name: no worker to kill"
kill -9 "$victim"
touch "$EXACT_WORKER_HOLD"
wait $TUNE_PID || fail "$name: ps-tune exited $?"
unset EXACT_WORKER_HOLD EXACT_WORKER_HOLD_AT
csv=$WORK/$name/tune.csv
[ "$(col "$csv" 4 | tr '\n' ' ')" = "ok failed ok " ] ||
	fail "$name: trials were $(col "$csv" 4 | tr '\n' ' ')"
grep -q "^2,.*,failed,.*the job failed during the trial" "$csv" ||
	fail "$name: trial 2's note does not say why"
grep -q "^ps-tune: trial 2/3: .*failed: the job failed during the trial" \
	"$WORK/$name.out.log" || fail "$name: no message for the failure"
[ "$(col "$csv" 10 | sed -n 3p)" = restart ] ||
	fail "$name: trial 3 did not restart the job"
grep -q "resumed .* partitions at iteration [1-9]" "$WORK/$name.err.log" ||
	fail "$name: not resumed from a checkpoint"
grep -q "^exact: .* [1-9][0-9]* wrong$" "$WORK/$name.out.log" &&
	fail "$name: inexact values"
pass "$name: trial 2 failed (worker $victim killed), trial 3 resumed, exact"

# 4. --launcher: a program of the user's starts every job in place of
# ps-launch, with ps-launch's arguments (here a script that notes them and
# runs ps-launch): two trials with two partition sizes, two jobs, exact.
name=launcher
printf '#!/bin/sh\necho "$*" >>"%s"\nexec "%s" "$@"\n' \
	"$WORK/launcher.calls" "$BUILD/ps-launch" >"$WORK/launcher.sh"
chmod +x "$WORK/launcher.sh"
start_tune $name "${EXACT[@]}" --launcher "$WORK/launcher.sh" \
	--set train.iterations=400 --set tune.trials=2 \
	--set tune.partition_min=1K --set tune.partition_max=16K \
	--set tune.credit_min=1K --set tune.credit_max=64K --set tune.then=stop \
	--set output.dir="$WORK/$name"
wait $TUNE_PID || fail "$name: ps-tune exited $?"
csv=$WORK/$name/tune.csv
[ "$(col "$csv" 10 | tr '\n' ' ')" = "start restart " ] ||
	fail "$name: trials were $(col "$csv" 10 | tr '\n' ' ')"
calls=$(cat "$WORK/launcher.calls" 2>/dev/null | wc -l)
[ "$calls" -eq 2 ] || fail "$name: the launcher ran $calls times, not 2"
grep -q -- "--launcher\|--backend" "$WORK/launcher.calls" &&
	fail "$name: ps-tune's own options reached the launcher"
sed -n 2p "$WORK/launcher.calls" | grep -q "tune.endpoint=.*checkpoint.resume=" ||
	fail "$name: the second job was not given the endpoint and the checkpoint"
grep -q "^exact: .* [1-9][0-9]* wrong$" "$WORK/$name.out.log" &&
	fail "$name: inexact values"
[ "$(grep -c "^exact: .* 0 wrong$" "$WORK/$name.out.log")" -eq 4 ] ||
	fail "$name: not two jobs of two exact workers"
pass "$name: two jobs started by the launcher, exact"

# 5. Bad input: each a clear message, nothing started.
bad() { # bad STATUS PATTERN ARGS...: ps-tune fails so, naming the problem
	local want=$1 pattern=$2 st=0
	shift 2
	timeout 120 "$BUILD/ps-tune" --config "$JOB" "$@" >"$WORK/bad.out.log" \
		2>"$WORK/bad.err.log" || st=$?
	[ "$st" -eq "$want" ] || fail "bad input ($*): status $st, not $want"
	grep -q -- "$pattern" "$WORK/bad.err.log" ||
		fail "bad input ($*): no '$pattern' in: $(cat "$WORK/bad.err.log")"
}
bad 2 "tune.trials" --set tune.trials=0
bad 2 "tune.partition_min (8M) is larger than tune.partition_max (1M)" \
	--set tune.partition_min=8M --set tune.partition_max=1M
bad 2 "tune.credit_max (1M) must be at least tune.partition_max (64M)" \
	--set tune.credit_max=1M
bad 2 "'fast' is not a backend" --backend fast
bad 2 "launcher $WORK/none: no executable file" --launcher "$WORK/none"
bad 2 "launcher nosuch-launcher: no executable file of that name in PATH" \
	--launcher nosuch-launcher
bad 2 "backend sim runs none" --launcher "$BUILD/ps-launch" --backend sim
# a launcher whose every job fails: no pair was tuned, so not a success
printf '#!/bin/sh\nexit 3\n' >"$WORK/failing.sh" && chmod +x "$WORK/failing.sh"
bad 1 "every trial failed (tune.csv says why): no pair to train on" \
	--launcher "$WORK/failing.sh" --set tune.trials=2 \
	--set train.iterations=400 --set output.dir="$WORK/bad"
bad 1 "raise train.iterations or lower tune.trials" \
	--set train.iterations=20 --set output.dir="$WORK/bad"
mkdir -p "$WORK/ro" && chmod 555 "$WORK/ro"
if [ "$(id -u)" -ne 0 ]; then # root writes anywhere
	bad 1 "checkpoint.dir $WORK/ro/ck" --set checkpoint.dir="$WORK/ro/ck" \
		--set train.iterations=400 --set output.dir="$WORK/bad"
fi
bad 1 "checkpoint.dir /proc/ordo-tune" --set checkpoint.dir=/proc/ordo-tune \
	--set train.iterations=400 --set output.dir="$WORK/bad"
bad 1 "holds checkpoints (newest: iteration" \
	--set checkpoint.dir="$WORK/credit/checkpoints" \
	--set train.iterations=400 --set output.dir="$WORK/bad"
bad 1 "ps-sim needs model.file" --backend sim --set output.dir="$WORK/bad"
no_process_of "$WORK/job.ini" || fail "bad input left processes"
pass "bad input: each refused with a message"

# 6. The sim backend: a search over ResNet-50 in ps-sim, deterministic.
for run in 1 2; do
	timeout 300 "$BUILD/ps-tune" --backend sim --config "$JOB" \
		--set model.file="$SRC/conf/models/resnet50.json" \
		--set worker.mode=replay --set metrics.bandwidth_gbps=1 \
		--set link.sharing=fair --set scheduling.preset=ordo \
		--set tune.trials=6 --set output.dir="$WORK/sim$run" \
		>"$WORK/sim$run.out.log" 2>"$WORK/sim$run.err.log" ||
		fail "sim backend: exit $?"
done
trials_in "$WORK/sim1/tune.csv" 6 || fail "sim backend: not 6 trials"
cmp -s "$WORK/sim1/tune.csv" "$WORK/sim2/tune.csv" ||
	fail "sim backend: two runs differ"
[ "$(col "$WORK/sim1/tune.csv" 10 | sort -u)" = sim ] ||
	fail "sim backend: trials not from ps-sim"
pass "sim backend: 6 trials, the same twice"
assert_no_leftovers
