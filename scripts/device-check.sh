#!/usr/bin/env bash
# scripts/device-check.sh BUNDLE_DIR [--out DIR] [--budget SECONDS] [--steps A,B,...]
#
# Every check of ordo that needs a GPU, an RDMA NIC or many cores, in one
# command, on a machine that has nothing of ordo's dependencies: it runs
# the binaries of a bundle made by scripts/device-bundle.sh (docs/device.md).
# It writes to DIR (default: $OUT, else ./device-results):
#   results.md    the facts of the machine and one section per step, in
#                 Markdown for docs/benchmarks.md, the device named;
#   steps.tsv     step, status (pass, FAIL, skip, timeout), seconds, reason;
#   raw.tar.gz    every step's full log and output files (files over 2 MiB
#                 are named in its left-out.txt instead).
# Each step is guarded: a failure or a timeout is reported and the next step
# runs. A step that cannot run here (no CUDA device, no RDMA device, too
# few cores, no network namespaces) is reported as skipped with the reason.
# The steps share one time budget (--budget, default 420 s): a step gets at
# most what is left, and one that cannot start in time is skipped saying so.
# The exit status is 0 when every step that ran passed, 1 otherwise.
#
# Steps (--steps picks some, in this order):
#   facts            distribution, kernel, driver, CUDA, GPU, cores, memory,
#                    RDMA devices, ports and GIDs, namespaces and tc, memlock
#   cuda_optimizer   test_cuda_optimizer: the kernels bit for bit vs the CPU
#   cuda_no_device   server.device = cuda at start-up
#   cuda_client      device tensors through the client API, exact
#   cuda_exact       server.device = cuda: exactness, momentum = CPU, checkpoints
#   cuda_replay      worker.gradients = cuda replay
#   cuda_paths       bench/cuda_paths.sh: copies vs cudaMemcpy, aggregation, overlap
#                    (with the host push as a burst, then paced)
#   gpu_vs_cpu_large 8 workers x 4 servers of VGG16's tensors on the GPU server:
#                    exact, and momentum bit for bit against the CPU server
#   rdma             transport conformance, ib_write_bw vs ordo, GPUDirect jobs
#   goodput          ordo vs plain ZeroMQ at 1x1, 2x2, 4x4 (needs 8+ cores)
#   security         what security.mode costs: none against sealed, and
#                    against curve with one connection per peer pair and
#                    with several; one message sealed and opened with 0-7
#                    helper threads (needs 8+ cores)
#   ps_bench         ps-bench --quick at 10 Gbit/s undilated (needs 8+ cores
#                    and network namespaces)
# shellcheck disable=SC2317 # the steps run through `bash -c` (the runner)
set -uo pipefail

usage() {
	echo "usage: bash scripts/device-check.sh BUNDLE_DIR [--out DIR] [--budget SECONDS] [--steps A,B,...]" >&2
	exit 2
}
ALL_STEPS="facts cuda_optimizer cuda_no_device cuda_client cuda_exact cuda_replay cuda_paths gpu_vs_cpu_large rdma goodput security ps_bench"
[ $# -ge 1 ] || usage
case $1 in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 && !/shellcheck/ { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
bundle=$(cd "$1" 2>/dev/null && pwd) || { echo "device-check: no bundle directory '$1'" >&2; exit 2; }
shift
out=${OUT:-$PWD/device-results}
budget=${DEVICE_CHECK_BUDGET_S:-420}
steps=$ALL_STEPS
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=${2:?}; shift 2 ;;
	--budget) budget=${2:?}; shift 2 ;;
	--steps) steps=${2:?}; steps=${steps//,/ }; shift 2 ;;
	*) usage ;;
	esac
done
for s in $steps; do
	case " $ALL_STEPS " in *" $s "*) ;; *) echo "device-check: no step '$s' (steps: $ALL_STEPS)" >&2; exit 2 ;; esac
done
[ "$budget" -ge 10 ] 2>/dev/null || { echo "device-check: --budget $budget: at least 10 seconds" >&2; exit 2; }
{ [ -f "$bundle/ELF-LIST" ] && [ -f "$bundle/env.sh" ]; } ||
	{ echo "device-check: $bundle is not a bundle of scripts/device-bundle.sh" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
min_cores=${DEVICE_CHECK_MIN_CORES:-8}
mkdir -p "$out"
out=$(cd "$out" && pwd)
raw=$(mktemp -d /tmp/ordo-device-check.XXXXXX)
trap 'rm -rf "$raw"' EXIT
results=$out/results.md
: >"$out/steps.tsv"
t0=$SECONDS

# The bundle, pointed at where it lies; then its environment
if ! bash "$bundle/relocate.sh" --source "$src" >"$raw/relocate.log" 2>&1; then
	cat "$raw/relocate.log" >&2
	echo "device-check: the bundle could not be relocated" >&2
	exit 1
fi
# shellcheck disable=SC1091 # (the bundle's copy of scripts/device/env.sh)
. "$bundle/env.sh"
B=$bundle/build
cuda_build=0
grep -q '^PS_WITH_CUDA:BOOL=ON' "$B/CMakeCache.txt" && cuda_build=1
rdma_build=0
grep -q '^PS_WITH_RDMA:BOOL=ON' "$B/CMakeCache.txt" && rdma_build=1

# ---------------------------------------------------------------------------
# What a step may need, each a reason to skip or nothing

CUDA_REASON=
cuda_reason() { # the reason the CUDA steps cannot run, or nothing
	if [ $cuda_build = 0 ]; then
		echo "the bundle is not a CUDA build (PS_WITH_CUDA=OFF)"
	else
		# ps-server opens the device before it joins a job
		timeout 60 "$B/ps-server" --set server.device=cuda \
			--set cluster.scheduler_host=127.0.0.1 --set cluster.scheduler_port=1 \
			--set cluster.connect_timeout_ms=1000 >/dev/null 2>"$raw/cuda-probe.log"
		if grep -q 'aggregation and SGD on the GPU' "$raw/cuda-probe.log"; then
			return
		fi
		grep -o 'no CUDA device: .*' "$raw/cuda-probe.log" | head -1 | grep . ||
			echo "ps-server with server.device = cuda: $(tail -1 "$raw/cuda-probe.log")"
	fi
}
active_rdma_dev() { # the first RDMA device with an active port, or nothing
	local d p
	for d in /sys/class/infiniband/*; do
		[ -d "$d" ] || continue
		for p in "$d"/ports/*; do
			grep -q ACTIVE "$p/state" 2>/dev/null && { basename "$d"; return; }
		done
	done
}
rdma_reason() {
	[ "$rdma_build" = 1 ] || { echo "the bundle is not an rdma build (PS_WITH_RDMA=OFF)"; return; }
	[ -z "$(active_rdma_dev)" ] || return
	if [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
		echo "no RDMA device (/sys/class/infiniband is empty or missing)"
	else
		echo "no RDMA device with an active port ($(find /sys/class/infiniband -mindepth 1 -maxdepth 1 -printf '%f ' | sort))"
	fi
}
cores_reason() {
	[ "$(nproc)" -ge "$min_cores" ] ||
		echo "$(nproc) cores here; this step measures a machine of $min_cores or more (DEVICE_CHECK_MIN_CORES)"
}
NETNS_REASON=
netns_reason() { # the probe ps-bench makes: a namespace, a veth pair, tbf
	local ns=ordo-devcheck-$$
	[ "$(id -u)" -eq 0 ] || { echo "not root: network namespaces, veth and tc need root"; return; }
	for t in ip tc; do command -v $t >/dev/null || { echo "'$t' not found (iproute2)"; return; }; done
	ip netns add "$ns" 2>"$raw/netns.err" || { echo "cannot create a network namespace: $(head -1 "$raw/netns.err")"; return; }
	if ! { ip -n "$ns" link add pa type veth peer name pb && ip -n "$ns" link set pa up &&
		tc -n "$ns" qdisc add dev pa root tbf rate 1gbit burst 128kb latency 25ms; } 2>"$raw/netns.err"; then
		ip netns del "$ns" 2>/dev/null
		echo "namespaces work but veth or tc tbf do not: $(head -1 "$raw/netns.err")"
		return
	fi
	ip netns del "$ns"
}

# ---------------------------------------------------------------------------
# The steps. Each writes Markdown to $raw/STEP.md (what goes into
# results.md) and its log to stdout; returns 0, 77 after printing
# "SKIP: reason", or another status for a failure.

step_facts() {
	local md=$raw/facts.md gpu cudav
	gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap,pci.bus_id --format=csv,noheader 2>&1 | head -4)
	cudav=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -1)
	nvidia-smi >"$raw/nvidia-smi.txt" 2>&1
	{
		echo "| fact | value |"
		echo "|---|---|"
		echo "| host | $(uname -n) |"
		# shellcheck disable=SC1091
		echo "| distribution | $( (. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME") || echo unknown) |"
		echo "| kernel | $(uname -srm) |"
		echo "| CPU | $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores |"
		echo "| memory | $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) |"
		echo "| GPU (nvidia-smi) | $(command -v nvidia-smi >/dev/null && echo "${gpu//$'\n'/; }" || echo "no nvidia-smi") |"
		echo "| driver's CUDA version | ${cudav:-unknown} |"
		echo "| libcuda.so.1 | ${BUNDLE_LIBCUDA:-not found} |"
		echo "| ordo's CUDA | ${CUDA_REASON:-the device opens: $(grep -o 'device [0-9]* (.*)' "$raw/cuda-probe.log" 2>/dev/null | head -1)} |"
		echo "| RDMA devices | $(rdma_facts) |"
		echo "| network namespaces, veth, tc tbf | ${NETNS_REASON:-work} |"
		echo "| memlock limit | $(ulimit -l) |"
		echo "| python3 | $(python3 --version 2>&1 | head -1) |"
		echo "| bundle | $(sed -n 's/^source: //p' "$bundle/MANIFEST"), $(sed -n 's/^built: //p' "$bundle/MANIFEST") |"
	} >"$md"
	cat "$md"
	ibv_devinfo -v >"$raw/ibv_devinfo.txt" 2>&1
	ip -br addr >"$raw/ip-addr.txt" 2>&1
	cat /proc/cpuinfo >"$raw/cpuinfo.txt"
	return 0
}
rdma_facts() {
	local d p any=
	for d in /sys/class/infiniband/*; do
		[ -d "$d" ] || continue
		for p in "$d"/ports/*; do
			printf '%s%s port %s: %s, %s, GID 0 %s, %s' "${any:+; }" "$(basename "$d")" \
				"$(basename "$p")" "$(cut -d' ' -f2- "$p/state" 2>/dev/null)" \
				"$(cat "$p/link_layer" 2>/dev/null)" "$(cat "$p/gids/0" 2>/dev/null)" \
				"$(cat "$p/rate" 2>/dev/null)"
			any=1
		done
	done
	[ -n "$any" ] || echo "none (/sys/class/infiniband: $(find /sys/class/infiniband -mindepth 1 -maxdepth 1 2>/dev/null | wc -l) entries)"
}

cuda_test() { # NAME COMMAND...: one of `ctest -L cuda`'s tests, run as CTest runs it
	local name=$1 rc
	shift
	[ -z "$CUDA_REASON" ] || { echo "SKIP: $CUDA_REASON"; return 77; }
	"$@"
	rc=$?
	{
		echo "\`$name\`: $([ "$rc" -eq 0 ] && echo passed || echo "exit $rc")."
		grep -E '^(ok|pass|PASS|this machine):? ' "$raw/$name.log" 2>/dev/null | sed 's/^/    /' | head -40
	} >"$raw/$name.md"
	return "$rc"
}
step_cuda_optimizer() { cuda_test cuda_optimizer "$B/tests/cuda/test_cuda_optimizer"; }
step_cuda_no_device() { cuda_test cuda_no_device bash "$src/tests/cuda/no_device.sh" "$B" "$src"; }
step_cuda_client() { cuda_test cuda_client bash "$src/tests/cuda/client.sh" "$B" "$src"; }
step_cuda_exact() { cuda_test cuda_exact bash "$src/tests/cuda/exact_gpu_server.sh" "$B" "$src"; }
step_cuda_replay() { cuda_test cuda_replay bash "$src/tests/cuda/replay.sh" "$B" "$src"; }

step_cuda_paths() {
	[ -z "$CUDA_REASON" ] || { echo "SKIP: $CUDA_REASON"; return 77; }
	bash "$src/bench/cuda_paths.sh" "$B" >"$raw/cuda_paths.md" || return 1
	# again with the host push paced as the device push hands over
	# (under a credit window the burst is a best case: cuda_paths.sh)
	CUDA_OVERLAP_PACE=1 bash "$src/bench/cuda_paths.sh" "$B" >"$raw/cuda_paths_paced.md" || return 1
	sed -n '/^## Overlap/,$p' "$raw/cuda_paths_paced.md" |
		sed '1s/.*/## Overlap, the host push paced (CUDA_OVERLAP_PACE=1)/' >>"$raw/cuda_paths.md"
}

# VGG16's 32 tensors (138 357 544 parameters, 528 MiB) from its model
# file (DEVICE_CHECK_LARGE_MODEL names another of conf/models/)
large_sizes() {
	python3 -c 'import json, math, sys
m = json.load(open(sys.argv[1]))
print(",".join(str(math.prod(t["shape"])) for t in m["tensors"]))' "$src/conf/models/${DEVICE_CHECK_LARGE_MODEL:-vgg16}.json"
}
step_gpu_vs_cpu_large() {
	[ -z "$CUDA_REASON" ] || { echo "SKIP: $CUDA_REASON"; return 77; }
	command -v python3 >/dev/null || { echo "SKIP: no python3 to read conf/models/vgg16.json"; return 77; }
	local sizes job=$raw/large.ini rc name t n
	sizes=$(large_sizes) || return 1
	cat >"$job" <<-INI
		[cluster]
		scheduler_host = 127.0.0.1
		scheduler_port = 0
		workers = 8
		servers = 4
		heartbeat_interval_ms = 500
		heartbeat_timeout_ms = 30000
		connect_timeout_ms = 60000
		[scheduling]
		partition_size = 4M
		[log]
		level = warn
	INI
	echo "| job | server.device | lr, momentum | iterations | result | seconds |" >"$raw/gpu_vs_cpu_large.md"
	echo "|---|---|---|---:|---|---:|" >>"$raw/gpu_vs_cpu_large.md"
	large() { # NAME DEVICE LR MOMENTUM ITERATIONS
		local t1=$SECONDS
		EXACT_WORKER_SIZES=$sizes EXACT_WORKER_DUMP=$raw/$1.params \
			"$B/ps-launch" --config "$job" --worker "$B/tests/exact_worker" \
			--set server.device="$2" --set train.lr="$3" --set train.momentum="$4" \
			--set train.iterations="$5" >"$raw/$1.out" 2>"$raw/$1.err"
		rc=$?
		echo "$1: exit $rc in $((SECONDS - t1)) s"
		tail -n 5 "$raw/$1.err"
		t=$((SECONDS - t1))
	}
	large exact-cuda cuda 1 0 3
	n=$(grep -c '^exact: .* 0 wrong$' "$raw/exact-cuda.out")
	echo "| exactness (closed form, every value every iteration) | cuda | 1, 0 | 3 | $n of 8 workers exact$([ "$rc" -ne 0 ] && echo ", exit $rc") | $t |" >>"$raw/gpu_vs_cpu_large.md"
	[ "$rc" -eq 0 ] && [ "$n" -eq 8 ] || return 1
	for name in momentum-cpu momentum-cuda; do
		large "$name" "${name#momentum-}" 0.05 0.9 4
		echo "| momentum, final parameters dumped | ${name#momentum-} | 0.05, 0.9 | 4 | exit $rc | $t |" >>"$raw/gpu_vs_cpu_large.md"
		[ "$rc" -eq 0 ] || return 1
	done
	rm -f "$raw/exact-cuda.params"
	if cmp "$raw/momentum-cpu.params" "$raw/momentum-cuda.params"; then
		echo >>"$raw/gpu_vs_cpu_large.md"
		echo "The GPU server's final parameters equal the CPU server's byte for byte ($(stat -c %s "$raw/momentum-cuda.params") bytes, cmp)." >>"$raw/gpu_vs_cpu_large.md"
		rm -f "$raw"/momentum-*.params
		return 0
	fi
	echo >>"$raw/gpu_vs_cpu_large.md"
	echo "**The GPU server's final parameters differ from the CPU server's** ($(cmp -l "$raw/momentum-cpu.params" "$raw/momentum-cuda.params" | wc -l) bytes differ)." >>"$raw/gpu_vs_cpu_large.md"
	rm -f "$raw"/momentum-*.params
	return 1
}

step_rdma() {
	local r addr rdma_dev rc=0
	r=$(rdma_reason)
	[ -z "$r" ] || { echo "SKIP: $r"; return 77; }
	rdma_dev=$(active_rdma_dev)
	addr=$(ip -4 -o addr show 2>/dev/null | awk '$2 != "lo" { sub(/\/.*/, "", $4); print $4; exit }')
	{
		echo "Device $rdma_dev, address ${addr:-none}."
		echo
		echo '```'
		ORDO_TEST_HOST=$addr timeout 120 "$B/tests/transport_conformance" rdma 2>&1 | tail -n 15
		echo '```'
	} >"$raw/rdma.md"
	grep -q 'FAILED\|failed' "$raw/rdma.md" && rc=1
	if command -v ib_write_bw >/dev/null && [ -n "$addr" ]; then
		ORDO_RDMA_ADDR=$addr bash "$src/bench/rdma_goodput.sh" "$B" 1M,4M 1x1,2x2 >>"$raw/rdma.md" || rc=1
	else
		echo "ib_write_bw or an IPv4 address missing: no goodput comparison" >>"$raw/rdma.md"
	fi
	if [ -z "$CUDA_REASON" ]; then
		# device tensors over rdma: GPUDirect RDMA where the NIC takes
		# device memory; the worker's log line says which path it took
		EXACT_WORKER_SIZES=1000,4097 CUDA_WORKER_SIZES=1000,4097,10,1 \
			timeout 120 "$B/ps-launch" --worker "$B/tests/cuda/cuda_client_worker" \
			--set cluster.scheduler_host="$addr" --set cluster.bind_host="$addr" \
			--set cluster.scheduler_port=0 --set transport.type=rdma \
			--set train.lr=1 --set train.momentum=0 --set train.iterations=6 \
			--set scheduling.partition_size=1M --set scheduling.fusion=off \
			>"$raw/gpudirect.out" 2>"$raw/gpudirect.err" || rc=1
		{
			echo
			echo "Device tensors over rdma (2 x 2, cuda_client_worker, exact):"
			echo
			echo '```'
			grep -E '^exact: |GPUDirect|staging|device send buffer' "$raw/gpudirect.out" "$raw/gpudirect.err" | head -20
			echo '```'
		} >>"$raw/rdma.md"
	fi
	return "$rc"
}

step_goodput() {
	local r
	r=$(cores_reason)
	[ -z "$r" ] || { echo "SKIP: $r"; return 77; }
	"$B/bench/bench_goodput" --sizes 1M,16M --bytes 256M --layouts 1x1,2x2,4x4 \
		--rounds 3 >"$raw/goodput.md"
}

step_security() {
	local r
	r=$(cores_reason)
	[ -z "$r" ] || { echo "SKIP: $r"; return 77; }
	MODES="none secret sealed curve:1:1 curve curve:8:8" \
		bash "$src/bench/security_goodput.sh" "$B" 1M,4M 1x1,2x2 3 >"$raw/security.md" || return 1
	# one message's seal and open, by helper threads (the transport uses
	# up to 3): what a 1 x 1 chain pays four times an iteration
	{
		echo
		echo "One message sealed and opened (bench_seal_rate):"
		echo
		"$B/bench/bench_seal_rate" --sizes 256K,1M,4M --helpers 0,1,3,7
	} >>"$raw/security.md"
}

step_ps_bench() {
	local r ref=$src/bench/reference/quick-10g-dilated10-2core.csv
	r=$(cores_reason)
	[ -z "$r" ] || { echo "SKIP: $r"; return 77; }
	[ -z "$NETNS_REASON" ] || { echo "SKIP: $NETNS_REASON"; return 77; }
	command -v python3 >/dev/null || { echo "SKIP: no python3 for ps-bench"; return 77; }
	# undilated first (the truth); then x10 on the same machine if the
	# step's time allows (one x10 run took 95 s on 2 cores)
	python3 "$B/ps-bench" --quick --bandwidths 10 --dilation 1 --out "$raw/ps_bench_x1" || return 1
	ps_bench_md undilated="$raw/ps_bench_x1/results.csv" x10-2-cores="$ref"
	if [ $(($(date +%s) + 150)) -gt "$STEP_DEADLINE" ]; then
		echo "Dilated x10 on this machine: not run, the step's time was spent." >>"$raw/ps_bench.md"
		return 0
	fi
	python3 "$B/ps-bench" --quick --bandwidths 10 --dilation 10 --out "$raw/ps_bench_x10" || return 1
	ps_bench_md undilated="$raw/ps_bench_x1/results.csv" x10="$raw/ps_bench_x10/results.csv" \
		x10-2-cores="$ref"
}
ps_bench_md() { # LABEL=results.csv...: $raw/ps_bench.md
	{
		echo "ResNet-50, 2 workers x 2 servers, every preset (conf/bench/quick.ini), links of"
		echo "10 Gbit/s: undilated on this machine, then (x10) dilated x10 on this machine, and"
		echo "(x10-2-cores) dilated x10 on a 2-core machine (bench/reference/)."
		echo
		python3 "$src/bench/dilation_compare.py" "$@"
		echo
		echo "The undilated report:"
		echo
		sed -n '/^| model | Gbit.s | transport/,/^$/p' "$raw/ps_bench_x1/report.md" | grep -v '| rdma |'
		echo "Each undilated run's busiest thread (share of one core over the measured"
		echo "iterations; every thread in runs/NNN/threads.csv):"
		echo
		python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print("- %s %s: %s" % (r["model"], r["preset"], r.get("busiest_thread") or "-"))' \
			"$raw/ps_bench_x1/runs.csv"
	} >"$raw/ps_bench.md"
}

# ---------------------------------------------------------------------------
# The runner

declare -A TIMEOUT=([facts]=60 [cuda_optimizer]=90 [cuda_no_device]=60
	[cuda_client]=120 [cuda_exact]=240 [cuda_replay]=120 [cuda_paths]=180
	[gpu_vs_cpu_large]=200 [rdma]=240 [goodput]=150 [security]=180
	[ps_bench]=240)
declare -A TITLE=([facts]="The machine" [cuda_optimizer]="test_cuda_optimizer"
	[cuda_no_device]="cuda_no_device" [cuda_client]="cuda_client"
	[cuda_exact]="cuda_exact_gpu_server" [cuda_replay]="cuda_replay"
	[cuda_paths]="CUDA paths (bench/cuda_paths.sh)"
	[gpu_vs_cpu_large]="GPU server vs CPU server, VGG16-sized, 8 workers x 4 servers"
	[rdma]="RDMA" [goodput]="Goodput, ordo vs plain ZeroMQ (loopback TCP)"
	[security]="What security costs: none, secret, sealed, curve with 1, the default and 8 connections per peer pair (MODE:I/O threads:connections)"
	[ps_bench]="ps-bench --quick at 10 Gbit/s, undilated")

CUDA_REASON=$(cuda_reason)
NETNS_REASON=$(netns_reason)
failed=0
{
	echo "# ordo device check: $(uname -n), $(date -u +%Y-%m-%d)"
	echo
	echo "scripts/device-check.sh, budget ${budget} s; bundle $(sed -n 's/^source: //p' "$bundle/MANIFEST")."
	echo
} >"$results"
summary=$raw/summary.md
echo "| step | status | seconds | reason |" >"$summary"
echo "|---|---|---:|---|" >>"$summary"
for s in $steps; do
	left=$((budget - (SECONDS - t0)))
	limit=${TIMEOUT[$s]}
	[ "$limit" -le "$left" ] || limit=$left
	reason='' status=''
	t1=$SECONDS
	if [ "$limit" -lt 10 ]; then
		status=skip reason="the budget of $budget s is spent"
	else
		echo "device-check: $s (at most $limit s)" >&2
		# a step runs in its own process group, so a timeout ends all of it
		STEP_DEADLINE=$(($(date +%s) + limit)) \
			timeout --kill-after=10 "$limit" bash -c "$(declare -f); $(declare -p B src raw bundle CUDA_REASON NETNS_REASON min_cores cuda_build rdma_build 2>/dev/null); step_$s" \
			>"$raw/$s.log" 2>&1
		rc=$?
		case $rc in
		0) status=pass ;;
		77) status=skip reason=$(sed -n 's/^SKIP: //p' "$raw/$s.log" | tail -1) ;;
		124 | 137) status=timeout reason="stopped after $limit s" failed=1 ;;
		*)
			status=FAIL failed=1
			reason=$(grep -E 'FAIL|error|rror:' "$raw/$s.log" | tail -1)
			reason="exit $rc: $(echo "${reason:-$(tail -1 "$raw/$s.log")}" | cut -c1-200)"
			;;
		esac
	fi
	secs=$((SECONDS - t1))
	printf '%s\t%s\t%s\t%s\n' "$s" "$status" "$secs" "$reason" >>"$out/steps.tsv"
	echo "| $s | $status | $secs | ${reason//|/\\|} |" >>"$summary"
	echo "device-check: $s: $status${reason:+ ($reason)} in $secs s" >&2
	{
		echo "## ${TITLE[$s]}"
		echo
		if [ -s "$raw/$s.md" ]; then
			cat "$raw/$s.md"
		elif [ "$status" = skip ]; then
			echo "Skipped: $reason."
		else
			echo "$status; the log's last lines:"
			echo
			echo '```'
			tail -n 25 "$raw/$s.log"
			echo '```'
		fi
		echo
	} >>"$results"
done
{
	echo "## Summary"
	echo
	cat "$summary"
	echo
	echo "$((SECONDS - t0)) s in all."
} >>"$results"
# raw.tar.gz stays small: files over 2 MiB (timelines, parameter dumps)
# stay behind, named in left-out.txt
(cd "$raw" && find . -type f -size +2M -printf '%P %s bytes\n' >left-out.txt)
tar -C "$raw" -czf "$out/raw.tar.gz" --exclude-from=<(cut -d' ' -f1 "$raw/left-out.txt" | sed 's|^|./|') . 2>/dev/null
echo "device-check: $results ($((SECONDS - t0)) s)" >&2
exit $failed
