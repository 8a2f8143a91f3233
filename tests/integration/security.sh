# Authenticated peers (transport/zap.h). The default (security.mode =
# auto under ps-launch: a secret per job): a job whose every connection
# presents the job's secret, and, while it runs, a peer without it
# (malformed messages, as fuzz.sh sends) and a peer with another secret,
# refused at the handshake and logged, nothing of theirs decoded; a peer
# with the secret is admitted (so the check is what keeps the others
# out). A holder of the secret sending in a member's name (its routing
# id) from a connection of another token: a server drops it naming the
# sender, and the scheduler ends the job naming it. The errors for a job without a secret where it needs one (by
# hand, --rank) and for nodes of two secrets. Then security.mode =
# curve: a job whose every connection is CURVE, and, while it runs, three
# kinds of intruder against the scheduler and every server: a peer without CURVE
# (thousands of malformed messages, as fuzz.sh sends), a CURVE peer with a
# key pair of its own, and captured traffic of an admitted client replayed
# byte for byte. Each is refused at the handshake and logged; nothing of
# theirs reaches a node (no "dropped" message: nothing got that far); the
# job finishes exact. Also ps-keygen (never through a symlink, never into
# a directory others may write to), and the errors for missing, loose or
# mismatched key files and an open keys directory.
source "$(dirname "$0")/lib.sh" "$@"
keys=$WORK/keys
other=$WORK/other-keys

# ---- ps-keygen
"$BUILD/ps-keygen" --help | grep -q "Usage: ps-keygen" || fail "ps-keygen --help"
"$BUILD/ps-keygen" "$keys" >/dev/null || fail "ps-keygen $keys"
[ "$(stat -c %a "$keys/job.key")" = 600 ] || fail "job.key is not 0600"
[ "$(stat -c %a "$keys")" = 700 ] || fail "the key directory is not 0700"
[ "$(wc -c <"$keys/job.pub")" -eq 41 ] || fail "job.pub is not one 40-character line"
"$BUILD/ps-keygen" "$keys" 2>"$WORK/keygen.err" && fail "ps-keygen replaced an existing pair"
grep -q "exists.*--force" "$WORK/keygen.err" || fail "no hint at --force: $(cat "$WORK/keygen.err")"
"$BUILD/ps-keygen" "$other" >/dev/null || fail "ps-keygen $other"
"$BUILD/ps-keygen" >/dev/null 2>&1; [ $? -eq 2 ] || fail "ps-keygen without DIR: not a usage error"
# --force replaces a symlink planted as job.key; never writes through it
echo precious >"$WORK/victim"
"$BUILD/ps-keygen" "$WORK/planted" >/dev/null || fail "ps-keygen $WORK/planted"
ln -sf "$WORK/victim" "$WORK/planted/job.key"
"$BUILD/ps-keygen" --force "$WORK/planted" >/dev/null || fail "ps-keygen --force over a symlink"
[ "$(cat "$WORK/victim")" = precious ] || fail "ps-keygen --force wrote through the symlink job.key"
[ -f "$WORK/planted/job.key" ] && [ ! -L "$WORK/planted/job.key" ] &&
	[ "$(stat -c %a "$WORK/planted/job.key")" = 600 ] ||
	fail "ps-keygen --force did not replace the symlink with a 0600 file"
# a keys directory others may write to, or someone else's, is refused
mkdir -m 777 "$WORK/open-dir"
chmod 777 "$WORK/open-dir" # whatever the umask
"$BUILD/ps-keygen" "$WORK/open-dir" 2>"$WORK/keygen-open.err" && fail "ps-keygen wrote into a 0777 directory"
grep -q "open-dir: writable by group and others (mode 0777).*chmod 700" "$WORK/keygen-open.err" ||
	fail "no reason for the 0777 directory: $(cat "$WORK/keygen-open.err")"
if [ "$(id -u)" -eq 0 ]; then
	mkdir -m 700 "$WORK/foreign-dir" && chown 65534 "$WORK/foreign-dir"
	"$BUILD/ps-keygen" "$WORK/foreign-dir" 2>"$WORK/keygen-foreign.err" &&
		fail "ps-keygen wrote into a directory of uid 65534"
	grep -q "foreign-dir: owned by uid 65534, not by this user (uid 0)" "$WORK/keygen-foreign.err" ||
		fail "no reason for the foreign directory: $(cat "$WORK/keygen-foreign.err")"
fi

# ---- bad key files: the node names the problem
expect_key_error() { # WHAT PATTERN ARGS...
	local what=$1 pat=$2
	shift 2
	launch "$what" 60 --set security.mode=curve "$@" && fail "$what: the job ran"
	grep -q -- "$pat" "$WORK/$what.err.log" ||
		fail "$what: no '$pat' in the log: $(grep -m3 error "$WORK/$what.err.log")"
}
cp -r "$keys" "$WORK/loose" && chmod 644 "$WORK/loose/job.key"
expect_key_error loose-key "readable by others (mode 0644).*chmod 600" \
	--set security.keys_dir="$WORK/loose"
mkdir -p "$WORK/mixed" && cp "$keys/job.key" "$WORK/mixed/" && cp "$other/job.pub" "$WORK/mixed/"
expect_key_error mixed-keys "job.pub is not the public key of job.key" \
	--set security.keys_dir="$WORK/mixed"
expect_key_error no-keys "none: No such file" --set security.keys_dir="$WORK/none"
cp -r "$keys" "$WORK/shared" && chmod 775 "$WORK/shared"
expect_key_error shared-dir "shared: writable by its group (mode 0775).*chmod 700" \
	--set security.keys_dir="$WORK/shared"
pass "ps-keygen: 0600/0700, no overwrite without --force, never through a symlink, no open or foreign directory; loose, mixed and missing keys and an open directory named"

# ---- the default: a secret per job
secret=$("$BUILD/ps-keygen" --secret)
[[ $secret =~ ^[0-9a-f]{64}$ ]] || fail "ps-keygen --secret printed '$secret'"
[ "$(stat -c %a "$keys/job.secret")" = 600 ] || fail "job.secret is not 0600"
[ "$(tr -d '\n' <"$keys/job.secret" | wc -c)" -eq 64 ] || fail "job.secret is not one 64-digit line"
held=$WORK/secret-held
start_held_job secret "$held" --set transport.handshake_timeout_ms=2000
job=$JOB_PID
eps=$EPS
grep -q "^ps-launch: security: a secret for this job" "$WORK/secret.err.log" ||
	fail "ps-launch did not make a secret for a default job"
[ "$(grep -c "info: security: peers must present the job's secret (ORDO_JOB_SECRET)" "$WORK/secret.err.log")" -eq 5 ] ||
	fail "not every node of the default job checks the secret: $(grep -m5 'security' "$WORK/secret.err.log")"
seed=1
for ep in $eps; do
	"$TOOLS/fuzz_sender" "$ep" 1000 $seed >>"$WORK/stranger.log" 2>&1 ||
		fail "fuzz_sender could not run against $ep"
	"$TOOLS/fuzz_sender" "$ep" secret "$secret" 20 $seed \
		>>"$WORK/wrong-secret.log" 2>&1 || fail "fuzz_sender secret could not run against $ep"
	seed=$((seed + 1))
done
[ "$(grep -c 'handshake refused' "$WORK/wrong-secret.log")" -eq 3 ] ||
	fail "a peer with another secret was admitted: $(cat "$WORK/wrong-secret.log")"
grep -q "warning: dropped" "$WORK/secret.err.log" &&
	fail "a message of a stranger reached a node: $(grep -m3 'warning: dropped' "$WORK/secret.err.log")"
for who in scheduler "server 0" "server 1"; do
	poll_until 60 grep -q "$who\] warning: security: refused a peer connecting to .*: \(it does not present a job secret\|its handshake failed\)" "$WORK/secret.err.log" ||
		fail "$who did not log the peer without a secret"
	grep -qF "$who] warning: security: refused a peer at 127.0.0.1: it did not present the job's secret" "$WORK/secret.err.log" ||
		fail "$who did not log the peer with another secret"
done
# with the job's own secret (read from a node, as a member could), a
# peer gets in and its malformed messages are decoded and dropped
sched=$(pgrep -f "ps-scheduler.*$WORK" | head -n 1)
own=$(tr '\0' '\n' </proc/"$sched"/environ | sed -n 's/^ORDO_JOB_SECRET=//p')
[ ${#own} -eq 64 ] || fail "the scheduler has no ORDO_JOB_SECRET"
ps -eo args >"$WORK/ps.txt" # (a grep of ps's pipe would see its own argument)
grep -qF "$own" "$WORK/ps.txt" && fail "the job's secret is on a command line"
"$TOOLS/fuzz_sender" "$(echo "$eps" | head -n 1)" secret "$own" 50 9 >"$WORK/member.log" 2>&1 ||
	fail "fuzz_sender with the job's secret failed"
grep -q "handshake succeeded" "$WORK/member.log" || fail "the job's secret was refused: $(cat "$WORK/member.log")"
poll_until 60 grep -q "warning: dropped" "$WORK/secret.err.log" ||
	fail "the admitted peer's malformed messages never reached the node"
# a flood of connections that never say anything: the node closes each
# once its handshake timeout (transport.handshake_timeout_ms, 2 s here)
# passes, holding its file descriptors no longer, and the job goes on.
# The wait ends at 25 s, before ZeroMQ's own default (30 s) would close
# them: a node that ignored the key fails here
python3 - "$(echo "$eps" | head -n 1)" 300 >"$WORK/silent.log" 2>&1 <<'PY' ||
import select, socket, sys, time
ep, n = sys.argv[1], int(sys.argv[2])
host, port = ep.split("//")[1].rsplit(":", 1)
socks = [socket.create_connection((host, int(port))) for _ in range(n)]
left, end = set(socks), time.monotonic() + 25
while left and time.monotonic() < end:
    ready, _, _ = select.select(list(left), [], [], 1)
    for s in ready:
        try:
            data = s.recv(4096)  # the node's greeting, then its close
        except ConnectionResetError:
            data = b""
        if not data:
            left.discard(s)
            s.close()
print("%d of %d silent connections closed by the node" % (n - len(left), n))
sys.exit(1 if left else 0)
PY
	fail "silent connections were not closed: $(cat "$WORK/silent.log")"
touch "$held"
assert_job_exact $job secret "the default job" "strangers"
pass "default job: a secret made by ps-launch, never on a command line; strangers and a wrong secret refused and logged at the scheduler and both servers, the secret admits; 300 silent connections closed at the handshake timeout; job exact"

# ---- a holder of the secret passing for a member: the job ends naming it
held=$WORK/imp-held
EXACT_WORKER_SIZES=100 EXACT_WORKER_HOLD=$held start_job imp \
	--worker "$TOOLS/exact_worker" --set train.iterations=20 \
	--set train.lr=1 --set train.momentum=0
job=$JOB_PID
wait_for "$WORK/imp.err.log" 'exact-worker 0\] info: joined job .* as worker 0'
line=$(grep -m1 'exact-worker 0\] info: joined job .* as worker 0' "$WORK/imp.err.log")
jid=$(echo "$line" | sed -n 's/.*joined job \([0-9a-f]*\) as.*/\1/p')
node=$(echo "$line" | sed -n 's/.*(node \([0-9]*\) of.*/\1/p')
tid=$(echo "$line" | sed -n 's/.*transport id \([0-9a-f]*\)).*/\1/p')
[ -n "$jid" ] && [ -n "$node" ] && [ -n "$tid" ] || fail "no job, node or transport id in: $line"
sched=$(pgrep -f "ps-scheduler.*$WORK" | head -n 1)
own=$(tr '\0' '\n' </proc/"$sched"/environ | sed -n 's/^ORDO_JOB_SECRET=//p')
sep=$(grep -o 'scheduler\] info: job [0-9a-f]*: listening on tcp://[0-9.:]*' "$WORK/imp.err.log" | grep -o 'tcp://.*')
# to a server: dropped, naming who sent it
s0=$(grep -o 'registered server 0: pid [0-9]* on [^,]*, tcp://[0-9.:]*' "$WORK/imp.err.log" | grep -o 'tcp://.*')
[ -n "$s0" ] || fail "server 0's endpoint not found"
"$TOOLS/fuzz_sender" "$s0" impersonate "$own" "$jid" "$node" "$tid" >"$WORK/imp-server.log" 2>&1 ||
	fail "fuzz_sender impersonate (server): $(cat "$WORK/imp-server.log")"
wait_for "$WORK/imp.err.log" "server 0\] warning: dropped .*HEARTBEAT in the name of worker 0 (node $node) came from a holder of the job's secret that is no node of the job (key id [0-9a-f]*): a member passing for another"
# to the scheduler: the job ends, naming it
"$TOOLS/fuzz_sender" "$sep" impersonate "$own" "$jid" "$node" "$tid" >"$WORK/imp-sender.log" 2>&1 ||
	fail "fuzz_sender impersonate: $(cat "$WORK/imp-sender.log")"
wait_for "$WORK/imp.err.log" "aborting the job: .*a member passing for another"
touch "$held"
wait $job
status=$?
assert_job_ended imp $status "a member passing for another"
[ $status -ne 0 ] || fail "the job went on after a message in worker 0's name from another key"
grep -q "aborting the job: a holder of the job's secret that is no node of the job (key id [0-9a-f]*) sent a HEARTBEAT as worker 0 (.*) (its transport id $tid): a member passing for another" \
	"$WORK/imp.err.log" || fail "the scheduler did not name the impersonation: $(grep -m3 'abort' "$WORK/imp.err.log")"
assert_no_leftovers
pass "a message in worker 0's name (its routing id) from another key: dropped by a server naming who sent it; the job ends naming it at the scheduler"

# ---- a job without the secret where it needs one, and two secrets
EXACT_WORKER_SIZES=100 launch hand 60 --worker "$TOOLS/exact_worker" \
	--set train.iterations=3 --set train.lr=1 --set train.momentum=0 \
	--set security.mode=none || fail "a job of mode none exited $?"
grep -q "security: a secret" "$WORK/hand.err.log" && fail "ps-launch made a secret for mode none"
grep -q "security: peers must present" "$WORK/hand.err.log" && fail "a node of mode none checks a secret"
env -u ORDO_JOB_SECRET timeout 60 "$BUILD/ps-scheduler" --config "$JOB" \
	--set security.mode=secret >"$WORK/nosecret.log" 2>&1 && fail "ps-scheduler ran in mode secret without a secret"
grep -q "security.mode = secret, but this job has no secret: set ORDO_JOB_SECRET" "$WORK/nosecret.log" ||
	fail "no reason for mode secret without a secret: $(cat "$WORK/nosecret.log")"
ORDO_JOB_SECRET=xyz timeout 60 "$BUILD/ps-scheduler" --config "$JOB" \
	>"$WORK/badsecret.log" 2>&1 && fail "ps-scheduler ran with ORDO_JOB_SECRET=xyz"
grep -q "ORDO_JOB_SECRET is not a job secret (64 hexadecimal digits" "$WORK/badsecret.log" ||
	fail "no reason for a malformed ORDO_JOB_SECRET: $(cat "$WORK/badsecret.log")"
env -u ORDO_JOB_SECRET SLURM_PROCID=0 SLURM_NTASKS=5 timeout 60 "$BUILD/ps-launch" --config "$JOB" --rank \
	--set cluster.scheduler_port=1 >"$WORK/rank.log" 2>&1
[ $? -eq 2 ] || fail "ps-launch --rank without a secret: not a usage error"
grep -q "^ps-launch: --rank: security.mode = auto needs the job's secret on every node.*ps-keygen --secret" "$WORK/rank.log" ||
	fail "no reason for --rank without a secret: $(cat "$WORK/rank.log")"
# a scheduler of one secret, a server of another: refused, both say so
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ORDO_JOB_SECRET=$secret timeout 60 "$BUILD/ps-scheduler" --config "$JOB" \
	--set cluster.scheduler_port="$port" --set cluster.servers=1 --set cluster.workers=1 \
	--set cluster.register_timeout_ms=20000 >"$WORK/two-sched.log" 2>&1 &
two=$!
wait_for "$WORK/two-sched.log" "listening on tcp://"
ORDO_JOB_SECRET=$("$BUILD/ps-keygen" --secret) timeout 60 "$BUILD/ps-server" --config "$JOB" \
	--set cluster.scheduler_port="$port" --set cluster.servers=1 --set cluster.workers=1 \
	>"$WORK/two-server.log" 2>&1 && fail "a server of another secret joined"
grep -q "the peer refused this node's job secret" "$WORK/two-server.log" ||
	fail "the server of another secret did not say why: $(tail -3 "$WORK/two-server.log")"
kill $two 2>/dev/null
wait $two
grep -q "warning: security: refused a peer at 127.0.0.1: it did not present the job's secret" "$WORK/two-sched.log" ||
	fail "the scheduler did not log the server of another secret"
pass "mode none runs without a secret; mode secret without one, a malformed one, --rank without one and a node of another secret refused, each naming the problem"

# ---- a curve job under attack
held=$WORK/attacked
start_held_job curve "$held" --set security.mode=curve --set security.keys_dir="$keys" \
	--set transport.connections_per_peer=2
job=$JOB_PID
eps=$EPS
seed=1
for ep in $eps; do
	# no CURVE at all
	"$TOOLS/fuzz_sender" "$ep" 1000 $seed >>"$WORK/plain.log" 2>&1 ||
		fail "fuzz_sender could not run against $ep"
	# CURVE with a key pair that is not the job's
	"$TOOLS/fuzz_sender" "$ep" curve "$keys/job.pub" "$other" 100 $seed \
		>>"$WORK/wrong.log" 2>&1 || fail "fuzz_sender curve could not run against $ep"
	seed=$((seed + 1))
done
[ "$(grep -c 'handshake refused' "$WORK/wrong.log")" -eq 3 ] ||
	fail "a CURVE peer with another key pair was admitted: $(cat "$WORK/wrong.log")"
grep -q "warning: dropped" "$WORK/curve.err.log" &&
	fail "a message of an intruder reached a node: $(grep -m3 'warning: dropped' "$WORK/curve.err.log")"
for who in scheduler "server 0" "server 1"; do
	# logged as the handshake fails, on the node's own thread: wait for it
	# (a sender that closed first makes it "its handshake failed")
	poll_until 60 grep -q "$who\] warning: security: refused a peer connecting to .*: \(it does not use CURVE\|its handshake failed\)" "$WORK/curve.err.log" ||
		fail "$who did not log the peer without CURVE"
	grep -qF "$who] warning: security: refused a peer at 127.0.0.1: its key $(cat "$other/job.pub") is not the job's" "$WORK/curve.err.log" ||
		fail "$who did not log the peer with another key"
done

# Replay: an admitted client's traffic (the job's own keys, through a
# recording relay) sent again byte for byte to the same server.
ep=$(echo "$eps" | tail -n 1)
hp=${ep#tcp://}
python3 "$SRC/tests/tools/tcp_replay.py" record "$WORK/relay.port" \
	"${hp%:*}" "${hp##*:}" "$WORK/captured" >"$WORK/relay.log" 2>&1 &
relay=$!
poll_until 60 test -s "$WORK/relay.port" || fail "the recording relay did not start"
"$TOOLS/fuzz_sender" "tcp://127.0.0.1:$(cat "$WORK/relay.port")" curve \
	"$keys/job.pub" "$keys" 20 7 >"$WORK/admitted.log" 2>&1 ||
	fail "the admitted client failed: $(cat "$WORK/admitted.log")"
grep -q "handshake succeeded" "$WORK/admitted.log" ||
	fail "the job's own key pair was refused: $(cat "$WORK/admitted.log")"
wait $relay || fail "the relay failed: $(cat "$WORK/relay.log")"
before=$(grep -c "refused" "$WORK/curve.err.log")
python3 "$SRC/tests/tools/tcp_replay.py" replay "${hp%:*}" "${hp##*:}" "$WORK/captured" \
	>"$WORK/replay.log" 2>&1 || fail "replay failed: $(cat "$WORK/replay.log")"
poll_until 60 grep -q "refused a peer connecting to .*: a damaged or replayed handshake" "$WORK/curve.err.log" ||
	fail "the replayed handshake was not refused and logged (refusals before: $before)"

touch "$held"
wait $job
status=$?
assert_job_ended curve $status "intruders"
[ $status -eq 0 ] || fail "the curve job failed after the intruders (status $status)"
n=$(grep -c "^exact: .* 0 wrong$" "$WORK/curve.out.log")
[ "$n" -eq 2 ] || fail "$n of 2 workers exact after the intruders"
pass "curve job: no-CURVE, wrong-key and replayed peers refused and logged at the scheduler and both servers; job exact"

# ---- ps-launch's per-job keys: made, used, removed
EXACT_WORKER_SIZES=100 launch auto 120 --worker "$TOOLS/exact_worker" \
	--set train.iterations=3 --set train.lr=1 --set train.momentum=0 \
	--set security.mode=curve || fail "job with per-job keys exited $?"
kd=$(sed -n 's/^ps-launch: security.mode = curve: a key pair for this job in //p' "$WORK/auto.err.log")
[ -n "$kd" ] || fail "ps-launch did not say where the job's keys are"
[ ! -e "$kd" ] || fail "ps-launch left the job's keys in $kd"
pass "ps-launch made a key pair for the job and removed it"
assert_no_leftovers
