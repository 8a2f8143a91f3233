# Limits on what a peer can make a node do (README "Security and
# limits"), each sent to a running job, which must finish with every value
# exact:
#  1. A frame larger than transport.max_message, to the scheduler and to
#     every server while the job runs: each drops the connection (ZeroMQ's
#     ZMQ_MAXMSGSIZE, seen by fuzz_sender's socket monitor) before
#     allocating it. Then forged messages of the running job (its job id,
#     senders 0-4): acknowledgements, CREDITs of 1 TiB, PARAMS and PUSHes
#     that would enlarge credit windows or change values if believed; each
#     node drops them (the sender's transport id is not that node's).
#  2. A flood before the WELCOME: a server that registered but is not
#     welcomed yet (the workers are not started) receives 64 well-formed
#     PUSHes of 256 KiB. With cluster.early_bytes_max = 4M it keeps at most
#     15 of them (the byte bound, not the 4096-message one) and drops the
#     rest as they arrive, saying so; the job then starts and is exact.
#  3. In the same registration, a well-formed REGISTER from a second server
#     (cluster.servers = 1: one too many) that says it listens where nobody
#     does: refused and logged without connecting back, so the scheduler
#     is never held (its connect_timeout_ms is an hour here: waiting on
#     that endpoint would hang the test until its guard) and the job goes
#     on.
source "$(dirname "$0")/lib.sh" "$@"
# What a stranger's messages can do once they reach a node: in
# security.mode = none (in the default, a job's secret keeps them out at
# the handshake: security.sh)
export ORDO_SECURITY_MODE=none

# ---- 1. oversized frames to a running job
big=$WORK/big-sent
EXACT_WORKER_SIZES=1000,4097 EXACT_WORKER_HOLD=$big start_job big \
	--worker "$TOOLS/exact_worker" --set train.iterations=20 \
	--set train.lr=1 --set train.momentum=0 \
	--set transport.max_message=2M
job=$JOB_PID
wait_for "$WORK/big.err.log" 'server 0\] info: joined job'
wait_for "$WORK/big.err.log" 'server 1\] info: joined job'
eps=$(grep -E '\[ordo (scheduler|server)\] info: .*listening on tcp://' "$WORK/big.err.log" |
	grep -o 'tcp://[0-9.:]*' | sort -u)
[ "$(echo "$eps" | wc -l)" -eq 3 ] || fail "endpoints not found: $eps"
for ep in $eps; do
	"$TOOLS/fuzz_sender" "$ep" big $((3 << 20)) >>"$WORK/big-sender.log" 2>&1 ||
		{ cat "$WORK/big-sender.log"; fail "$ep accepted a 3 MiB frame (transport.max_message = 2M)"; }
done
jobid=$(grep -o 'scheduler\] info: job [0-9a-f]*' "$WORK/big.err.log" | awk '{print $NF}')
[ -n "$jobid" ] || fail "no job id in the log"
seed=1
for ep in $eps; do
	"$TOOLS/fuzz_sender" "$ep" forge "$jobid" 300 $seed >>"$WORK/forge.log" 2>&1 ||
		fail "fuzz_sender forge could not run against $ep"
	seed=$((seed + 1))
done
for who in scheduler "server 0" "server 1"; do
	wait_for "$WORK/big.err.log" "$who\] warning: dropped .*\(claims to come from node [0-4], which did not send it\|wrong job, sender identity or length\)"
done
touch "$big"
assert_job_exact $job big "oversized frames" "the oversized frames"
pass "3 MiB frames to the scheduler and both servers (max_message 2M): connections dropped; 900 forged acks, credits, PARAMS, PUSHes and TIMINGS of the job dropped; job exact"

# ---- 2. a flood before the WELCOME
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
args=(--config "$JOB" --set cluster.scheduler_port="$port"
	--set cluster.servers=1 --set cluster.early_bytes_max=4M
	--set cluster.connect_timeout_ms=3600000
	--set train.iterations=5 --set train.lr=1 --set train.momentum=0)
"$BUILD/ps-scheduler" "${args[@]}" >"$WORK/early-sched.out.log" 2>"$WORK/early-sched.err.log" &
sched=$!
"$BUILD/ps-server" "${args[@]}" >"$WORK/early-server.out.log" 2>"$WORK/early-server.err.log" &
server=$!
wait_for "$WORK/early-server.err.log" 'info: listening on tcp://'
wait_for "$WORK/early-sched.err.log" 'registered server 0:'
ep=$(grep -o 'listening on tcp://[0-9.:]*' "$WORK/early-server.err.log" | grep -o 'tcp://.*')
sched_ep=tcp://127.0.0.1:$port
"$TOOLS/fuzz_sender" "$sched_ep" register server tcp://127.0.0.1:1 >"$WORK/register.log" 2>&1 ||
	fail "fuzz_sender register failed: $(cat "$WORK/register.log")"
wait_for "$WORK/early-sched.err.log" "refusing a node: .*server pid 99999 on intruder is one too many"
"$TOOLS/fuzz_sender" "$ep" flood 64 $((256 << 10)) >"$WORK/flood.log" 2>&1 ||
	fail "fuzz_sender flood failed: $(cat "$WORK/flood.log")"
# the server drops what is beyond the bound as it arrives (the first 20
# drops are each logged): 20 x 256 KiB are more than 4 MiB on their own
wait_for "$WORK/early-server.err.log" '(20 dropped so far)'
grep -q "joined job" "$WORK/early-server.err.log" && fail "the server was welcomed before the workers started"
pids=()
for r in 0 1; do
	EXACT_WORKER_SIZES=1000,4097 "$TOOLS/exact_worker" "${args[@]}" \
		>"$WORK/early-w$r.out.log" 2>"$WORK/early-w$r.err.log" &
	pids+=($!)
done
for p in "${pids[@]}" $server $sched; do
	wait "$p" || fail "a process of the flooded job exited $? (logs above)"
done
n=$(cat "$WORK"/early-w*.out.log | grep -c "^exact: .* 0 wrong$")
[ "$n" -eq 2 ] || fail "$n of 2 workers exact after the flood"
line=$(grep "before its WELCOME beyond the bounds" "$WORK/early-server.err.log") ||
	fail "the server did not report the messages it dropped before its WELCOME"
dropped=$(sed -E 's/.*error: ([0-9]+) message.*/\1/' <<<"$line")
[ "$dropped" -ge 20 ] || fail "only $dropped of 64 dropped: the 4 MiB bound was not applied ($line)"
pass "64 x 256 KiB before the WELCOME: $dropped dropped (cluster.early_bytes_max = 4M), job exact"
pass "an extra server's REGISTER with an unreachable endpoint: refused without blocking the scheduler, job exact"
assert_no_leftovers
