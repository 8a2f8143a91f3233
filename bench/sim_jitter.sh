#!/usr/bin/env bash
# bench/sim_jitter.sh - how ps-sim's prediction moves with its latency,
# with and without link.latency_jitter: each model with a preset, 2 x 2,
# on the links ps-bench calibrated on a 2-vCPU VM at 1 Gbit/s (tbf's
# bucket, the shared machine; the keys below), at latencies LO..HI in
# STEP us, each jitter. Prints per model and jitter the predictions, their
# spread (max / min - 1) and the largest move between neighbouring
# latencies. A benchmark: it reports, it does not assert.
#
# Usage: bench/sim_jitter.sh [options] [BUILD_DIR]   (default build)
#   --models LIST    comma-separated (default seq32,transformer,vgg16)
#   --preset NAME    (default p3: stop-and-wait, the most sensitive)
#   --jitters LIST   link.latency_jitter values (default 0,0.25,0.5)
#   --latencies LIST link.latency_us values (default
#                    250,255,258,260,260.615,261,262,265,270)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
models=seq32,transformer,vgg16 preset=p3 jitters=0,0.25,0.5
lats=250,255,258,260,260.615,261,262,265,270
while [ $# -gt 0 ]; do
	case $1 in
	--models) models=$2; shift ;;
	--preset) preset=$2; shift ;;
	--jitters) jitters=$2; shift ;;
	--latencies) lats=$2; shift ;;
	--help | -h) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "sim_jitter: unknown option $1 (--help)" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
build=${1:-build}
sim=$build/ps-sim
[ -x "$sim" ] || { echo "sim_jitter: no $sim (build ps-sim)" >&2; exit 2; }
# ps-bench's calibration on the 2-vCPU VM at 1 Gbit/s (docs/benchmarks.md,
# "ps-sim's error at 1 Gbit/s on the shipped models")
links=(--set link.sharing=fair --set link.bandwidth_gbps=0.983341
	--set link.burst_bytes=74536 --set link.burst_gbps=8.59783
	--set sim.machine_gbps=3.71241 --set sim.machine_small_gbps=3.73927
	--set sim.machine_small_bytes=524288
	--set sim.machine_message_us=4.24114
	--set sim.machine_message_min_bytes=8192)
IFS=, read -r -a lat_list <<<"$lats"
echo "| model | jitter | ms at latency ${lats//,/, } us | spread | largest step |"
echo "|---|---:|---|---:|---:|"
for model in ${models//,/ }; do
	file=$model
	[ -f "$file" ] || file=$src/conf/models/$model.json
	for j in ${jitters//,/ }; do
		vals=()
		for lat in "${lat_list[@]}"; do
			v=$("$sim" --set model.file="$file" --set cluster.workers=2 \
				--set cluster.servers=2 --set scheduling.preset="$preset" \
				--set train.iterations=12 "${links[@]}" \
				--set link.latency_us="$lat" --set link.latency_jitter="$j" \
				--json | tail -n 1 | python3 -c \
				'import json,sys; print("%.1f" % json.load(sys.stdin)["iteration_ms"])')
			vals+=("$v")
		done
		python3 - "$model" "$j" "${vals[@]}" <<'PY'
import sys
m, j, v = sys.argv[1], sys.argv[2], [float(x) for x in sys.argv[3:]]
step = max(abs(b / a - 1) for a, b in zip(v, v[1:])) if len(v) > 1 else 0
print("| %s | %s | %s | %.1f %% | %.1f %% |" % (
    m, j, " ".join("%.1f" % x for x in v), (max(v) / min(v) - 1) * 100,
    step * 100))
PY
	done
done
