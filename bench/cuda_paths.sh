#!/usr/bin/env bash
# bench/cuda_paths.sh - ordo's CUDA paths on this machine's GPU
# (docs/benchmarks.md, "CUDA copy path and GPU aggregation"), as Markdown
# on stdout:
#  1. bench/cuda_copy: the device; cudaMemcpy's peak (D2H, H2D, pinned,
#     pageable); the client's per-partition copy path against it; GPU
#     aggregation against a device-to-device copy and the memory's peak;
#  2. the overlap of a device tensor's copies with its sends: jobs of
#     1 worker x 1 server and 2 x 2 on loopback whose workers are
#     bench/cuda_overlap_worker (copies alone, sends alone, pushes from
#     device memory, alternating in every iteration), one row per worker.
# A benchmark: it reports, it asserts nothing. Without a CUDA device it
# prints cuda_copy's "SKIP: no CUDA device: ..." and exits 77.
#
#   bash bench/cuda_paths.sh BUILD_DIR [ps-launch options...]
#
# BUILD_DIR: a -DPS_WITH_CUDA=ON build with the target cuda_bench built
# (cuda_copy, cuda_overlap_worker, ps-launch, ps-scheduler, ps-server).
# The options go to every job (e.g. --set server.device=cuda).
# Environment: QUICK=1 (cuda_copy --quick, 6 iterations), ITERS
# (iterations per job, default 21; the first is not counted), PARTS
# (partition sizes, default "1M 4M"), LAYOUTS (default "1x1 2x2"),
# CUDA_OVERLAP_TENSORS and CUDA_OVERLAP_MIB (the worker's tensors, default
# 4 of 16 MiB), CUDA_OVERLAP_PACE=1 (b's host pushes paced as c hands its
# partitions over: bench/cuda_overlap_worker.c), CUDA_VISIBLE_DEVICES.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: bash bench/cuda_paths.sh BUILD_DIR [ps-launch options...]" >&2; exit 2; }
build=$(cd "$1" 2>/dev/null && pwd) || { echo "cuda_paths.sh: no build directory '$1'" >&2; exit 2; }
shift
for bin in bench/cuda_copy bench/cuda_overlap_worker ps-launch ps-scheduler ps-server; do
	[ -x "$build/$bin" ] || {
		echo "cuda_paths.sh: no $build/$bin: configure with -DPS_WITH_CUDA=ON and build the target cuda_bench" >&2
		exit 2
	}
done
quick=${QUICK:-}
iters=${ITERS:-$([ -n "$quick" ] && echo 6 || echo 21)}
parts=${PARTS:-1M 4M}
layouts=${LAYOUTS:-1x1 2x2}
[ "$iters" -ge 2 ] 2>/dev/null || { echo "cuda_paths.sh: ITERS must be at least 2" >&2; exit 2; }
work=$(mktemp -d /tmp/ordo-cuda-paths.XXXXXX)
trap 'rm -rf "$work"' EXIT

"$build/bench/cuda_copy" ${quick:+--quick} >"$work/copy.md" 2>"$work/copy.err"
rc=$?
if [ $rc -eq 77 ]; then
	cat "$work/copy.md"
	exit 77
fi
if [ $rc -ne 0 ]; then
	cat "$work/copy.md" "$work/copy.err" >&2
	echo "cuda_paths.sh: cuda_copy exited $rc" >&2
	exit 1
fi
echo "# ordo's CUDA paths: $(hostname), $(date -u +%Y-%m-%d)"
echo
cat "$work/copy.md"

# The jobs' base config: loopback, an ephemeral scheduler port, warnings
# only (the workers' result lines go to stdout).
cat >"$work/job.ini" <<INI
[cluster]
scheduler_host = 127.0.0.1
scheduler_port = 0
[log]
level = warn
INI
tensors=${CUDA_OVERLAP_TENSORS:-4}
mib=${CUDA_OVERLAP_MIB:-16}
echo "## Overlap of the copies with the sends"
echo
echo "Every worker: $tensors device tensors and $tensors host tensors of $mib MiB, loopback TCP," \
	"synchronous, $iters iterations (the first not counted), medians; ps-launch options: ${*:-none}${CUDA_OVERLAP_PACE:+; b paced as the hand-overs of c (CUDA_OVERLAP_PACE=$CUDA_OVERLAP_PACE)}." \
	"a: per-partition copies device to pinned host alone; b: push + wait of the host tensors;" \
	"c: ps_client_push_stream + wait of the device tensors; the tail (the parameters' copy to the" \
	"device after c) is not in c. overlap = (a + b - c) / min(a, b): 1 = the copies hidden, 0 = none;" \
	"c - b: per iteration, median and quartiles (about 0 when the copies are hidden, about a when not)." \
	"Every worker of a job shares the one GPU."
echo
echo "| W x S | partition | worker | a: copies ms | copies GB/s | b: sends ms | c: device push ms | tail ms | overlap | c - b ms (quartiles) |"
echo "|:---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for layout in $layouts; do
	w=${layout%x*} s=${layout#*x}
	for p in $parts; do
		name=w${w}s${s}p$p
		if ! timeout --kill-after=10 1200 "$build/ps-launch" --config "$work/job.ini" \
			--worker "$build/bench/cuda_overlap_worker" \
			--set cluster.workers="$w" --set cluster.servers="$s" \
			--set scheduling.partition_size="$p" --set scheduling.fusion=off \
			--set train.iterations="$iters" "$@" \
			>"$work/$name.out" 2>"$work/$name.err"; then
			tail -n 40 "$work/$name.out" "$work/$name.err" >&2
			echo "cuda_paths.sh: the $layout job with partitions of $p failed" >&2
			exit 1
		fi
		n=$(grep -c '^cuda_overlap ' "$work/$name.out")
		[ "$n" -eq "$w" ] || {
			tail -n 40 "$work/$name.out" "$work/$name.err" >&2
			echo "cuda_paths.sh: $n of $w workers reported in the $layout job with partitions of $p" >&2
			exit 1
		}
		grep '^cuda_overlap ' "$work/$name.out" | sort -t= -k2 -n |
			awk -v l="$w x $s" -v p="$p" '{
				for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
				printf "| %s | %s (%d per tensor) | %d | %.3f | %.2f | %.3f | %.3f | %.3f | %.2f | %.3f (%.3f .. %.3f) |\n",
					l, p, v["partitions"], v["worker"], v["copies_ms"], v["copies_gbps"],
					v["sends_ms"], v["device_ms"], v["tail_ms"], v["overlap"],
					v["c_minus_b_ms"], v["c_minus_b_q1_ms"], v["c_minus_b_q3_ms"]
			}'
	done
done
echo
echo "Device: $(sed -n 's/^cuda_overlap_device: //p' "$work"/*.out | sort -u | paste -sd ', ')."
