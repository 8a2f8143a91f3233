# ps-launch --rank under a real single-node Slurm (slurmctld, slurmd and
# munged in a network namespace of the test's own: tests/tools/
# slurm_node.sh): one srun starts every role by SLURM_PROCID.
#  1. srun -n 5: exact, each rank says its role.
#  2. sbatch --ntasks=5 examples/slurm.sbatch (the shipped example, as a
#     user submits it; the scheduler host given as 127.0.0.1 through the
#     environment, since the test's node name resolves nowhere): exact.
#  3. srun -n 3 for a 5-process job: the step fails, the tasks say how many
#     to start, nothing left.
source "$(dirname "$0")/lib.sh" "$@"
source "$SRC/tests/tools/slurm_node.sh"
# every rank shares the job's secret, as the README says to give it
export ORDO_JOB_SECRET=$("$BUILD/ps-keygen" --secret)
why=$(slurm_available) || { echo "SKIP: $why"; exit 77; }
# the daemons' files apart from $WORK, whose path finds the job's stragglers
SLURMDIR=$(mktemp -d /tmp/ordo-slurm.XXXXXX)
trap 'rc=$?; slurm_down; [ $rc -eq 0 ] || tail -n 20 "$SLURMDIR"/*.log; rm -rf "$SLURMDIR"; (exit $rc); on_exit' EXIT
slurm_up "$SLURMDIR" || fail "no Slurm cluster came up"
pass "single-node Slurm up (slurmctld, slurmd, munged)"

exact=(--worker "$TOOLS/exact_worker" --set train.iterations=5 --set train.lr=1
	--set train.momentum=0)
export EXACT_WORKER_SIZES=100,3000

slurm_run timeout --kill-after=5 300 srun -n 5 --overcommit --kill-on-bad-exit=1 \
	"$BUILD/ps-launch" --rank --config "$JOB" --set cluster.scheduler_port=9200 "${exact[@]}" \
	>"$WORK/srun.out.log" 2>"$WORK/srun.err.log" || fail "srun -n 5 exited $?"
[ "$(grep -c '^exact: .* 0 wrong$' "$WORK/srun.out.log")" -eq 2 ] || fail "the job under srun is not exact"
for r in "0 of 5 (SLURM_PROCID): scheduler" "1 of 5 (SLURM_PROCID): server #0" \
	"2 of 5 (SLURM_PROCID): server #1" "3 of 5 (SLURM_PROCID): worker #0" \
	"4 of 5 (SLURM_PROCID): worker #1"; do
	grep -qF "ps-launch: rank $r" "$WORK/srun.err.log" || fail "no 'rank $r'"
done
assert_no_leftovers
pass "srun -n 5 ps-launch --rank: the roles by SLURM_PROCID, exact"

slurm_run timeout --kill-after=5 300 env ORDO_CLUSTER_SCHEDULER_HOST=127.0.0.1 \
	PS_LAUNCH="$BUILD/ps-launch" sbatch --wait --ntasks=5 --overcommit \
	--output="$WORK/sbatch.log" "$SRC/examples/slurm.sbatch" "$JOB" "${exact[@]}" \
	>"$WORK/sbatch.submit.log" 2>&1 || fail "sbatch --wait exited $?: $(cat "$WORK/sbatch.submit.log")"
grep -q "^ordo: job [0-9]*, 5 tasks on ordo-node, scheduler at 127.0.0.1:[0-9]*$" "$WORK/sbatch.log" ||
	fail "no first line from the batch script: $(head -n 3 "$WORK/sbatch.log")"
[ "$(grep -c '^exact: .* 0 wrong$' "$WORK/sbatch.log")" -eq 2 ] || fail "the batch job is not exact"
assert_no_leftovers
pass "sbatch --ntasks=5 examples/slurm.sbatch: exact"

slurm_run timeout --kill-after=5 300 srun -n 3 --overcommit --kill-on-bad-exit=1 \
	"$BUILD/ps-launch" --rank --config "$JOB" --set cluster.scheduler_port=9200 "${exact[@]}" \
	>"$WORK/short.out.log" 2>"$WORK/short.err.log" && fail "srun -n 3 for a 5-process job succeeded"
grep -q "ps-launch: --rank: SLURM_NTASKS = 3, but the job is 5 processes (1 scheduler, 2 server(s), 2 worker(s)): start 5 tasks (srun -n 5" \
	"$WORK/short.err.log" || fail "no task-count error: $(head -n 3 "$WORK/short.err.log")"
assert_no_leftovers
pass "srun -n 3 for 5 processes: 'start 5 tasks', the step fails, nothing left"
