#!/usr/bin/env bash
# tests/sim/rdma_model.sh - ps-sim's rdma link model from the command line:
# a TCP-vs-RDMA prediction for every preset (link.model = tcp / rdma, the
# JSON names the model in force and its costs), p3's stop-and-wait
# slices gaining from RDMA's smaller per-message cost; transport.type =
# rdma selecting the rdma model (in an RDMA build; refused with the
# build's message elsewhere); perftest output turned into a sweep
# (bench/perftest_sweep.py) whose fit overrides the rdma model; and
# bench_link_sweep --transport rdma saying why it cannot run here.
# Usage: rdma_model.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
src=$2
sim=$build/ps-sim
tmp=$(mktemp -d /tmp/ordo-sim-rdma-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
[ -x "$sim" ] || { echo "skip: $sim not built"; exit 77; }

common=(--set model.file="$src/conf/models/resnet50.json"
	--set cluster.workers=2 --set cluster.servers=2
	--set train.iterations=3 --set metrics.bandwidth_gbps=10
	--set link.sharing=fair)

# --- TCP vs RDMA for every preset -----------------------------------------
for p in baseline tensorflow mxnet p3 tictac-tio tictac-tao bytescheduler ordo; do
	for m in tcp rdma; do
		"$sim" "${common[@]}" --set scheduling.preset=$p \
			--set link.model=$m --json >"$tmp/$p-$m.json" \
			2>"$tmp/err" || fail "$p $m: $(cat "$tmp/err")"
	done
	python3 - "$tmp/$p-tcp.json" "$tmp/$p-rdma.json" "$p" <<'PY' ||
import json, sys
tcp, rdma = (json.load(open(f)) for f in sys.argv[1:3])
assert tcp["link"]["model"] == "tcp" and rdma["link"]["model"] == "rdma"
assert tcp["link"]["latency_us"] == 20 and rdma["link"]["latency_us"] == 2
assert tcp["link"]["bandwidth_gbps"] == 10, tcp["link"]
assert abs(rdma["link"]["bandwidth_gbps"] - 9.7) < 1e-9, rdma["link"]
assert not tcp["link"]["fitted"] and not rdma["link"]["fitted"]
assert tcp["iteration_ms"] > 0 and rdma["iteration_ms"] > 0
assert tcp["iteration_ms"] != rdma["iteration_ms"]
if sys.argv[3] == "p3":  # one 160 KiB slice in flight: a round trip each
    assert rdma["iteration_ms"] < 0.95 * tcp["iteration_ms"], \
        (tcp["iteration_ms"], rdma["iteration_ms"])
PY
		fail "preset $p: TCP vs RDMA"
done

# --- transport.type = rdma: the rdma model, or this build's refusal -------
if "$sim" "${common[@]}" --set transport.type=rdma --json >"$tmp/auto.json" \
	2>"$tmp/err"; then
	grep -q '"model":"rdma"' "$tmp/auto.json" ||
		fail "transport.type=rdma: not the rdma model: $(cat "$tmp/auto.json")"
	"$sim" "${common[@]}" --set transport.type=rdma --set link.model=tcp \
		--json >"$tmp/forced.json" 2>"$tmp/err"
	grep -q '"model":"tcp"' "$tmp/forced.json" ||
		fail "link.model=tcp does not override transport.type=rdma"
else
	grep -q "'rdma' is not in this build" "$tmp/err" ||
		fail "transport.type=rdma refused without the build's reason: $(cat "$tmp/err")"
fi
"$sim" "${common[@]}" --set link.rdma_efficiency=0 >/dev/null 2>"$tmp/err" &&
	fail "link.rdma_efficiency=0 accepted"
grep -q "link.rdma_efficiency" "$tmp/err" || fail "no key in: $(cat "$tmp/err")"

# --- perftest output -> sweep -> fit: overrides the rdma model ------------
cat >"$tmp/lat.txt" <<'TXT'
---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]
 1024    1000          1.50           2.90         3.00        	1.59        	0.03    	1.70    		2.90
 8192    1000          2.20           3.40         10.00        	2.27        	0.03    	2.40    		3.40
---------------------------------------------------------------------------------------
TXT
printf ' #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n 65536      5000   1200.00   1192.09   0.02\n' >"$tmp/bw.txt"
python3 "$src/bench/perftest_sweep.py" --lat "$tmp/lat.txt" --bw "$tmp/bw.txt" \
	--port-gbps 10 --out "$tmp/sweep.csv" 2>"$tmp/err" ||
	fail "perftest_sweep.py: $(cat "$tmp/err")"
grep -q "^# .*10.000 Gbit/s at 65536 B = 1.000 of the port's 10 Gbit/s" "$tmp/sweep.csv" ||
	fail "perftest_sweep.py: no bandwidth note: $(cat "$tmp/sweep.csv")"
grep -q "^8192,1,10$" "$tmp/sweep.csv" || fail "sweep rows: $(cat "$tmp/sweep.csv")"
# 1024 B in 3 us, 8192 B in 10 us: b = 7/7168 us/B (8.192 Gbit/s), a = 2
"$sim" --fit "$tmp/sweep.csv" >"$tmp/fit" 2>"$tmp/err" || fail "--fit: $(cat "$tmp/err")"
grep -q '^latency_us = 2$' "$tmp/fit" || fail "fit a: $(cat "$tmp/fit")"
grep -q '^bandwidth_gbps = 8.192$' "$tmp/fit" || fail "fit b: $(cat "$tmp/fit")"
"$sim" "${common[@]}" --set link.model=rdma --set link.fit_file="$tmp/sweep.csv" \
	--json >"$tmp/fitted.json" 2>"$tmp/err" || fail "fit_file: $(cat "$tmp/err")"
python3 - "$tmp/fitted.json" <<'PY' || fail "the fit does not override the rdma model: $(cat "$tmp/fitted.json")"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["link"]["model"] == "rdma" and o["link"]["fitted"], o["link"]
assert abs(o["link"]["latency_us"] - 2) < 1e-9, o["link"]
assert abs(o["link"]["bandwidth_gbps"] - 8.192) < 1e-9, o["link"]
PY
printf 'nothing\n' >"$tmp/none.txt"
python3 "$src/bench/perftest_sweep.py" --lat "$tmp/none.txt" >/dev/null 2>"$tmp/err" &&
	fail "perftest_sweep.py accepted a file without a table"
grep -q "no perftest table" "$tmp/err" || fail "perftest_sweep.py: $(cat "$tmp/err")"

# --- bench_link_sweep --transport rdma: why it cannot run here ------------
ls=$build/bench/bench_link_sweep
if [ -x "$ls" ] && [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
	"$ls" --transport rdma --host 192.0.2.1 --reps 1 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ $rc -eq 1 ] || fail "bench_link_sweep --transport rdma: exit $rc, want 1"
	grep -q "not in this build\|no usable RDMA device" "$tmp/err" ||
		fail "bench_link_sweep --transport rdma: $(cat "$tmp/err")"
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "ok"
