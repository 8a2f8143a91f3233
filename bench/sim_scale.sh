#!/usr/bin/env bash
# bench/sim_scale.sh - ps-sim at scale: 1024 workers x 64 servers x
# ResNet-50, one iteration (and three, for a steady-state iteration), with
# every preset; reports ps-sim's own wall time and peak RSS (--stats,
# getrusage). The target: under 10 s and 4 GiB per run. A benchmark: it
# reports, it does not assert.
# Usage: bench/sim_scale.sh [BUILD_DIR] [ITERATIONS]   (default build-sim-rel, 1)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-sim-rel}
iters=${2:-1}
sim=$build/ps-sim
[ -x "$sim" ] || { echo "no $sim: build it (cmake --build $build --target ps-sim)" >&2; exit 1; }
echo "| preset | iterations | iteration ms | samples/s | events | wall s | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|"
for p in baseline tensorflow mxnet p3 tictac-tio tictac-tao bytescheduler ordo; do
	out=$("$sim" --set model.file="$src/conf/models/resnet50.json" \
		--set cluster.workers=1024 --set cluster.servers=64 \
		--set train.iterations="$iters" --set scheduling.preset="$p" \
		--json --stats 2>"${TMPDIR:-/tmp}/sim_scale.err")
	stats=$(cat "${TMPDIR:-/tmp}/sim_scale.err")
	python3 - "$p" "$iters" "$out" "$stats" <<'PY'
import json, re, sys
p, iters, out, stats = sys.argv[1:]
o = json.loads(out)
m = re.search(r"wall ([0-9.]+) s, peak RSS ([0-9.]+) MiB, (\d+) events", stats)
print(f"| {p} | {iters} | {o['iteration_ms']:.1f} | {o['samples_per_second']:.0f} | {m.group(3)} | {m.group(1)} | {m.group(2)} |")
PY
done
