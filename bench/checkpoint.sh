#!/usr/bin/env bash
# Checkpoints, measured (docs/benchmarks.md, "Checkpoints"):
#  1. write rate: a checkpoint of MODEL (values + momentum, S shards written
#     by S threads as S servers would, manifest last) against dd writing the
#     same bytes with conv=fsync to the same directory, interleaved REPS times;
#  2. the training stall: MODEL replayed on 2 workers x 2 servers with a
#     checkpoint every EVERY iterations against the same job without, the
#     mean iteration time of each, interleaved REPS times; and, read from
#     the servers' logs, how long taking a checkpoint held a server's loop
#     (its momentum copied, references to its values taken) against the
#     mean iteration time: the stall, which the iteration means alone
#     cannot show through this machine's noise.
# Usage: bash bench/checkpoint.sh [BUILD_DIR] [MODEL] [REPS] [DIR]
set -euo pipefail
BUILD=${1:-build-release}
MODEL=${2:-conf/models/vgg16.json}
REPS=${3:-3}
DIR=${4:-$(mktemp -d /var/tmp/ordo-ckpt-bench.XXXXXX)}
trap 'rm -rf "$DIR"/ckpt-* "$DIR"/dd.bin "$DIR"/run-*' EXIT
mkdir -p "$DIR"
echo "# checkpoint write rate: $MODEL, $(df -h "$DIR" | awk 'NR == 2 {print $1 " (" $2 ")"}')"
echo "rep,servers,ckpt_MBps,dd_MBps,ratio"
for rep in $(seq 1 "$REPS"); do
	for s in 1 2; do
		rm -rf "$DIR"/ckpt-*
		line=$("$BUILD/bench/bench_ckpt_write" --model "$MODEL" --dir "$DIR" --servers $s)
		bytes=$(echo "$line" | awk '{print $2}')
		ck=$(echo "$line" | awk '{print $6}')
		rm -rf "$DIR"/ckpt-*
		dd_out=$(dd if=/dev/zero of="$DIR/dd.bin" bs=4M count=$((bytes / 4194304)) conv=fsync 2>&1 | tail -1)
		rm -f "$DIR/dd.bin"
		secs=$(echo "$dd_out" | sed -n 's/.*copied, \([0-9.]*\) s.*/\1/p')
		dd=$(awk -v b=$((bytes / 4194304 * 4194304)) -v s="$secs" 'BEGIN { printf "%.1f", b / s / 1e6 }')
		echo "$rep,$s,$ck,$dd,$(awk -v a="$ck" -v b="$dd" 'BEGIN { printf "%.2f", a / b }')"
	done
done

EVERY=${EVERY:-4}
ITERS=${ITERS:-16}
echo "# training stall: $MODEL replayed, 2 workers x 2 servers, $ITERS iterations, checkpoint every $EVERY"
echo "rep,checkpoints,mean_iteration_ms,checkpoints_written,max_loop_held_ms,held_over_iteration,shard_write_MBps,cow_s_per_server"
job() { # NAME [args]
	local name=$1
	shift
	"$BUILD/ps-launch" --config conf/local.ini --set cluster.workers=2 \
		--set cluster.servers=2 --set worker.mode=replay \
		--set model.file="$MODEL" --set train.iterations="$ITERS" \
		--set cluster.scheduler_port=0 --set log.level=info "$@" \
		>"$DIR/run-$name.log" 2>&1
	# iterations after the first of worker 0
	awk '/^worker 0 iter / { if (n++) { s += $6; k++ } } END { printf "%.1f", s / k }' "$DIR/run-$name.log"
}
# the servers' copy-on-write time, mean per server (a checkpoint's hold on
# the values makes the next update copy them)
cow() { sed -n 's/.*copy-on-write of values .*: \([0-9.]*\) s in all/\1/p' "$1" | awk '{ s += $1 } END { printf "%.3f", s / NR }'; }
for rep in $(seq 1 "$REPS"); do
	rm -rf "$DIR"/ckpt-*
	t=$(job off)
	echo "$rep,off,$t,0,,,,$(cow "$DIR/run-off.log")"
	rm -rf "$DIR"/ckpt-*
	t=$(job on --set checkpoint.dir="$DIR" --set checkpoint.every="$EVERY" --set checkpoint.keep=1)
	held=$(sed -n 's/.*taking it held the loop \([0-9.]*\) ms.*/\1/p' "$DIR/run-on.log" | sort -n | tail -1)
	rate=$(sed -n 's/.* s (\([0-9]*\) MB\/s); taking.*/\1/p' "$DIR/run-on.log" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	echo "$rep,every $EVERY,$t,$(grep -c '^checkpoint: iteration .* complete' "$DIR/run-on.log"),$held,$(awk -v h="$held" -v t="$t" 'BEGIN { printf "%.4f", h / t }'),$rate,$(cow "$DIR/run-on.log")"
done
