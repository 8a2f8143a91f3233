# security.mode = sealed (transport/seal.h): a job whose every connection
# proves it holds the job's secret without sending it, and whose every
# frame is sealed (AES-256-GCM), runs exact at 2 x 2 with two connections
# per peer pair. While it runs, against the scheduler and both servers: a
# stranger without the mechanism (malformed messages, as fuzz.sh sends), a
# peer presenting the job's secret itself (mode secret's handshake: the
# secret in the clear does not admit) and a proof made with another
# secret, each refused at the handshake and logged, nothing of theirs
# dropped by a decoder. A holder of the secret (read from a node, as a
# member could) is admitted: its sealed messages open and the protocol
# drops them; its altered, replayed and unsealed frames are dropped by
# the seal before any decoding, each logged by kind. Then a job whose
# partitions are sealed in several chunks, on helper threads: exact.
# (Over rdma the mode is refused: test_config.)
source "$(dirname "$0")/lib.sh" "$@"

held=$WORK/sealed-held
start_held_job sealed "$held" --set security.mode=sealed \
	--set transport.connections_per_peer=2
job=$JOB_PID
eps=$EPS
log=$WORK/sealed.err.log
[ "$(grep -c "info: security: peers must prove they hold the job's secret (ORDO_JOB_SECRET), and every frame is sealed (AES-256-GCM)" "$log")" -eq 5 ] ||
	fail "not every node seals: $(grep -m5 'security' "$log")"
sched=$(pgrep -f "ps-scheduler.*$WORK" | head -n 1)
own=$(tr '\0' '\n' </proc/"$sched"/environ | sed -n 's/^ORDO_JOB_SECRET=//p')
[ ${#own} -eq 64 ] || fail "the scheduler has no ORDO_JOB_SECRET"
other=$("$BUILD/ps-keygen" --secret)

seed=1
for ep in $eps; do
	"$TOOLS/fuzz_sender" "$ep" 300 $seed >>"$WORK/stranger.log" 2>&1 ||
		fail "fuzz_sender could not run against $ep"
	"$TOOLS/fuzz_sender" "$ep" secret "$own" 5 $seed >>"$WORK/clear.log" 2>&1 ||
		fail "fuzz_sender secret could not run against $ep"
	"$TOOLS/fuzz_sender" "$ep" sealed "$other" 5 $seed >>"$WORK/other.log" 2>&1 ||
		fail "fuzz_sender sealed could not run against $ep"
	seed=$((seed + 1))
done
[ "$(grep -c 'handshake refused' "$WORK/clear.log")" -eq 3 ] ||
	fail "the job's secret sent in the clear admitted a peer: $(cat "$WORK/clear.log")"
[ "$(grep -c 'handshake refused' "$WORK/other.log")" -eq 3 ] ||
	fail "a proof of another secret admitted a peer: $(cat "$WORK/other.log")"
grep -q "warning: dropped\|warning: tcp: dropped" "$log" &&
	fail "a stranger's message reached a node: $(grep -m3 'dropped' "$log")"
for who in scheduler "server 0" "server 1"; do
	poll_until 60 grep -q "$who\] warning: security: refused a peer connecting to .*: \(it does not present a job secret\|its handshake failed\)" "$log" ||
		fail "$who did not log the peer without the mechanism"
	poll_until 60 grep -q "$who\] warning: security: refused a peer at 127.0.0.1: it did not prove it holds the job's secret (security.mode = sealed) (2 of this kind" "$log" ||
		fail "$who did not log both the secret in the clear and the other secret: $(grep "$who\].*refused" "$log")"
done

# a holder of the secret: admitted, its messages open, the bad ones do not
s0=$(grep -o 'registered server 0: pid [0-9]* on [^,]*, tcp://[0-9.:]*' "$log" | grep -o 'tcp://.*')
[ -n "$s0" ] || fail "server 0's endpoint not found"
"$TOOLS/fuzz_sender" "$s0" sealed "$own" 20 9 >"$WORK/member.log" 2>&1 ||
	fail "fuzz_sender sealed with the job's secret: $(cat "$WORK/member.log")"
grep -q "handshake succeeded" "$WORK/member.log" ||
	fail "a proof of the job's secret was refused: $(cat "$WORK/member.log")"
poll_until 60 grep -q "server 0\] warning: dropped" "$log" ||
	fail "the member's sealed messages never reached server 0's protocol"
what="server 0\] warning: tcp: dropped a message from transport id [0-9a-f]* (key id [0-9a-f]*):"
wait_for "$log" "$what .* (3 so far)"
[ "$(grep -c "$what its frames do not open: altered, or not sealed with this job's secret" "$log")" -eq 2 ] ||
	fail "the altered and the unsealed frame were not both dropped by the seal: $(grep 'tcp: dropped' "$log")"
grep -q "$what a replayed or reordered frame (its counter is not above the last one opened)" "$log" ||
	fail "the replayed frame was not dropped by the seal: $(grep 'tcp: dropped' "$log")"
touch "$held"
assert_job_exact $job sealed "the sealed job" "strangers and a member's bad frames"
pass "sealed job exact with 2 connections per peer pair; a stranger, the secret in the clear and another secret refused at the handshake and logged at the scheduler and both servers; a member's sealed messages open, its altered, replayed and unsealed frames dropped by the seal"


# payloads of several chunks, sealed and opened on the helper threads
EXACT_WORKER_SIZES=600000,1000 launch chunks 300 --worker "$TOOLS/exact_worker" \
	--set security.mode=sealed --set train.iterations=5 --set train.lr=1 \
	--set train.momentum=0 --set scheduling.partition_size=2M ||
	fail "a sealed job of 2 MiB partitions exited $?: $(grep -m3 'error' "$WORK/chunks.err.log")"
[ "$(grep -c "^exact: .* 0 wrong$" "$WORK/chunks.out.log")" -eq 2 ] ||
	fail "a sealed job of 2 MiB partitions is not exact: $(grep '^exact' "$WORK/chunks.out.log")"
grep -q "tcp: dropped" "$WORK/chunks.err.log" &&
	fail "a member's message did not open: $(grep -m3 'tcp: dropped' "$WORK/chunks.err.log")"
pass "sealed job of 2 MiB partitions (8 chunks each) exact"
assert_no_leftovers
