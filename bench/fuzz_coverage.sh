#!/usr/bin/env bash
# bench/fuzz_coverage.sh CORPUS_ROOT [COV_BUILD_DIR] - line and branch
# coverage that the fuzz corpora reach in the code each harness targets.
# CORPUS_ROOT/NAME/ holds a harness's corpus (bench/fuzz_long.sh leaves one
# in FUZZ_BUILD_DIR/fuzz-long/NAME/corpus: give FUZZ_BUILD_DIR/fuzz-long
# and this script looks in NAME/corpus too); the committed seeds
# (tests/fuzz/corpus/NAME) are added. Builds the harnesses with clang's
# source-based coverage in COV_BUILD_DIR (default build-fuzzcov), replays
# every input once (-runs=0) and prints llvm-cov's summary for the files
# each harness is about.
set -euo pipefail
root=$(cd "${1:?usage: bench/fuzz_coverage.sh CORPUS_ROOT [COV_BUILD_DIR]}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
cov=${2:-$src/build-fuzzcov}
CC=clang cmake -S "$src" -B "$cov" -DCMAKE_BUILD_TYPE=Debug -DPS_FUZZ=ON \
	-DPS_BUILD_BENCH=OFF \
	-DCMAKE_C_FLAGS="-fprofile-instr-generate -fcoverage-mapping" >/dev/null
cmake --build "$cov" --target ordo_fuzz -j"$(nproc)" >/dev/null
declare -A files=(
	[wire]="proto/wire.c"
	[config]="common/config.c"
	[model]="model/dag.c"
	[checkpoint]="checkpoint/manifest.c checkpoint/checkpoint.c checkpoint/read.c checkpoint/shard.c checkpoint/io.c"
	[hosts]="launch/hosts.c"
	[rank]="launch/rank.c"
	[keys]="transport/keys.c"
	[fit]="sim/fit.c"
	[trace]="common/trace_format.c sim/timeline.c"
	[rdma]="transport/rdma_wire.h"
)
for name in wire config model checkpoint hosts rank keys fit trace rdma; do
	dirs=("$src/tests/fuzz/corpus/$name")
	for d in "$root/$name" "$root/$name/corpus"; do
		[ -d "$d" ] && compgen -G "$d/*" >/dev/null && [ -f "$(ls -d "$d"/* | head -n 1)" ] && dirs+=("$d")
	done
	prof=$cov/$name.profraw
	LLVM_PROFILE_FILE=$prof TMPDIR=/dev/shm "$cov/tests/fuzz/fuzz_$name" -runs=0 \
		"${dirs[@]}" >/dev/null 2>&1
	llvm-profdata merge -sparse "$prof" -o "$cov/$name.profdata"
	echo "== fuzz_$name: $(find "${dirs[@]}" -maxdepth 1 -type f | wc -l) inputs"
	paths=()
	for f in ${files[$name]}; do paths+=("$src/$f"); done
	llvm-cov report "$cov/tests/fuzz/fuzz_$name" -instr-profile="$cov/$name.profdata" \
		"${paths[@]}" | sed -e "s|$src/||"
done
