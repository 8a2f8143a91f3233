#!/usr/bin/env bash
# bench/replay_overhead.sh - what an emulated device costs beyond its ops:
# the jobs of the replay test (tests/integration/replay.sh), one worker and
# one server on loopback, replaying tests/models/chain8.json (16 ops, 100 ms
# in all: tiny tensors, long ops) and tests/models/tinyops.json (400 ops of
# 25 us, 10 ms in all: every sleep's overshoot would show). For iterations
# 2..N (iteration 1 starts with the parameters already there) it reports
# the median, min and max iteration time against the sum of the op times,
# their ratio, and the overhead per op. The test asserts only that no
# iteration is shorter than its ops; how much longer one is, on a given
# machine, is this benchmark's. A benchmark: it reports, it does not assert.
#
#   bench/replay_overhead.sh [BUILD_DIR] [ITERATIONS]   (default build, 30)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
iters=${2:-30}
[ -x "$build/ps-launch" ] || { echo "no $build/ps-launch: build it first" >&2; exit 1; }
[ "$iters" -ge 3 ] || { echo "ITERATIONS must be at least 3" >&2; exit 1; }
ini=$(mktemp /tmp/ordo-replay-overhead.XXXXXX.ini)
out=$(mktemp /tmp/ordo-replay-overhead.XXXXXX.log)
err=$(mktemp /tmp/ordo-replay-overhead.XXXXXX.err)
trap 'rm -f "$ini" "$out" "$err"' EXIT
cat >"$ini" <<INI
[cluster]
scheduler_host = 127.0.0.1
scheduler_port = 0
servers = 1
workers = 1
[worker]
mode = replay
[log]
level = warn
INI
echo "| model | ops | sum of op times ms | iterations | median ms | min ms | max ms | median / sum | overhead per op us |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for model in chain8 tinyops; do
	json=$src/tests/models/$model.json
	read -r nops ops_ms < <(python3 - "$json" <<'PY'
import json, sys
ops = json.load(open(sys.argv[1]))["ops"]
print(len(ops), sum(o["time_us"] for o in ops) / 1000.0)
PY
)
	if ! "$build/ps-launch" --config "$ini" --set model.file="$json" \
		--set train.iterations="$iters" >"$out" 2>"$err"; then
		cat "$err" >&2
		exit 1
	fi
	sed -n "s|^worker 0 iter \([0-9]*\)/$iters time \([0-9.]*\) ms .*|\1 \2|p" "$out" |
		awk '$1 >= 2 { print $2 }' | sort -n |
		awk -v m="$model" -v n="$nops" -v s="$ops_ms" '
			{ t[NR] = $1 }
			END {
				if (NR == 0) { print "| " m " | no iterations reported |"; exit 1 }
				med = NR % 2 ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
				printf "| %s | %d | %.3f | %d | %.3f | %.3f | %.3f | %.3f | %.2f |\n",
					m, n, s, NR, med, t[1], t[NR], med / s, (med - s) * 1000 / n
			}'
done
