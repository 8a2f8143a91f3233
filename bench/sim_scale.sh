#!/usr/bin/env bash
# bench/sim_scale.sh - ps-sim at scale: ResNet-50 with every preset, one
# iteration (or more), reporting ps-sim's own wall time and peak RSS
# (--stats, getrusage). A benchmark: it reports, it does not assert.
#
# Usage: bench/sim_scale.sh [options] [BUILD_DIR] [ITERATIONS]
#   (default build-sim-rel, 1)
#   --fair            link.sharing = fair (per-pair streams sharing the links
#                     max-min fairly) at --sizes; without it, fifo links at
#                     1024 x 64 (the original run: under 10 s and 4 GiB)
#   --sizes LIST      WxS,... (default with --fair: 1024x64,4096x256,8192x512)
#   --presets LIST    comma-separated (default: every preset)
#   --sim BINARY      the ps-sim to run (default BUILD_DIR/ps-sim), e.g. an
#                     older build to compare
#   --timeout S       give up on a run after S seconds (default 600)
#
# A run that times out is reported as "> S"; one the binary refuses (an
# older ps-sim allowed at most 4096 workers) as "refused".
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
fair=0 sizes="" presets="baseline,tensorflow,mxnet,p3,tictac-tio,tictac-tao,bytescheduler,ordo"
sim="" limit=600
while [ $# -gt 0 ]; do
	case $1 in
	--fair) fair=1 ;;
	--sizes) sizes=$2; shift ;;
	--presets) presets=$2; shift ;;
	--sim) sim=$2; shift ;;
	--timeout) limit=$2; shift ;;
	--help | -h) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
build=${1:-$src/build-sim-rel}
iters=${2:-1}
sim=${sim:-$build/ps-sim}
[ -x "$sim" ] || { echo "no $sim: build it (cmake --build $build --target ps-sim)" >&2; exit 1; }
if [ "$fair" = 1 ]; then
	sizes=${sizes:-1024x64,4096x256,8192x512}
	sharing=fair
else
	sizes=${sizes:-1024x64}
	sharing=fifo
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sim_scale.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "ps-sim: $sim; link.sharing = $sharing; ResNet-50, $iters iteration(s); $(nproc) CPUs"
echo "| workers x servers | preset | makespan ms | iteration ms | events | wall s | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|"
for size in ${sizes//,/ }; do
	w=${size%x*} s=${size#*x}
	for p in ${presets//,/ }; do
		rc=0
		timeout "$limit" "$sim" --set model.file="$src/conf/models/resnet50.json" \
			--set cluster.workers="$w" --set cluster.servers="$s" \
			--set train.iterations="$iters" --set scheduling.preset="$p" \
			--set link.sharing="$sharing" \
			--json --stats >"$tmp/out" 2>"$tmp/err" || rc=$?
		python3 - "$w x $s" "$p" "$rc" "$limit" "$tmp/out" "$tmp/err" <<'PY'
import json, re, sys
size, p, rc, limit, out, err = sys.argv[1:]
rc = int(rc)
stats = open(err).read()
if rc == 124:
    print(f"| {size} | {p} | | | | > {limit} | |")
    sys.exit(0)
if rc != 0:
    why = "refused" if "out of range" in stats else f"failed ({rc})"
    print(f"| {size} | {p} | {why} | | | | |")
    sys.exit(0)
o = json.loads(open(out).read())
m = re.search(r"wall ([0-9.]+) s, peak RSS ([0-9.]+) MiB, (\d+) events", stats)
print(f"| {size} | {p} | {o['makespan_ms']:.1f} | {o['iteration_ms']:.1f} | "
      f"{m.group(3)} | {float(m.group(1)):.1f} | {float(m.group(2)):.0f} |")
PY
	done
done
