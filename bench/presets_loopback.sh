#!/usr/bin/env bash
# Every preset replaying one model on 2 workers x 2 servers over loopback:
# a quick look, not the benchmark (no shaped links, one run per preset,
# the first, slow gradient round included). The last two columns are the
# cost of the gate inside the real senders (scheduling/gate_meter.h): ns of
# gate calls per transfer released, averaged over the servers' parameter
# sends and over the workers' pushes.
#
#   bench/presets_loopback.sh [BUILD_DIR] [MODEL] [ITERATIONS]
#   bench/presets_loopback.sh build conf/models/vgg16.json 6
set -euo pipefail
build=${1:-build}
model=${2:-conf/models/resnet50.json}
iterations=${3:-10}
ini=$(mktemp /tmp/ordo-presets.XXXXXX.ini)
log=$(mktemp /tmp/ordo-presets.XXXXXX.log)
trap 'rm -f "$ini" "$log"' EXIT
cat >"$ini" <<INI
[cluster]
scheduler_port = 0
servers = 2
workers = 2
[worker]
mode = replay
[log]
level = info
INI
# mean of "gate: N WHAT, X ns each" over the processes that printed it
gate_ns() {
	sed -n "s/.*gate: [0-9]* $1, \([0-9]*\) ns each.*/\1/p" "$log" |
		awk '{ s += $1; n++ } END { if (n) printf "%.0f", s / n; else printf "-" }'
}
echo "| preset | samples/s | mean E | S | straggler effect | gate ns/send (servers) | gate ns/push (workers) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for p in baseline tensorflow mxnet p3 tictac-tio tictac-tao bytescheduler ordo; do
	row=$("$build/ps-launch" --config "$ini" --set model.file="$model" \
		--set scheduling.preset="$p" --set train.iterations="$iterations" \
		2>"$log" | sed -n "s/^summary: throughput \([0-9.]*\) samples\/s, ordering efficiency E \([-0-9.na]*\) (mean), speedup bound S \([0-9.]*\), straggler effect \([0-9.]*\)$/| $p | \1 | \2 | \3 | \4 |/p")
	echo "$row $(gate_ns sends) | $(gate_ns pushes) |"
done
