#!/usr/bin/env bash
# bench/dst_seeds.sh BUILD_DIR [SEEDS] [FIRST] - deterministic simulation
# testing at scale: SEEDS (default 100000) random jobs through the protocol
# core (tests/dst/dst.c), split over the machine's cores. Prints each
# part's summary, any failing seed with the command that replays it, and
# the wall time.
set -u
build=${1:?usage: bench/dst_seeds.sh BUILD_DIR [SEEDS] [FIRST]}
seeds=${2:-100000}
first=${3:-1}
dst=$build/tests/dst
[ -x "$dst" ] || { echo "no $dst: build with -DPS_BUILD_TESTS=ON" >&2; exit 2; }
cores=$(nproc)
per=$(((seeds + cores - 1) / cores))
start=$(date +%s.%N)
pids=()
out=$(mktemp -d)
for ((c = 0; c < cores; c++)); do
	f=$((first + c * per))
	n=$per
	[ $((f + n)) -gt $((first + seeds)) ] && n=$((first + seeds - f))
	[ "$n" -le 0 ] && break
	"$dst" --first "$f" --seeds "$n" >"$out/$c" 2>&1 &
	pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
end=$(date +%s.%N)
cat "$out"/*
rm -rf "$out"
awk -v s="$start" -v e="$end" -v n="$seeds" \
	'BEGIN { printf "dst_seeds: %d seeds in %.1f s on %d cores\n", n, e - s, '"$cores"' }'
exit $status
