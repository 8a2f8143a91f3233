#!/usr/bin/env bash
# bench/torch_measured.sh BUILD_DIR [MODEL] [REPETITIONS] [TORCH_BENCH ARGS...]
# - a PyTorch job's first start against its next one, which chooses its
# partition and credit from the model the first measured (model/measured.h,
# docs/auto-sizes.md).
#
# Each repetition runs bench/torch_bench.py twice on the same emulated
# hosts and links (its namespaces, its slowed links; the ordo preset, the
# separate layout, no DDP): first with an empty checkpoint.dir (the
# fallback sizes; the job measures its model and writes it there), then
# with that checkpoint.dir (the sizes ps-sim chooses on the measured
# model). Prints per repetition both runs' samples/s, the sizes each ran
# with, and their ratio; then the median ratio (on stderr: each run's link
# rate; pass --bandwidth-gbps or --cpu-ms to keep it the same in every
# run, as torch_bench.py otherwise calibrates each run anew). Needs root (network
# namespaces) and /usr/bin/python3 with torch and torchvision.
set -euo pipefail
build=$(cd "${1:?usage: bench/torch_measured.sh BUILD_DIR [MODEL] [REPETITIONS] [TORCH_BENCH ARGS...]}" && pwd)
model=${2:-resnet18}
reps=${3:-3}
shift $(($# >= 3 ? 3 : $#))
extra=("$@") # more torch_bench.py arguments
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ordo-torch-measured.XXXXXX")
trap 'rm -rf "$work"' EXIT

# run NAME CKPT_DIR: one torch_bench run; prints "samples/s sizes"
run() {
	local out=$work/$1
	python3 "$src/bench/torch_bench.py" --bin-dir "$build" --models "$model" \
		--presets ordo --layouts separate --no-ddp --repetitions 1 \
		--set checkpoint.dir="$2" --out "$out" "${extra[@]}" >"$out.log" 2>&1 ||
		{ echo "torch_measured: run $1 failed: $(tail -n 5 "$out.log")" >&2; exit 1; }
	local sps sizes
	sps=$(awk -F, 'NR > 1 && $6 == "ok" {print $7}' "$out/runs.csv")
	sizes=$(grep -h "^scheduling: auto sizes: " "$out"/runs/*/*.log 2>/dev/null |
		head -n 1 | sed -E 's/^scheduling: auto sizes: (partition [^(]*) \(.*/\1/')
	[ -n "$sps" ] || { echo "torch_measured: run $1: no samples/s in $out/runs.csv" >&2; exit 1; }
	grep -o "links at [0-9.e+]* Gbit/s" "$out.log" | head -n 1 | sed "s/^/run $1: /" >&2
	echo "$sps|$sizes"
}

echo "| repetition | first start: samples/s (sizes) | next start: samples/s (sizes) | next / first |"
echo "|---:|---|---|---:|"
ratios=()
for r in $(seq 1 "$reps"); do
	ck=$work/ck-$r
	mkdir -p "$ck"
	a=$(run "first-$r" "$ck")
	[ -f "$ck/measured-model.json" ] ||
		{ echo "torch_measured: the first start wrote no measured model" >&2; exit 1; }
	b=$(run "next-$r" "$ck")
	ratio=$(awk -v x="${a%%|*}" -v y="${b%%|*}" 'BEGIN {printf "%.3f", y / x}')
	ratios+=("$ratio")
	echo "| $r | ${a%%|*} (${a#*|}) | ${b%%|*} (${b#*|}) | $ratio |"
done
printf '%s\n' "${ratios[@]}" | sort -n |
	awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
		printf "median next / first: %.3f over %d repetitions\n", m, NR}'
