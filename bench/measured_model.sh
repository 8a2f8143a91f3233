#!/usr/bin/env bash
# bench/measured_model.sh BUILD_DIR [MODELS] [GBPS] [LAYOUT] - how close a
# model measured by the workers (model/measured.h) comes to the model
# file it was measured from.
#
# For each shipped model (conf/models, comma-separated names; default
# resnet50,inception_v3,transformer,densenet121) and link rate (Gbit/s,
# comma-separated; default 1,10), one replay job of LAYOUT (WxS, default
# 2x2) whose workers replay the model file and measure it as a training
# job would (model.measure_iterations = 5). The scheduler says what ps-sim
# chooses on the file at the start, and on the measured model at the end;
# this prints both side by side:
#   compute      the model's compute per iteration: the file's critical
#                path, and the measured iteration (the replayed ops as
#                they ran: a sleep overshoots by tens of us per op)
#   choice       the auto sizes chosen on each, and ps-sim's iteration
#   cross        ps-sim on the measured model with the file's choice in
#                force (what the file's sizes are worth on the measured
#                model)
# Nothing is shaped: the link rate is the one the choice is made for
# (link.bandwidth_gbps), the jobs themselves run on loopback.
set -euo pipefail
build=$(cd "${1:?usage: bench/measured_model.sh BUILD_DIR [MODELS] [GBPS] [WxS]}" && pwd)
models=${2:-resnet50,inception_v3,transformer,densenet121}
rates=${3:-1,10}
layout=${4:-2x2}
src=$(cd "$(dirname "$0")/.." && pwd)
w=${layout%x*}
s=${layout#*x}
work=$(mktemp -d "${TMPDIR:-/tmp}/ordo-measured.XXXXXX")
trap 'rm -rf "$work"' EXIT

# one row of the table from a job's log
parse=$(cat <<'PY'
import re, sys
log, model, gbps, cp = sys.argv[1:]
text = open(log).read()
start = re.search(r"^scheduling: auto sizes: partition (\S+), (?:push )?credit (\S+?),? (?:params credit \S+ )?\(ps-sim: ([0-9.]+) ms", text, re.M)
meas = re.search(r"^scheduling: measured model: \d+ iteration\(s\) on each of \d+ worker\(s\), ([0-9.]+) ms of compute per iteration; on it, auto sizes: partition (\S+), (?:push )?credit (\S+?),? (?:params credit \S+ )?\(ps-sim: ([0-9.]+) ms.*the sizes in force \(partition \S+, [^)]*\): ([0-9.]+) ms per iteration", text, re.M)
if not start or not meas:
    sys.exit("measured_model: %s at %s Gbit/s: lines not found (the log: "
             "$TMPDIR/measured_model-%s-%s.log)" % (model, gbps, model, gbps))
print("| %s | %s | %.1f / %s | %s, %s: %s | %s, %s: %s | %s |" % (
    model, gbps, float(cp), meas.group(1), start.group(1), start.group(2), start.group(3),
    meas.group(2), meas.group(3), meas.group(4), meas.group(5)))
PY
)

echo "| model | Gbit/s | compute: file / measured, ms | file: choice, ps-sim ms | measured: choice, ps-sim ms | file's choice on the measured model, ms |"
echo "|---|---:|---:|---|---|---:|"
for m in ${models//,/ }; do
	file=$src/conf/models/$m.json
	[ -f "$file" ] || { echo "measured_model: no $file" >&2; exit 2; }
	cp=$("$build/ps-model" stats "$file" | awk '$1 == "critical_path_ms" {print $2}')
	for g in ${rates//,/ }; do
		log=$work/$m-$g.log
		"$build/ps-launch" --set cluster.workers="$w" --set cluster.servers="$s" \
			--set worker.mode=replay --set model.file="$file" \
			--set train.iterations=10 --set model.measure_iterations=5 \
			--set link.bandwidth_gbps="$g" --set cluster.scheduler_port=0 \
			>"$log" 2>&1 ||
			{ echo "measured_model: $m at $g Gbit/s failed: $(tail -n 3 "$log")" >&2; exit 1; }
		python3 -c "$parse" "$log" "$m" "$g" "$cp" ||
			{ cp "$log" "${TMPDIR:-/tmp}/measured_model-$m-$g.log"; exit 1; }
	done
done
