#!/usr/bin/env bash
# bench/fuzz_long.sh FUZZ_BUILD_DIR [RUNS] [HARNESS...] - each libFuzzer
# harness (tests/fuzz) for RUNS executions (default 10 000 000), one after
# the other, from the committed seed corpus into a corpus of its own under
# FUZZ_BUILD_DIR/fuzz-long/NAME. Prints per harness: executions, seconds,
# executions/s, coverage (libFuzzer's cov: edges, ft: features), corpus
# size, and findings (crash-*, leak-*, timeout-*, oom-* files: each must
# become a regression input in tests/fuzz/regressions/NAME, and its fix a
# test). Build first:
#   CC=clang cmake -S . -B build-fuzz -DPS_FUZZ=ON -DPS_SANITIZE=ON \
#       -DPS_BUILD_BENCH=OFF && cmake --build build-fuzz --target ordo_fuzz
set -euo pipefail
build=$(cd "${1:?usage: bench/fuzz_long.sh FUZZ_BUILD_DIR [RUNS] [HARNESS...]}" && pwd)
runs=${2:-10000000}
shift $(($# >= 2 ? 2 : 1))
src=$(cd "$(dirname "$0")/.." && pwd)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(wire config model checkpoint hosts rank keys fit trace rdma seal)
# tmpfs for the checkpoint and keys harnesses' files when there is one
tmp=/dev/shm
[ -d "$tmp" ] && [ -w "$tmp" ] || tmp=${TMPDIR:-/tmp}

echo "| harness | executions | seconds | exec/s | cov (edges) | ft (features) | corpus | findings |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
for name in "${names[@]}"; do
	h=$build/tests/fuzz/fuzz_$name
	[ -x "$h" ] || { echo "fuzz_long: no $h (build ordo_fuzz)" >&2; exit 2; }
	work=$build/fuzz-long/$name
	rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts"
	log=$work/log
	t0=$(date +%s.%N)
	rc=0
	TMPDIR=$tmp "$h" -runs="$runs" -seed=1 -rss_limit_mb=2048 -timeout=60 \
		-print_final_stats=1 -artifact_prefix="$work/artifacts/" \
		"$work/corpus" "$src/tests/fuzz/corpus/$name" >"$log" 2>&1 || rc=$?
	t1=$(date +%s.%N)
	execs=$(sed -n 's/^stat::number_of_executed_units: //p' "$log" | tail -n 1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
	cov=$(sed -E -n 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
	ft=$(sed -E -n 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
	corp=$(sed -E -n 's/.* corp: ([0-9]+\/[0-9]+[a-zA-Z]*).*/\1/p' <<<"$last")
	finds=$(ls "$work/artifacts" | paste -sd, -)
	[ $rc -eq 0 ] || finds="exit $rc: ${finds:-see $log}"
	awk -v n="$name" -v e="${execs:-0}" -v t0="$t0" -v t1="$t1" \
		-v c="${cov:-?}" -v f="${ft:-?}" -v k="${corp:-?}" \
		-v x="${finds:-none}" 'BEGIN {
		printf "| %s | %d | %.0f | %.0f | %s | %s | %s | %s |\n",
			n, e, t1 - t0, e / (t1 - t0), c, f, k, x }'
done
