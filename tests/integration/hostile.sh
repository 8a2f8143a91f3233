# One message from a stranger, in the default security.mode = none, must not
# take a job down nor make a node hold more than the bound docs/security.md
# states. Each attack comes from its own process (fuzz_sender bomb), each
# refusal must be logged by its kind, and each attacked node's peak RSS
# (VmHWM, read once the refusal is logged) must stay within its baseline
# plus what the attack sent plus SLACK_MB (the sanitizers' shadow and
# quarantine, the allocator's rounding):
#  1. A running 2 x 2 job: the scheduler gets a header frame of 64 MiB, a
#     msgpack array of 1s (refused before it is decoded: a header is at
#     most 96 bytes); each server gets one message of 2048 frames of
#     64 KiB (ZeroMQ takes a multipart message whole before the node sees
#     it: the node holds the 128 MiB, then drops the message for its frame
#     count). The job finishes exact.
#  2. A job in registration (the scheduler and one server started by hand,
#     the workers not yet): the scheduler gets a REGISTER whose body is a
#     64 MiB array of 1s (refused before msgpack-c allocates a 24-byte
#     object per element: more objects than a REGISTER holds); the server,
#     waiting for its WELCOME, gets a WELCOME with the same body that does
#     not name its transport id (dropped undecoded: before, one malformed
#     WELCOME ended the server). A worker starts; a worker declaring other
#     tensors is refused and told why (an ABORT: it exits naming the
#     tensors) while the job goes on (before, it aborted the job); the
#     second worker starts; the job is exact.
#  3. A job tuned through tune.endpoint: a member (it knows the job id)
#     answers the scheduler's TUNE_HELLO before the tuner, without the
#     nonce that only the process at tune.endpoint was sent, and sends a
#     CREDIT: both dropped; the tuner's answer attaches it and its CREDIT
#     is applied; the job is exact.
#  4. Workers that say they begin iteration 2^64 - 1 (PROGRESS): dropped,
#     logged with the iteration; the job is exact.
source "$(dirname "$0")/lib.sh" "$@"
# What a stranger's messages can do once they reach a node: in
# security.mode = none (in the default, a job's secret keeps them out at
# the handshake: security.sh)
export ORDO_SECURITY_MODE=none

SLACK_MB=96
MiB=$((1 << 20))

# vm_kb PID FIELD: a /proc/PID/status field (VmHWM, VmRSS) in kB.
vm_kb() {
	awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"
}

# assert_peak PID WHO BASE_KB SENT_BYTES: the process's peak RSS is at most
# its baseline plus what was sent to it plus SLACK_MB.
assert_peak() {
	local pid=$1 who=$2 base=$3 sent=$4 peak bound
	peak=$(vm_kb "$pid" VmHWM) || fail "$who (pid $pid) is gone"
	bound=$((base + sent / 1024 + SLACK_MB * 1024))
	[ "$peak" -le "$bound" ] ||
		fail "$who: peak RSS $((peak / 1024)) MiB, above its bound $((bound / 1024)) MiB (baseline $((base / 1024)) MiB + $((sent / MiB)) MiB sent + $SLACK_MB MiB)"
	echo "$who: peak RSS $((peak / 1024)) MiB (baseline $((base / 1024)) MiB, $((sent / MiB)) MiB sent, bound $((bound / 1024)) MiB)"
}

# ---- 1. a running job
hold=$WORK/hold
start_held_job run "$hold"
job=$JOB_PID
sched=$(pgrep -f "ps-scheduler --config $JOB") || fail "no scheduler process"
servers=$(pgrep -f "ps-server --config $JOB")
[ "$(wc -w <<<"$servers")" -eq 2 ] || fail "want 2 server processes, got: $servers"
sched_ep=$(grep -o 'scheduler\] info: job .*listening on tcp://[0-9.:]*' "$WORK/run.err.log" | grep -o 'tcp://.*')
server_eps=$(grep -o 'server\] info: listening on tcp://[0-9.:]*' "$WORK/run.err.log" | grep -o 'tcp://.*')
[ -n "$sched_ep" ] && [ "$(wc -w <<<"$server_eps")" -eq 2 ] ||
	fail "endpoints not found: scheduler '$sched_ep', servers '$server_eps'"
declare -A base
for p in $sched $servers; do
	base[$p]=$(vm_kb "$p" VmRSS)
done

header=$((64 * MiB - 64))
frames=2048 frame=$((64 << 10))
"$TOOLS/fuzz_sender" "$sched_ep" bomb header $header >"$WORK/bomb-header.log" 2>&1 ||
	fail "fuzz_sender bomb header: $(cat "$WORK/bomb-header.log")"
for ep in $server_eps; do
	"$TOOLS/fuzz_sender" "$ep" bomb frames $frame $frames >>"$WORK/bomb-frames.log" 2>&1 ||
		fail "fuzz_sender bomb frames: $(cat "$WORK/bomb-frames.log")"
done
wait_for "$WORK/run.err.log" "scheduler\] warning: dropped message from transport id [0-9a-f]*: header: $header bytes, more than a header's 96"
poll_until 120 eval '[ "$(grep -c "server [01]\] warning: tcp: dropped a message of $((frames + 2)) frames from node" "$WORK/run.err.log")" -eq 2 ]' ||
	fail "the servers did not both log the $((frames + 2))-frame message they dropped"
assert_peak "$sched" scheduler "${base[$sched]}" $header
for p in $servers; do
	assert_peak "$p" "server pid $p" "${base[$p]}" $((frames * frame))
done
touch "$hold"
assert_job_exact $job run "the running job" "the attacks"
pass "a 64 MiB header to the scheduler and $frames x 64 KiB frames in one message to each server: refused, logged, peak RSS bounded, job exact"

# ---- 2. a job in registration: bombs, and a worker of other tensors
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
args=(--config "$JOB" --set cluster.scheduler_port="$port"
	--set cluster.servers=1 --set cluster.connect_timeout_ms=3600000
	--set train.iterations=5 --set train.lr=1 --set train.momentum=0)
"$BUILD/ps-scheduler" "${args[@]}" >"$WORK/reg-sched.out.log" 2>"$WORK/reg-sched.err.log" &
sched=$!
"$BUILD/ps-server" "${args[@]}" >"$WORK/reg-server.out.log" 2>"$WORK/reg-server.err.log" &
server=$!
wait_for "$WORK/reg-server.err.log" 'info: listening on tcp://'
wait_for "$WORK/reg-sched.err.log" 'registered server 0:'
ep=$(grep -o 'listening on tcp://[0-9.:]*' "$WORK/reg-server.err.log" | grep -o 'tcp://.*')
sched_base=$(vm_kb $sched VmRSS)
server_base=$(vm_kb $server VmRSS)
body=$((64 * MiB - 64))
"$TOOLS/fuzz_sender" "tcp://127.0.0.1:$port" bomb register $body >"$WORK/bomb-register.log" 2>&1 ||
	fail "fuzz_sender bomb register: $(cat "$WORK/bomb-register.log")"
"$TOOLS/fuzz_sender" "$ep" bomb welcome $body >"$WORK/bomb-welcome.log" 2>&1 ||
	fail "fuzz_sender bomb welcome: $(cat "$WORK/bomb-welcome.log")"
wait_for "$WORK/reg-sched.err.log" "warning: dropped REGISTER"
assert_peak $sched "scheduler (registration)" "$sched_base" $body
grep -q "warning: dropped REGISTER from transport id [0-9a-f]*: register: an array at offset 5 claims $((body - 5)) elements: more than the [0-9]* objects in all this message can hold" "$WORK/reg-sched.err.log" ||
	fail "the REGISTER was not refused for its object count: $(grep 'dropped REGISTER' "$WORK/reg-sched.err.log")"
# the server drops the WELCOME, or (were it taken) fails
welcome_seen() {
	grep -qs "warning: dropped message before WELCOME" "$WORK/reg-server.err.log" ||
		! kill -0 $server 2>/dev/null
}
poll_until 120 welcome_seen || fail "waited 120 s for the server to drop the WELCOME"
kill -0 $server 2>/dev/null || fail "the server ended on a stranger's WELCOME"
grep -q "warning: dropped message before WELCOME from transport id [0-9a-f]*: WELCOME addressed to transport id [0-9a-f]*, not to this node" "$WORK/reg-server.err.log" ||
	fail "the WELCOME was not refused for its address"
assert_peak $server "server (before its WELCOME)" "$server_base" $body
# a worker of other tensors between the two that fit: refused and told,
# the job goes on
EXACT_WORKER_SIZES=1000,4097 "$TOOLS/exact_worker" "${args[@]}" \
	>"$WORK/reg-w0.out.log" 2>"$WORK/reg-w0.err.log" &
w0=$!
wait_for "$WORK/reg-sched.err.log" 'registered worker'
EXACT_WORKER_SIZES=1000 "$TOOLS/exact_worker" "${args[@]}" \
	>"$WORK/reg-other.out.log" 2>"$WORK/reg-other.err.log" &&
	fail "a worker of other tensors joined the job"
grep -q "error: the scheduler refused this node: worker pid [0-9]* on .* declares 1 tensors, the first worker to register declared 2" \
	"$WORK/reg-other.err.log" || fail "the worker of other tensors was not told why: $(tail -n 3 "$WORK/reg-other.err.log")"
grep -q "error: refusing a node: worker pid [0-9]* on .* declares 1 tensors" "$WORK/reg-sched.err.log" ||
	fail "the scheduler did not log the refusal"
kill -0 $sched 2>/dev/null || fail "the scheduler ended on a worker of other tensors"
EXACT_WORKER_SIZES=1000,4097 "$TOOLS/exact_worker" "${args[@]}" \
	>"$WORK/reg-w1.out.log" 2>"$WORK/reg-w1.err.log" &
w1=$!
for p in $w0 $w1 $server $sched; do
	wait "$p" || fail "a process of the attacked job exited $? (logs above)"
done
n=$(cat "$WORK"/reg-w*.out.log | grep -c "^exact: .* 0 wrong$")
[ "$n" -eq 2 ] || fail "$n of 2 workers exact after the attacks in registration"
pass "a 64 MiB REGISTER body to the scheduler and a 64 MiB WELCOME not addressed to the server, in registration: refused, logged, peak RSS bounded; a worker of other tensors refused and told why; job exact"

# ---- 3. a forged tuner
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
tuner_ep="tcp://127.0.0.1:$port"
forged=393216 genuine=262144
mkfifo "$WORK/tuner.in"
"$TOOLS/fuzz_sender" "$tuner_ep" tuner $forged $genuine <"$WORK/tuner.in" \
	>"$WORK/tuner.log" 2>&1 &
tuner=$!
exec 7>"$WORK/tuner.in" # the tuner's stdin, open until the go
wait_for "$WORK/tuner.log" "tuner: listening on"
hold=$WORK/hold-tuned
EXACT_WORKER_SIZES=1000,4097 EXACT_WORKER_HOLD=$hold start_job tuned \
	--worker "$TOOLS/exact_worker" --set train.iterations=20 \
	--set train.lr=1 --set train.momentum=0 \
	--set tune.endpoint="$tuner_ep" \
	--set scheduling.partition_size=64K --set scheduling.credit_size=128K
job=$JOB_PID
wait_for "$WORK/tuner.log" "tuner: forged TUNE_HELLO and CREDIT $forged sent"
wait_for "$WORK/tuned.err.log" "scheduler\] warning: dropped TUNE_HELLO: not from a node of this job or its tuner"
wait_for "$WORK/tuned.err.log" "scheduler\] warning: dropped CREDIT: wrong job, sender identity or length"
echo go >&7
exec 7>&-
wait "$tuner" || fail "the tuner failed: $(cat "$WORK/tuner.log")"
wait_for "$WORK/tuned.err.log" "scheduler\] info: tuner attached"
wait_for "$WORK/tuned.err.log" "scheduler\] info: tuner: credit window $genuine bytes"
! grep -q "credit window $forged bytes" "$WORK/tuned.err.log" ||
	fail "the forged CREDIT was applied"
[ "$(grep -c "info: tuner attached" "$WORK/tuned.err.log")" -eq 1 ] ||
	fail "the tuner attached more than once"
touch "$hold"
assert_job_exact $job tuned "the tuned job" "a forged tuner"
pass "a member's TUNE_HELLO without the scheduler's nonce, and its CREDIT: dropped; the tuner's attached and its CREDIT applied; job exact"

# ---- 4. a PROGRESS no job reaches
EXACT_WORKER_SIZES=1000,4097 EXACT_WORKER_LIE_PROGRESS=18446744073709551615 \
	start_job lying --worker "$TOOLS/exact_worker" --set train.iterations=20 \
	--set train.lr=1 --set train.momentum=0
assert_job_exact $JOB_PID lying "the job with lying workers" "a PROGRESS of 2^64 - 1"
grep -q "scheduler\] warning: dropped PROGRESS: iteration 18446744073709551615 beyond train.iterations (20)" \
	"$WORK/lying.err.log" || fail "the PROGRESS of 2^64 - 1 was not dropped"
pass "a PROGRESS of iteration 2^64 - 1: dropped, logged; job exact"
assert_no_leftovers
