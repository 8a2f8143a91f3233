#!/usr/bin/env bash
# bench/soak.sh BUILD_DIR [WORKERS] [SERVERS] [ITERATIONS] - a long job on
# this machine: WORKERS x SERVERS (default 16 x 4) running the exactness
# worker (tests/tools/exact_worker.c: every value of every iteration
# checked against the closed form) for ITERATIONS (default 1000), with the
# resident memory (VmRSS) of every process sampled at ten milestones of
# worker 0's progress (its "at iteration" lines: progress, not time).
#
# Prints one row per process (RSS at each milestone, MiB) and the growth
# from the second milestone (warmed up) to the last; exits 0 only when
# every worker reports 0 wrong values and no process grew by more than
# SOAK_GROWTH_MIB (default 8) and SOAK_GROWTH_PCT (default 10) percent of
# its warmed-up RSS. SOAK_SIZES: the tensors (default
# 1000,100000,4097,10,300000, partitions of 64 KiB: cut and whole ones);
# SOAK_SET: extra --set arguments. tests/integration/soak.sh runs a short
# one in the suite.
set -uo pipefail
build=$(cd "${1:?usage: bench/soak.sh BUILD_DIR [WORKERS] [SERVERS] [ITERATIONS]}" && pwd)
workers=${2:-16} servers=${3:-4} iters=${4:-1000}
src=$(cd "$(dirname "$0")/.." && pwd)
sizes=${SOAK_SIZES:-1000,100000,4097,10,300000}
every=$((iters / 10))
((every >= 1)) || { echo "soak: at least 10 iterations" >&2; exit 2; }
# The exactness worker's values are integers that float32 holds exactly
# below 2^24; they grow like WORKERS x ITERATIONS^2 / 2.
((workers * iters * iters <= 30000000)) || {
	echo "soak: $workers workers x $iters iterations: the exactness worker's values would leave float32's exact integers (keep WORKERS x ITERATIONS^2 <= 3e7)" >&2
	exit 2
}
work=$(mktemp -d /tmp/ordo-soak.XXXXXX)
trap 'pkill -9 -f "$work" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
cat >"$work/job.ini" <<INI
[cluster]
scheduler_host = 127.0.0.1
scheduler_port = 0
servers = $servers
workers = $workers
heartbeat_interval_ms = 200
heartbeat_timeout_ms = 30000
connect_timeout_ms = 120000
[train]
iterations = $iters
lr = 1
momentum = 0
[scheduling]
partition_size = 64K
INI

t0=$(date +%s)
# shellcheck disable=SC2086
EXACT_WORKER_SIZES=$sizes EXACT_WORKER_EVERY=$every \
	EXACT_WORKER_HOLD=$work/go EXACT_WORKER_HOLD_AT=$((iters - 1)) \
	timeout --kill-after=10 7200 "$build/ps-launch" --config "$work/job.ini" \
	--worker "$build/tests/exact_worker" ${SOAK_SET:-} \
	>"$work/out.log" 2>"$work/err.log" &
job=$!

# sample MILESTONE: appends "milestone pid name kib" for every process
sample() {
	local pid name kib
	for pid in $(pgrep -f "$work"); do
		[ "$pid" = "$job" ] && continue
		name=$(tr '\0' ' ' </proc/$pid/cmdline 2>/dev/null | awk '{print $1}')
		name=${name##*/}
		case $name in ps-scheduler | ps-server | exact_worker) ;; *) continue ;; esac
		kib=$(awk '/^VmRSS:/ {print $2}' /proc/$pid/status 2>/dev/null)
		[ -n "$kib" ] && echo "$1 $pid $name $kib"
	done >>"$work/rss"
}

for ((m = every; m < iters; m += every)); do
	until grep -q "^exact: worker 0 at iteration $m\$" "$work/out.log"; do
		kill -0 $job 2>/dev/null || break 2
		sleep 0.2 # waiting for a line of the job's output
	done
	sample "$m"
done
touch "$work/go" # the workers' last iteration may begin
wait $job
status=$?
t1=$(date +%s)
wrong=$(grep -c "^exact: worker .* 0 wrong$" "$work/out.log")
echo "soak: $workers workers x $servers servers, $iters iterations, tensors $sizes: job status $status, $wrong of $workers workers exact, $((t1 - t0)) s"
[ -s "$work/rss" ] || { echo "soak: no memory samples (the job ended early)"; tail -n 20 "$work/err.log"; exit 1; }
python3 - "$work/rss" "${SOAK_GROWTH_MIB:-8}" "${SOAK_GROWTH_PCT:-10}" <<'PY'
import sys, collections
path, grow_mib, grow_pct = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
rows = collections.OrderedDict()
marks = []
for line in open(path):
    m, pid, name, kib = line.split()
    m = int(m)
    if m not in marks:
        marks.append(m)
    rows.setdefault((name, int(pid)), {})[m] = int(kib) / 1024
print("| process | pid | " + " | ".join("it %d" % m for m in marks) + " | growth MiB (from it %d) |" % marks[min(1, len(marks) - 1)])
print("|---|---:|" + "---:|" * (len(marks) + 1))
bad = []
order = {"ps-scheduler": 0, "ps-server": 1, "exact_worker": 2}
for (name, pid), r in sorted(rows.items(), key=lambda kv: (order.get(kv[0][0], 9), kv[0][1])):
    warm = r.get(marks[min(1, len(marks) - 1)])
    last = r.get(marks[-1])
    g = last - warm if warm is not None and last is not None else None
    print("| %s | %d | %s | %s |" % (name, pid, " | ".join("%.1f" % r[m] if m in r else "-" for m in marks),
                                     "%+.1f" % g if g is not None else "n/a"))
    if g is not None and g > max(grow_mib, warm * grow_pct / 100):
        bad.append("%s pid %d grew %.1f MiB (%.1f -> %.1f)" % (name, pid, g, warm, last))
for role in order:
    gs = [r[marks[-1]] - r[marks[min(1, len(marks) - 1)]] for (n, _), r in rows.items()
          if n == role and marks[-1] in r and marks[min(1, len(marks) - 1)] in r]
    if gs:
        print("%s: %d processes, growth min %+.1f / max %+.1f MiB" % (role, len(gs), min(gs), max(gs)))
if bad:
    print("soak: memory not flat: " + "; ".join(bad))
    sys.exit(1)
print("soak: memory flat (every process within max(%g MiB, %g%%) of its warmed-up RSS)" % (grow_mib, grow_pct))
PY
mem=$?
[ $status -eq 0 ] && [ "$wrong" -eq "$workers" ] && [ $mem -eq 0 ] || {
	[ $status -eq 0 ] || tail -n 20 "$work/err.log"
	exit 1
}
