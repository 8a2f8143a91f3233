# ps-launch --rank as torchrun or a Kubernetes PyTorchJob starts it: five
# processes, each with RANK and WORLD_SIZE only (no srun, no MPI), take
# their roles from them (rank 0 the scheduler, 1-2 the servers, 3-4 the
# workers) and run an exact job; WORLD_SIZE = 4 for a 5-process job stops
# each saying why (how many to start; rank 4: not below WORLD_SIZE).
source "$(dirname "$0")/lib.sh" "$@"
# every rank shares the job's secret, as the README says to give it
export ORDO_JOB_SECRET=$("$BUILD/ps-keygen" --secret)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# ranks SIZE: starts ranks 0..4 with WORLD_SIZE=SIZE, waits for each;
# returns the number that failed
ranks() {
	local pids=() bad=0
	for r in 0 1 2 3 4; do
		EXACT_WORKER_SIZES=100,3000 RANK=$r WORLD_SIZE=$1 timeout --kill-after=5 300 \
			"$BUILD/ps-launch" --rank --config "$JOB" \
			--set train.iterations=5 --set train.lr=1 --set train.momentum=0 \
			--set cluster.scheduler_port="$port" -- "$TOOLS/exact_worker" \
			>"$WORK/rank$r-$1.out.log" 2>"$WORK/rank$r-$1.err.log" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || bad=$((bad + 1))
	done
	return $bad
}

ranks 5 || fail "$? of 5 ranks failed"
n=$(grep -h '^exact: .* 0 wrong$' "$WORK"/rank?-5.out.log | grep -c .)
[ "$n" -eq 2 ] || fail "$n of 2 workers exact"
for want in "rank 0 of 5 (RANK): scheduler" "rank 2 of 5 (RANK): server #1" \
	"rank 4 of 5 (RANK): worker #1"; do
	grep -qhF "ps-launch: $want" "$WORK"/rank?-5.err.log || fail "no '$want'"
done
# each worker is ordo's worker of its RANK (it asks for that rank)
grep -q "^exact: worker 0 of 2" "$WORK/rank3-5.out.log" ||
	fail "rank 3 is not worker 0: $(grep '^exact' "$WORK/rank3-5.out.log")"
grep -q "^exact: worker 1 of 2" "$WORK/rank4-5.out.log" ||
	fail "rank 4 is not worker 1: $(grep '^exact' "$WORK/rank4-5.out.log")"
pass "RANK/WORLD_SIZE: 1 scheduler, 2 servers, 2 workers by RANK (rank 3 worker 0, rank 4 worker 1), exact"

ranks 4 && fail "WORLD_SIZE = 4 for a 5-process job ran"
for r in 0 1 2 3; do
	grep -q "WORLD_SIZE = 4, but the job is 5 processes" "$WORK/rank$r-4.err.log" ||
		fail "rank $r: no clear error: $(tail -n 2 "$WORK/rank$r-4.err.log")"
done
grep -q "RANK = 4 is not below WORLD_SIZE = 4" "$WORK/rank4-4.err.log" ||
	fail "rank 4: no clear error: $(tail -n 2 "$WORK/rank4-4.err.log")"
pass "WORLD_SIZE = 4 for 5 processes: every rank exits saying why"
assert_no_leftovers
