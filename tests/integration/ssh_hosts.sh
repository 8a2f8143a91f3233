# ps-launch --hosts FILE: the job's processes started over ssh on real
# sshd instances, one per "host", each host a network namespace of its own
# (10.203.0.1-3 on a bridge in a switch namespace, where ps-launch runs).
#  1. a 1 + 2 + 2 job (one host with slots=2), scheduler_port = 0 (the
#     port comes back through ssh): exact, every process listening on its
#     host's address, the scheduler's summary forwarded, progress lines.
#     The environment: ORDO_*, --env NAME, and each worker's RANK,
#     WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE reach the remote processes.
#     The job's secret (made by ps-launch, or given in ORDO_JOB_SECRET)
#     reaches every remote process through ssh's stdin, never on ssh's
#     command line.
#  2. SIGTERM to ps-launch mid-job: every remote process stops, status
#     143, nothing left on any host.
#  3. SIGKILL to ps-launch mid-job: its ssh's stdin closes, and the
#     remote wrappers stop their processes: nothing left.
#  4. a host where no sshd answers: ssh's failure named, the job fails,
#     nothing left; a bad host file: exit 2 naming file and line.
source "$(dirname "$0")/lib.sh" "$@"
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || [ ! -x /usr/sbin/sshd ] ||
	! command -v ssh >/dev/null || ! command -v ssh-keygen >/dev/null; then
	echo "SKIP: needs root, ip, sshd (openssh-server), ssh and ssh-keygen"
	exit 77
fi
sw=ordo-sw-$$
# sshd's files apart from $WORK, whose path finds the job's stragglers
SSHD=$(mktemp -d /tmp/ordo-sshd.XXXXXX)
hosts=(ordo-h1-$$ ordo-h2-$$ ordo-h3-$$)
cleanup_ns() {
	local rc=$?
	for h in "${hosts[@]}"; do
		for p in $(ip netns pids "$h" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
		ip netns del "$h" 2>/dev/null
	done
	ip netns del "$sw" 2>/dev/null
	rm -rf "$SSHD"
	(exit $rc)
	on_exit
}
trap cleanup_ns EXIT
ip netns add "$sw" || fail "ip netns add"
ip -n "$sw" link set lo up
ip -n "$sw" link add br0 type bridge
ip -n "$sw" addr add 10.203.0.254/24 dev br0
ip -n "$sw" link set br0 up
mkdir -p /run/sshd
ssh-keygen -q -t ed25519 -N '' -f "$SSHD/hostkey" || fail "ssh-keygen"
ssh-keygen -q -t ed25519 -N '' -f "$SSHD/id" || fail "ssh-keygen"
cp "$SSHD/id.pub" "$SSHD/authorized_keys"
for i in 1 2 3; do
	h=${hosts[$((i - 1))]}
	ip netns add "$h" || fail "ip netns add $h"
	ip -n "$h" link set lo up
	ip -n "$sw" link add "p$i" type veth peer name eth0 netns "$h" || fail "veth"
	ip -n "$sw" link set "p$i" master br0 up
	ip -n "$h" addr add "10.203.0.$i/24" dev eth0
	ip -n "$h" link set eth0 up
	ip netns exec "$h" /usr/sbin/sshd -D -e -f /dev/null \
		-o ListenAddress="10.203.0.$i" -o HostKey="$SSHD/hostkey" \
		-o AuthorizedKeysFile="$SSHD/authorized_keys" -o StrictModes=no \
		-o UsePAM=no -o PermitRootLogin=prohibit-password -o PidFile=none \
		-o MaxStartups=100 2>"$WORK/sshd$i.log" &
done
SSH="ssh -i $SSHD/id -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR -o ConnectTimeout=30"
reachable() { ip netns exec "$sw" $SSH "$1" true 2>/dev/null; }
for i in 1 2 3; do
	poll_until 60 reachable "10.203.0.$i" || fail "sshd on 10.203.0.$i did not answer: $(tail -n 3 "$WORK/sshd$i.log")"
done
pass "3 hosts (network namespaces) with sshd up"

cat >"$WORK/hosts" <<HOSTS
# the job's hosts: rank r on slot r mod 4
10.203.0.1            # the scheduler and worker #1
root@10.203.0.2       # server #0
10.203.0.3 slots=2    # server #1 and worker #0
HOSTS
exact=(--worker "$TOOLS/exact_worker" --set train.lr=1 --set train.momentum=0)
launch_hosts() {
	local name=$1
	shift
	timeout --kill-after=5 300 ip netns exec "$sw" "$BUILD/ps-launch" --config "$JOB" \
		--hosts "$WORK/hosts" --ssh "$SSH" "$@" \
		>"$WORK/$name.out.log" 2>"$WORK/$name.err.log"
}

# 1. the job, exact
EXACT_WORKER_SIZES=100,3000 launch_hosts job "${exact[@]}" --set train.iterations=20 ||
	fail "the job over ssh exited $?"
out=$WORK/job.out.log err=$WORK/job.err.log
[ "$(grep -c '^exact: .* 0 wrong$' "$out")" -eq 2 ] || fail "job over ssh not exact"
grep -q "^summary: job .* 2 worker(s) x 2 server(s), 20 iterations" "$out" ||
	fail "the remote scheduler's summary did not come back through ssh"
for want in "10.203.0.1 (10.203.0.1): scheduler, worker #1" \
	"root@10.203.0.2 (10.203.0.2): server #0" \
	"10.203.0.3 (10.203.0.3): server #1, worker #0"; do
	grep -qF "ps-launch: $want" "$err" || fail "no placement line '$want'"
done
grep -q "scheduler\] info: job .*: listening on tcp://10.203.0.1:" "$err" ||
	fail "the scheduler does not listen on host 1"
# (ids come in registration order: which server is on which host is not
# known until then)
for want in "server\] info: listening on tcp://10.203.0.2:" \
	"server\] info: listening on tcp://10.203.0.3:" \
	"exact-worker\] info: listening on tcp://10.203.0.3:" \
	"exact-worker\] info: listening on tcp://10.203.0.1:"; do
	grep -q "$want" "$err" || fail "no '$want'"
done
grep -q "^ps-launch: iteration 20/20 (100%)" "$err" || fail "no progress lines through ssh"
grep -q "^ps-launch: job completed: all 5 processes exited 0" "$err" || fail "no completion line"
assert_no_leftovers
pass "1 + 2 + 2 over ssh on 3 hosts: exact, each process on its host's address, summary and progress through ssh"

# 1b. the environment: ORDO_* (the configuration's environment layer) and
# --env NAME reach the remote processes, which ssh alone would not give
# (3100 values, checked at the start and after each of 7 iterations)
ORDO_TRAIN_ITERATIONS=7 EXACT_WORKER_SIZES=100,3000 launch_hosts env "${exact[@]}" \
	--env EXACT_WORKER_SIZES || fail "the job with --env exited $?"
n=$(grep -c '^exact: worker [01] of 2: 24800 values checked over iterations 1..7, 0 wrong$' \
	"$WORK/env.out.log")
[ "$n" -eq 2 ] || fail "--env/ORDO_*: $n of 2 remote workers used 7 iterations of 100 + 3000 values: $(grep '^exact' "$WORK/env.out.log")"
pass "ORDO_TRAIN_ITERATIONS and --env EXACT_WORKER_SIZES reach the remote processes"

# 1c. the job's secret: ps-launch made one for job 1, and every remote
# process checked it; one given in ORDO_JOB_SECRET goes through ssh's
# stdin, not its command line (an ssh that logs its arguments)
grep -q "^ps-launch: security: a secret for this job" "$err" || fail "ps-launch made no secret for the job over ssh"
n=$(grep -c "info: security: peers must present the job's secret (ORDO_JOB_SECRET)" "$err")
[ "$n" -eq 5 ] || fail "$n of 5 remote processes got the job's secret"
cat >"$WORK/ssh-logged" <<EOF2
#!/bin/sh
echo "\$*" >>"$WORK/ssh-args.log"
exec $SSH "\$@"
EOF2
chmod +x "$WORK/ssh-logged"
given=$("$BUILD/ps-keygen" --secret)
ORDO_JOB_SECRET=$given EXACT_WORKER_SIZES=100 timeout --kill-after=5 300 ip netns exec "$sw" \
	"$BUILD/ps-launch" --config "$JOB" --hosts "$WORK/hosts" --ssh "$WORK/ssh-logged" \
	--env EXACT_WORKER_SIZES "${exact[@]}" --set train.iterations=3 \
	>"$WORK/given.out.log" 2>"$WORK/given.err.log" || fail "the job with a given secret exited $?"
[ "$(grep -c 'ssh-args' "$WORK/ssh-logged")" -eq 1 ] && [ "$(wc -l <"$WORK/ssh-args.log")" -eq 5 ] ||
	fail "the logging ssh did not run 5 times"
grep -qF "$given" "$WORK/ssh-args.log" && fail "the job's secret was on ssh's command line"
grep -q "ORDO_JOB_SECRET=" "$WORK/ssh-args.log" && fail "ORDO_JOB_SECRET was set on ssh's command line"
grep -q "security: a secret for this job" "$WORK/given.err.log" && fail "ps-launch made a secret when one was given"
n=$(grep -c "info: security: peers must present the job's secret (ORDO_JOB_SECRET)" "$WORK/given.err.log")
[ "$n" -eq 5 ] || fail "$n of 5 remote processes got the given secret"
assert_no_leftovers
pass "the job's secret, made or given, reaches every remote process through ssh's stdin, not its command line"

# 1c. every remote worker gets its own RANK, WORLD_SIZE, LOCAL_RANK and
# LOCAL_WORLD_SIZE (worker #0 alone on host 3, worker #1 alone on host 1)
cat >"$WORK/envworker" <<SH
#!/bin/sh
echo "\$RANK \$WORLD_SIZE \$LOCAL_RANK \$LOCAL_WORLD_SIZE" >"$WORK/wenv.\$RANK"
exec "$TOOLS/exact_worker" "\$@"
SH
chmod +x "$WORK/envworker"
EXACT_WORKER_SIZES=100 launch_hosts wenv --worker "$WORK/envworker" --set train.lr=1 \
	--set train.momentum=0 --set train.iterations=2 --env EXACT_WORKER_SIZES ||
	fail "the job with the environment worker exited $?"
for r in 0 1; do
	[ "$(cat "$WORK/wenv.$r" 2>/dev/null)" = "$r 2 0 1" ] ||
		fail "remote worker $r: RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE = '$(cat "$WORK/wenv.$r" 2>/dev/null)'"
done
pass "remote workers: RANK 0 and 1, WORLD_SIZE 2, LOCAL_RANK 0, LOCAL_WORLD_SIZE 1 (one worker per host)"

# 2. SIGTERM mid-job: all stopped
long=(--worker "$TOOLS/exact_worker" --set train.iterations=100000 --set train.lr=1 --set train.momentum=0)
stop_midjob() {
	local name=$1 sig=$2
	EXACT_WORKER_SIZES=100 ip netns exec "$sw" "$BUILD/ps-launch" --config "$JOB" \
		--hosts "$WORK/hosts" --ssh "$SSH" "${long[@]}" \
		>"$WORK/$name.out.log" 2>"$WORK/$name.err.log" &
	local pid=$!
	wait_for "$WORK/$name.err.log" "^ps-launch: iteration "
	kill "-$sig" "$pid"
	wait "$pid"
	STATUS=$?
}
stop_midjob term TERM
[ "$STATUS" -eq 143 ] || fail "ps-launch exited $STATUS after SIGTERM, not 143"
grep -q "ps-launch: signal 15: stopping the job" "$WORK/term.err.log" || fail "no stop line"
assert_no_leftovers
pass "SIGTERM to ps-launch: every remote process stopped (status 143), none left"

# 3. SIGKILL mid-job: the wrappers see their ssh's stdin close
stop_midjob kill KILL
[ "$STATUS" -eq 137 ] || fail "ps-launch exited $STATUS after SIGKILL"
assert_no_leftovers
pass "SIGKILL to ps-launch: the remote wrappers stopped every process, none left"

# 4. a host without sshd, a bad host file
cp "$WORK/hosts" "$WORK/hosts.good"
echo "10.203.0.254" >>"$WORK/hosts" # the switch: no sshd there
EXACT_WORKER_SIZES=100 launch_hosts nossh "${exact[@]}" --set train.iterations=3 &&
	fail "a job with a host without sshd succeeded"
grep -q "ps-launch: worker #1 on 10.203.0.254 (pid [0-9]*) exited with status 255 (ssh could not connect or run the command" \
	"$WORK/nossh.err.log" || fail "ssh's failure not named: $(grep ps-launch "$WORK/nossh.err.log" | tail -n 3)"
grep -q "Connection refused" "$WORK/nossh.err.log" || fail "ssh's own message missing"
assert_no_leftovers
pass "a host where no sshd answers: named (ssh status 255), the job failed, nothing left"
printf '10.203.0.1\n10.203.0.2 slots=zero\n' >"$WORK/hosts"
launch_hosts badfile --set train.iterations=3
[ $? -eq 2 ] || fail "a bad host file did not exit 2"
grep -qF "ps-launch: $WORK/hosts:2: slots = 'zero' is not a number in [1, 4096]" "$WORK/badfile.err.log" ||
	fail "no file:line error: $(cat "$WORK/badfile.err.log")"
pass "a bad host file: exit 2, file:line named"
