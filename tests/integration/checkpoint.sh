# Checkpoints (docs/checkpoint-format.md): periodic and on-demand
# snapshots, checkpoint.keep, resuming under another layout (workers,
# servers, partition size, preset) with exact values, SGD with momentum
# resumed bit-identical to an uninterrupted run, and resumes that must be
# refused with a message naming the problem.
source "$(dirname "$0")/lib.sh" "$@"
CK=$WORK/ckpt
SIZES=1000,4097,10,1

# exact JOB_NAME [ps-launch args...]: an exactness job (tests/tools/
# exact_worker checks every value, also the ones a resume starts from).
exact() {
	local name=$1
	shift
	EXACT_WORKER_SIZES=$SIZES launch "$name" 300 \
		--worker "$TOOLS/exact_worker" --set train.lr=1 \
		--set train.momentum=0 --set checkpoint.dir="$CK" "$@"
}
all_exact() { # NAME WORKERS
	local n
	n=$(grep -c "^exact: .* 0 wrong$" "$WORK/$1.out.log")
	[ "$n" -eq "$2" ] || fail "$1: $n of $2 workers exact"
}
complete() { # ITERATION: ckpt dir with a manifest
	printf '%s/ckpt-%012d' "$CK" "$1"
}

# 1. Periodic: W=2, S=3, 1 KiB partitions, every 3 of 12 iterations.
exact periodic --set cluster.workers=2 --set cluster.servers=3 \
	--set scheduling.partition_size=1K --set train.iterations=12 \
	--set checkpoint.every=3 --set checkpoint.keep=10 ||
	fail "periodic job exited $?"
all_exact periodic 2
for it in 3 6 9 12; do
	[ -s "$(complete $it)/manifest.json" ] || fail "no checkpoint at $it"
	grep -q "^checkpoint: iteration $it complete in " "$WORK/periodic.out.log" ||
		fail "the scheduler did not report checkpoint $it"
	for r in 0 1 2; do
		[ -s "$(complete $it)/shard-$r.bin" ] || fail "ckpt $it: no shard $r"
	done
done
"$BUILD/ps-ckpt" verify "$(complete 6)" >"$WORK/verify.log" 2>&1 ||
	fail "ps-ckpt verify: $(cat "$WORK/verify.log")"
pass "periodic: checkpoints 3, 6, 9, 12 of 3 shards each, verified"

#    Servers holding no partition (one tensor, three servers) still
#    write their (empty) shard of every checkpoint, also the last one.
SIZES=4097 exact empty --set cluster.servers=3 --set train.iterations=6 \
	--set checkpoint.dir="$WORK/empty-servers" --set checkpoint.every=2 ||
	fail "job with empty servers exited $?"
for it in 2 4 6; do
	[ -s "$WORK/empty-servers/ckpt-00000000000$it/manifest.json" ] ||
		fail "empty servers: no checkpoint at $it"
done
pass "servers with no partition: checkpoints 2, 4, 6 complete"

# 2. Resume under another layout: from iteration 6 (W=2, S=3, 1 KiB, baseline)
#    with S=2, 64 B partitions, p3's order, gate and credit (its own
#    checkpoints in another directory: 9 and 12 of this one are another
#    history from 6 on).
exact relayout --set checkpoint.dir="$WORK/relayout" \
	--set cluster.workers=2 --set cluster.servers=2 \
	--set scheduling.partition_size=64 --set scheduling.preset=p3 \
	--set scheduling.credit_size=128 --set train.iterations=12 \
	--set checkpoint.resume="$(complete 6)" ||
	fail "resumed job exited $?"
all_exact relayout 2
grep -q "^checkpoint: resuming at iteration 6 from " "$WORK/relayout.out.log" ||
	fail "the scheduler did not say what it resumed from"
grep -q "^exact: worker 0 of 2: .* over iterations 7..12, 0 wrong$" \
	"$WORK/relayout.out.log" || fail "the resumed job did not start at 7"
pass "resumed at 6 with S=2, 64 B partitions, p3: exact through 12"

#    Fewer workers and fused partitions: W=1, S=1, 64 KiB with fusion.
EXACT_WORKER_HISTORY_WORKERS=2 exact fewer --set cluster.workers=1 --set cluster.servers=1 \
	--set scheduling.partition_size=64K --set scheduling.fusion=on \
	--set train.iterations=15 --set checkpoint.resume=latest ||
	fail "resume with W=1, fusion exited $?"
all_exact fewer 1
grep -q "^checkpoint: resuming at iteration 12 from " "$WORK/fewer.out.log" ||
	fail "latest is not iteration 12"
pass "resumed latest (12) with W=1, S=1, fused 64 KiB partitions: exact through 15"

# 3. keep: every 2 of 8 iterations with keep = 2 leaves the last two.
rm -rf "$CK"
exact keep --set train.iterations=8 --set checkpoint.every=2 \
	--set checkpoint.keep=2 || fail "keep job exited $?"
left=$(cd "$CK" && echo ckpt-*)
[ "$left" = "ckpt-000000000006 ckpt-000000000008" ] ||
	fail "checkpoint.keep = 2 left: $left"
pass "checkpoint.keep = 2: $left"

# 4. SGD with momentum: a run resumed at 10 under another layout ends
#    with the very parameters of an uninterrupted run (sums of two
#    gradients in double do not depend on order or placement).
mlp() { # NAME [args...]
	local name=$1
	shift
	launch "$name" 300 --set cluster.workers=2 --set train.momentum=0.9 \
		--set train.lr=0.05 --set train.iterations=20 \
		--set train.dump_params="$WORK/$name.params" "$@" ||
		fail "$name exited $?"
}
rm -rf "$CK"
mlp straight --set cluster.servers=2
mlp first --set cluster.servers=3 --set scheduling.partition_size=1K \
	--set checkpoint.dir="$CK" --set checkpoint.every=10 \
	--set train.iterations=10
mlp second --set cluster.servers=1 --set scheduling.preset=ordo \
	--set checkpoint.dir="$CK" --set checkpoint.resume=latest
cmp -s "$WORK/straight.params" "$WORK/second.params" ||
	fail "momentum: the resumed run's parameters differ from the uninterrupted run's"
loss_straight=$(loss_at "$WORK/straight.out.log" 0 20)
loss_second=$(loss_at "$WORK/second.out.log" 0 20)
[ "$loss_straight" = "$loss_second" ] || fail "loss $loss_second, uninterrupted $loss_straight"
n=$(grep -c "^worker 0 iter " "$WORK/second.out.log")
[ "$n" -eq 10 ] || fail "the resumed run did $n iterations, not 10"
pass "momentum: resumed at 10 with S=1 and ordo = uninterrupted (loss $loss_second)"

# 5. On demand: SIGUSR1 to ps-launch while a job runs.
rm -rf "$CK"
start_job usr1 --set train.iterations=1000000 --set checkpoint.dir="$CK"
job=$JOB_PID
wait_for "$WORK/usr1.out.log" '^worker 1 iter 20/'
# to ps-launch itself: timeout(1), which start_job puts around it, does
# not relay SIGUSR1
kill -USR1 "$(pgrep -f "^[^ ]*ps-launch .*$WORK/")"
wait_for "$WORK/usr1.out.log" '^checkpoint: iteration [0-9]* complete in '
kill -INT $job
wait $job
it=$(sed -n 's/^checkpoint: iteration \([0-9]*\) complete in .*/\1/p' "$WORK/usr1.out.log" | head -1)
[ "$it" -gt 20 ] || fail "on-demand checkpoint at $it, not after iteration 20"
"$BUILD/ps-ckpt" verify "$(complete "$it")" >"$WORK/verify.log" 2>&1 ||
	fail "on-demand checkpoint: $(cat "$WORK/verify.log")"
pass "SIGUSR1: checkpoint at iteration $it, verified"

# 6. Asynchronous mode: a checkpoint of iteration V holds exactly every
#    worker's pushes of the iterations before V (later ones wait on the
#    server), so a resumed job ends with every partition at version
#    workers x iterations: every push applied once, none lost.
versions() { # NAME SERVERS VERSION: every server's partitions at VERSION
	local n none
	n=$(grep -c "server [0-9]*\] info: partitions at versions $3\.\.$3$" "$WORK/$1.err.log")
	none=$(grep -c "server [0-9]*\] info: partitions at versions: it holds none$" "$WORK/$1.err.log")
	[ "$n" -ge 1 ] && [ $((n + none)) -eq "$2" ] ||
		fail "$1: $n of $2 servers at version $3 ($none hold none): $(grep 'partitions at' "$WORK/$1.err.log")"
}
AK=$WORK/ckpt-async
launch async1 300 --set train.mode=async --set train.lr=0.05 \
	--set scheduling.preset=baseline --set train.iterations=12 --set checkpoint.dir="$AK" \
	--set checkpoint.every=4 --set checkpoint.keep=5 || fail "async job exited $?"
versions async1 2 24
# async workers may run further apart than checkpoint.every, and one is
# taken at a time: some may be skipped (with a warning), not all
first=$(cd "$AK" && ls -d ckpt-* | head -1)
[ -s "$AK/$first/manifest.json" ] || fail "async: no checkpoint"
ait=$((10#${first#ckpt-}))
launch async2 300 --set train.mode=async --set train.lr=0.05 \
	--set train.iterations=14 --set cluster.servers=3 \
	--set scheduling.partition_size=1K --set checkpoint.dir="$AK-2" \
	--set checkpoint.resume="$AK/$first" || fail "resumed async job exited $?"
versions async2 3 28
n=$(grep -c "^worker 0 iter " "$WORK/async2.out.log")
[ "$n" -eq $((14 - ait)) ] || fail "async: the resumed run did $n iterations, not $((14 - ait))"
pass "async: 2 x 12 updates per partition; resumed at $ait on 3 servers: 2 x 14"
good_async=$AK/$first

# 6b. Async, one worker stopped (SIGSTOP) while checkpoints wait for it:
#     the other runs on to the next checkpoint and at most one iteration
#     past it, then its PULL waits for its held pushes, so what the
#     servers hold stays bounded. Without that wait it would run on, its
#     pushes piling up in the servers.
start_job async-bound --set train.mode=async --set train.lr=0.05 \
	--set train.iterations=1000000 --set checkpoint.dir="$WORK/ckpt-bound" \
	--set checkpoint.every=4 --set cluster.heartbeat_timeout_ms=600000
job=$JOB_PID
wait_for "$WORK/async-bound.out.log" '^worker [01] iter 20/'
stopped=$(pgrep -f "ps-worker.*$WORK" | head -n 1)
[ -n "$stopped" ] || fail "async-bound: no worker process found"
kill -STOP "$stopped"
furthest() {
	sed -n 's|^worker [01] iter \([0-9]*\)/.*|\1|p' "$WORK/async-bound.out.log" |
		sort -n | tail -1
}
# the stopped worker has done at most P iterations; checkpoints come
# every 4, so the other may reach P + 4 + 1, and is stopped by then
P=$(furthest)
# a PULL waits now: the last checkpoint one waited for, not answered yet
# (with a worker stopped, it stays so)
pull_waits() {
	local v
	v=$(sed -n "s/.*checkpoint \([0-9]*\): worker [0-9]*'s PULL of partition .*/\1/p" \
		"$WORK/async-bound.err.log" | tail -n 1)
	[ -n "$v" ] && ! grep -q "checkpoint $v: the PULLs that waited for it are answered" \
		"$WORK/async-bound.err.log"
}
waited_or_ran() {
	pull_waits || [ "$(furthest)" -gt $((P + 14)) ]
}
poll_until 120 waited_or_ran ||
	{ kill -CONT "$stopped"; fail "async-bound: no PULL waited, and the other worker stopped by itself"; }
pull_waits ||
	{ kill -CONT "$stopped"; fail "async-bound: the other worker ran past iteration $((P + 14)) while checkpoints waited for the stopped one"; }
F=$(furthest)
kill -CONT "$stopped"
[ "$F" -le $((P + 6)) ] ||
	fail "async-bound: the other worker ran to iteration $F while checkpoints waited for the one stopped at or before $P"
kill -INT $job
wait $job
assert_job_ended async-bound $? "async-bound"
# per server: at most PS_HELD_PER_WORKER pushes per worker and partition
n=0
while read -r srv held parts; do
	n=$((n + 1))
	[ "$held" -le $((2 * parts)) ] ||
		fail "async-bound: server $srv held $held pushes at once for $parts partitions"
done < <(awk '/server [0-9]+\] info: holding [0-9]+ of/ { match($0, /server [0-9]+/); s = substr($0, RSTART + 7, RLENGTH - 7); for (i = 1; i <= NF; i++) if ($i == "holding") p[s] = $(i + 1) }
	/server [0-9]+\] info: async checkpoints: at most/ { match($0, /server [0-9]+/); s = substr($0, RSTART + 7, RLENGTH - 7); for (i = 1; i <= NF; i++) if ($i == "most") h[s] = $(i + 1) }
	END { for (s in h) print s, h[s], p[s] }' "$WORK/async-bound.err.log")
[ "$n" -eq 2 ] || fail "async-bound: $n of 2 servers said how many pushes they held"
pass "async: a worker stopped after iteration $P or before; the other's PULL waited at iteration $F; pushes held bounded"

# 7. Resumes that must be refused, each with a message naming the problem.
refused() { # NAME PATTERN [args...]
	local name=$1 pattern=$2
	shift 2
	launch "$name" 120 "$@" && fail "$name: the job ran"
	grep -q -- "$pattern" "$WORK/$name.err.log" ||
		fail "$name: no message matching '$pattern'"
	pass "refused: $name"
}
good=$(complete "$it")
mkdir -p "$WORK/history/ckpt-000000000002"
cp -r "$good" "$WORK/history/"
echo partial >"$WORK/history/ckpt-000000000002/shard-0.bin.tmp"
refused wrong-model "tensor 0: the checkpoint has" \
	--set checkpoint.resume="$good" --set model.hidden=32
refused other-history "holds checkpoint $it, newer than the iteration this job starts at (0)" \
	--set checkpoint.dir="$WORK/history" --set checkpoint.every=1
grep -q "removed 1 incomplete checkpoint(s) above iteration 0" "$WORK/other-history.err.log" ||
	fail "the incomplete leftover was not removed"
[ ! -e "$WORK/history/ckpt-000000000002" ] || fail "ckpt-000000000002 left"
[ -s "$good/manifest.json" ] || fail "the other history's checkpoint was touched"
refused unwritable-dir "checkpoint.dir: " --set checkpoint.dir="$JOB/sub"
refused no-latest "no complete checkpoint under $WORK/empty" \
	--set checkpoint.dir="$WORK/empty" --set checkpoint.resume=latest
refused missing-dir "$WORK/nowhere" --set checkpoint.resume="$WORK/nowhere"
cp -r "$good" "$WORK/flipped"
shard=$WORK/flipped/shard-0.bin
size=$(stat -c %s "$shard")
printf '\xff' | dd of="$shard" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
refused flipped-byte "shard-0.bin" --set checkpoint.resume="$WORK/flipped"
cp -r "$good" "$WORK/truncated"
truncate -s $((size / 3)) "$WORK/truncated/shard-1.bin"
refused truncated "shard-1.bin" --set checkpoint.resume="$WORK/truncated"
cp -r "$good" "$WORK/nomanifest"
rm "$WORK/nomanifest/manifest.json"
refused no-manifest "manifest.json" --set checkpoint.resume="$WORK/nomanifest"
refused async-mode "written in train.mode = sync, the job runs async" \
	--set checkpoint.resume="$good" --set train.mode=async
refused sync-mode "written in train.mode = async, the job runs sync" \
	--set checkpoint.resume="$good_async"

# 8. The disk fills up while a job runs (a 512 KiB tmpfs; a checkpoint of
#    this model takes ~350 KiB): the second checkpoint fails with a clear
#    error, training goes on to the end, the first stays whole.
full=$WORK/full
mkdir -p "$full"
if mount -t tmpfs -o size=512k ordo-test-full "$full" 2>/dev/null; then
	trap 'umount "$full" 2>/dev/null; on_exit' EXIT
	launch diskfull 300 --set model.hidden=1024 --set train.iterations=8 \
		--set checkpoint.dir="$full" --set checkpoint.every=2 ||
		fail "the job failed when the disk filled up ($?)"
	grep -q "checkpoint 4: .*No space left on device" "$WORK/diskfull.err.log" ||
		fail "no clear error for the full disk"
	grep -q "^checkpoint: iteration 2 complete" "$WORK/diskfull.out.log" ||
		fail "the first checkpoint did not complete"
	"$BUILD/ps-ckpt" verify "$full/ckpt-000000000002" >"$WORK/verify.log" 2>&1 ||
		fail "the first checkpoint is damaged: $(cat "$WORK/verify.log")"
	ls "$full"/ckpt-*/*.tmp 2>/dev/null && fail "temporary files left"
	umount "$full"
	trap on_exit EXIT
	pass "disk full: checkpoint 4 failed clearly, training finished, checkpoint 2 intact"
else
	echo "skipped: disk full (cannot mount a tmpfs here)"
fi
assert_no_leftovers
