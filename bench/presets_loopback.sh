#!/usr/bin/env bash
# Every preset replaying one model on 2 workers x 2 servers over loopback:
# a quick look, not the benchmark (no shaped links, one run per preset,
# the first, slow gradient round included).
#
#   bench/presets_loopback.sh [BUILD_DIR] [MODEL] [ITERATIONS]
#   bench/presets_loopback.sh build conf/models/vgg16.json 6
set -euo pipefail
build=${1:-build}
model=${2:-conf/models/resnet50.json}
iterations=${3:-10}
ini=$(mktemp /tmp/ordo-presets.XXXXXX.ini)
trap 'rm -f "$ini"' EXIT
cat >"$ini" <<INI
[cluster]
scheduler_port = 0
servers = 2
workers = 2
[worker]
mode = replay
[log]
level = warn
INI
echo "| preset | samples/s | mean E | S | straggler effect |"
echo "|---|---:|---:|---:|---:|"
for p in baseline p3 tictac-tio tictac-tao bytescheduler ordo; do
	"$build/ps-launch" --config "$ini" --set model.file="$model" \
		--set scheduling.preset="$p" --set train.iterations="$iterations" \
		2>/dev/null | sed -n "s/^summary: throughput \([0-9.]*\) samples\/s, ordering efficiency E \([-0-9.na]*\) (mean), speedup bound S \([0-9.]*\), straggler effect \([0-9.]*\)$/| $p | \1 | \2 | \3 | \4 |/p"
done
