#!/usr/bin/env bash
# bench/rdma_goodput.sh BUILD_DIR [SIZES] [LAYOUTS] - ordo's rdma push+pull goodput
# against perftest's ib_write_bw, on the same RDMA device in the same run.
#
# On a host with an RDMA device, run it there. Without one, it boots the
# project's Soft-RoCE VM (scripts/rdma-vm) and runs inside it, on rxe0:
# the ratio is then one of an emulator (TCG, rxe in software) - it shows
# how the transport compares with verbs at their plainest on the same
# device, never how fast RDMA is.
#
# BUILD_DIR: a -DPS_WITH_RDMA=ON build with bench_goodput (a Release build
# for numbers). SIZES: default 1M,4M. For each size: ib_write_bw (RDMA
# WRITE, one QP, its default window, -n iterations) between two processes
# on the device, and bench_goodput over transport.type = rdma for each
# layout W x S in LAYOUTS (default 1x1,2x2: every worker pushes SIZE to
# every server and gets the parameters back per iteration, three rounds,
# the median). 1 x 1 is one round trip at a time, where ib_write_bw keeps
# a window of WRITEs in flight; 2 x 2 has four streams. Prints a Markdown
# table: MB/s each and ordo / ib_write_bw.
set -euo pipefail
build=$(cd "${1:?usage: bench/rdma_goodput.sh BUILD_DIR [SIZES] [LAYOUTS]}" && pwd)
sizes=${2:-1M,4M}
layouts=${3:-1x1,2x2}
src=$(cd "$(dirname "$0")/.." && pwd)
addr=${ORDO_RDMA_ADDR:-192.0.2.1}

[ -x "$build/bench/bench_goodput" ] ||
	{ echo "rdma_goodput: no $build/bench/bench_goodput" >&2; exit 2; }
command -v ib_write_bw >/dev/null ||
	{ echo "rdma_goodput: ib_write_bw missing (apt-get install perftest)" >&2; exit 2; }

if [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
	if [ "${ORDO_RDMA_VM:-0}" = 1 ]; then
		echo "rdma_goodput: no RDMA device inside the VM" >&2
		exit 1
	fi
	echo "rdma_goodput: no RDMA device here: running in the Soft-RoCE VM" >&2
	bash "$src/scripts/rdma-vm/rdma-vm.sh" setup >/dev/null
	cd "$build"
	exec bash "$src/scripts/rdma-vm/rdma-vm.sh" run -t 900 -- \
		bash "$src/bench/rdma_goodput.sh" "$build" "$sizes" "$layouts"
fi

dev=$(ls /sys/class/infiniband | head -n 1)
bytes_of() {
	case $1 in
	*K) echo $(( ${1%K} * 1024 )) ;;
	*M) echo $(( ${1%M} * 1048576 )) ;;
	*) echo "$1" ;;
	esac
}

# ib_write_bw's client's average MB/s for size $1 (the server on the same
# device; the client retries until the server's out-of-band port answers).
write_bw() {
	local size=$1 port=$((18515 + RANDOM % 1000)) out
	ib_write_bw -d "$dev" -x 1 -F -s "$size" -n 200 -p "$port" >/dev/null 2>&1 &
	local server=$!
	for _ in $(seq 100); do
		if out=$(ib_write_bw -d "$dev" -x 1 -F -s "$size" -n 200 \
			-p "$port" "$addr" 2>/dev/null); then
			wait "$server" || true
			echo "$out" | awk -v s="$size" '$1 == s { print $4 }'
			return 0
		fi
		kill -0 "$server" 2>/dev/null || break
		sleep 0.2 # the server's port is not open yet: retry
	done
	kill "$server" 2>/dev/null || true
	echo "rdma_goodput: ib_write_bw -s $size failed" >&2
	return 1
}

echo "rdma_goodput: device $dev, address $addr$([ "${ORDO_RDMA_VM:-0}" = 1 ] && echo ' (Soft-RoCE in a TCG VM: an emulator, not RDMA speed)')"
echo
echo "| size | layout | ib_write_bw MB/s | ordo rdma MB/s | ordo / ib_write_bw |"
echo "|---:|:---:|---:|---:|---:|"
IFS=, read -ra list <<<"$sizes"
IFS=, read -ra lays <<<"$layouts"
for s in "${list[@]}"; do
	b=$(bytes_of "$s")
	ib=$(write_bw "$b")
	for lay in "${lays[@]}"; do
		row=$("$build/bench/bench_goodput" --sizes "$s" --layouts "$lay" \
			--bytes 256M --rounds 3 --set transport.type=rdma \
			--set cluster.bind_host="$addr" \
			--set cluster.scheduler_host="$addr" | grep '^| [0-9]')
		ordo=$(echo "$row" | awk -F'|' '{ gsub(/ /, "", $6); print $6 }')
		# ib_write_bw reports MiB/s (MB/sec in its header: 2^20 bytes)
		python3 - "$s" "$lay" "$ib" "$ordo" <<'PYEOF'
import sys
s, lay, ib, ordo = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
ib_mb = ib * 1048576 / 1e6  # bench_goodput's MB/s are 10^6 bytes
print("| %s | %s | %.0f | %.0f | %.2f |" % (s, lay, ib_mb, ordo, ordo / ib_mb))
PYEOF
	done
done
