#!/usr/bin/env bash
# tests/sim/cli.sh - ps-sim's command line: JSON output (one object, the
# keys ps-bench reads), determinism (same config -> identical JSON), the
# timeline, --fit, --fair-check, 8192 workers simulated where a job of that
# many nodes is refused, and every bad input failing with a clear message
# and a non-zero status, never a crash.
# Usage: cli.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
src=$2
sim=$build/ps-sim
tmp=$(mktemp -d /tmp/ordo-sim-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect STATUS PATTERN -- ARGS: the run exits STATUS and stderr matches
expect() {
	local want=$1 pat=$2
	shift 3
	"$sim" "$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "ps-sim $*: exit $rc, want $want; stderr: $(cat "$tmp/err")"
	elif ! grep -q -- "$pat" "$tmp/err"; then
		fail "ps-sim $*: stderr does not match '$pat': $(cat "$tmp/err")"
	fi
}

model=$src/conf/models/resnet50.json
common=(--set model.file="$model" --set cluster.workers=4
	--set cluster.servers=2 --set train.iterations=3)

# --- JSON: one object with the keys the benchmark reads -----------------
for p in baseline tensorflow mxnet p3 tictac-tio tictac-tao bytescheduler ordo; do
	if ! "$sim" "${common[@]}" --set scheduling.preset=$p --json \
		>"$tmp/$p.json" 2>"$tmp/err"; then
		fail "preset $p: $(cat "$tmp/err")"
		continue
	fi
	python3 - "$tmp/$p.json" "$p" <<'PY' || fail "preset $p: bad JSON"
import json, sys
text = open(sys.argv[1]).read()
obj = json.loads(text)               # exactly one JSON value
assert isinstance(obj, dict), "not an object"
for k in ["iteration_ms", "samples_per_second", "efficiency", "straggler",
          "worst_ms", "lower_ms", "speedup_bound", "physical_lower_ms",
          "iterations", "workers", "servers", "preset"]:
    assert k in obj, "missing key " + k
assert obj["preset"] == sys.argv[2], obj["preset"]
assert obj["workers"] == 4 and obj["servers"] == 2 and obj["iterations"] == 3
assert obj["iteration_ms"] > 0 and obj["samples_per_second"] > 0
assert obj["lower_ms"] <= obj["makespan_ms"] <= obj["worst_ms"]
assert 4 <= obj["partition_size"] <= 1 << 40   # chosen, never "auto"
PY
	# ordo's sizes are auto: chosen first, and said on stderr
	if [ "$p" = ordo ]; then
		grep -q '^scheduling: auto sizes: partition .* (ps-sim: .* on 4 x 2 ' \
			"$tmp/err" || fail "ordo: no auto sizes line on stderr"
	fi
done

# --- each direction's partition size reaches the simulation: parameters
# in pieces change the prediction and are said in the JSON --------------
"$sim" "${common[@]}" --set scheduling.preset=p3 --json >"$tmp/p3.json" 2>/dev/null
"$sim" "${common[@]}" --set scheduling.preset=p3 \
	--set scheduling.params_partition_size=16K --json >"$tmp/p3p.json" 2>/dev/null ||
	fail "p3 with parameter pieces: ps-sim failed"
python3 - "$tmp/p3.json" "$tmp/p3p.json" <<'PY' || fail "parameter pieces not carried into ps-sim"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert b["push_partition_size"] == 160 * 1024 and b["params_partition_size"] == 16 * 1024, b
assert b["partition_size"] == 160 * 1024
assert b["messages"] > a["messages"], (a["messages"], b["messages"])
assert b["iteration_ms"] != a["iteration_ms"]
PY
"$sim" "${common[@]}" --set scheduling.preset=tictac-tio \
	--set scheduling.params_partition_size=16K --json >"$tmp/bad.json" 2>"$tmp/err" &&
	fail "the counter gate with parameter pieces was not refused"
grep -q "params_gate = counter releases whole partitions" "$tmp/err" ||
	fail "the counter gate with pieces: no reason given ($(cat "$tmp/err"))"

# --- determinism: the same config twice gives the same bytes ------------
"$sim" "${common[@]}" --set scheduling.preset=ordo --json >"$tmp/again.json" \
	2>/dev/null
cmp -s "$tmp/ordo.json" "$tmp/again.json" ||
	fail "two runs of the same config differ"

# --- text output and the timeline ----------------------------------------
mkdir -p "$tmp/out-dir"
# a run's directory: its measured timeline stays as it was
echo '[{"measured": true}]' >"$tmp/out-dir/timeline.json"
if "$sim" "${common[@]}" --set output.dir="$tmp/out-dir" >"$tmp/text" \
	2>"$tmp/err"; then
	[ "$(cat "$tmp/out-dir/timeline.json")" = '[{"measured": true}]' ] ||
		fail "ps-sim overwrote the run's timeline.json"
	grep -q '^summary: iteration .* ms, throughput .* samples/s' \
		"$tmp/text" || fail "no summary line"
	grep -q '^iter 3/3 time' "$tmp/text" || fail "no per-iteration lines"
	python3 - "$tmp/out-dir/sim-timeline.json" <<'PY' || fail "bad timeline"
import json, sys
ev = json.load(open(sys.argv[1]))
names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
assert "worker 0" in names and "server 1" in names, names
lanes = {(e["pid"], e["tid"]) for e in ev if e["ph"] in "Xi"}
assert any(e["ph"] == "X" and e["tid"] == 1 for e in ev)   # compute
assert any(e["ph"] == "X" and e["tid"] == 3 for e in ev)   # push
assert any(e["ph"] == "X" and e["tid"] == 6 for e in ev)   # send
assert any(e["ph"] == "i" and e["tid"] == 4 for e in ev)   # receive
PY
else
	fail "timeline run: $(cat "$tmp/err")"
fi

# output.dir is created where it does not exist (as ps-launch does), and
# one that names a file is refused, by name
"$sim" "${common[@]}" --set output.dir="$tmp/new/a/b" --json >/dev/null \
	2>"$tmp/err" || fail "new output.dir: $(cat "$tmp/err")"
[ -s "$tmp/new/a/b/sim-timeline.json" ] || fail "no timeline in a new output.dir"
: >"$tmp/a-file"
"$sim" "${common[@]}" --set output.dir="$tmp/a-file" --json >/dev/null \
	2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "output.dir naming a file: exit $rc"
grep -q "^ps-sim: error: output.dir: cannot create the directory $tmp/a-file: Not a directory" \
	"$tmp/err" || fail "output.dir naming a file: $(cat "$tmp/err")"

# --- fit mode ----------------------------------------------------------------
printf 'bytes,concurrency,us\n1000,1,30\n2000,1,50\n4000,1,90\n2000,2,120\n' \
	>"$tmp/sweep.csv"
"$sim" --fit "$tmp/sweep.csv" >"$tmp/fit" 2>"$tmp/err" ||
	fail "--fit: $(cat "$tmp/err")"
grep -q '^latency_us = 10$' "$tmp/fit" || fail "--fit a: $(cat "$tmp/fit")"
grep -q '^bandwidth_gbps = 0.4$' "$tmp/fit" || fail "--fit b: $(cat "$tmp/fit")"
grep -q '^gamma = 1.5$' "$tmp/fit" || fail "--fit gamma: $(cat "$tmp/fit")"
# link.fit_file: the fitted model is used (0.4 Gbit/s)
"$sim" "${common[@]}" --set link.fit_file="$tmp/sweep.csv" --json \
	>"$tmp/fitted.json" 2>"$tmp/err" || fail "fit_file: $(cat "$tmp/err")"
grep -q '"bandwidth_gbps":0.4' "$tmp/fitted.json" ||
	fail "fit_file not applied: $(cat "$tmp/fitted.json")"

# --- fair sharing: --fair-check, and more workers than a job can run ---------
"$sim" "${common[@]}" --set scheduling.preset=p3 --set link.sharing=fair \
	--set cluster.workers=12 --fair-check --json >"$tmp/check.json" \
	2>"$tmp/err" || fail "--fair-check: $(cat "$tmp/err")"
grep -q '^fair check: incremental and full recomputation give the same run' \
	"$tmp/err" || fail "--fair-check said: $(cat "$tmp/err")"
# ... and the run is deterministic: the same bytes again
"$sim" "${common[@]}" --set scheduling.preset=p3 --set link.sharing=fair \
	--set cluster.workers=12 --json >"$tmp/check2.json" 2>/dev/null
cmp -s "$tmp/check.json" "$tmp/check2.json" ||
	fail "two runs of a fair job differ"
# ps-sim simulates 8192 workers x 512 servers (a tiny model: seconds) ...
printf '%s' '{"format":"ordo-model","version":1,"name":"tiny","batch":1,
"times":{"source":"measured"},"tensors":[{"name":"w","shape":[1000]}],
"ops":[{"name":"f","kind":"forward","time_us":10,"reads":["w"],"deps":[]},
{"name":"b","kind":"backward","time_us":10,"grads":["w"],"deps":["f"]}]}' \
	>"$tmp/tiny.json"
"$sim" --set model.file="$tmp/tiny.json" --set cluster.workers=8192 \
	--set cluster.servers=512 --set train.iterations=1 \
	--set link.sharing=fair --json >"$tmp/wide.json" 2>"$tmp/err" ||
	fail "8192 x 512: $(cat "$tmp/err")"
grep -q '"workers":8192,"servers":512' "$tmp/wide.json" ||
	fail "8192 x 512: $(cat "$tmp/wide.json")"
# ... but a job of more than 8192 nodes does not start, naming the keys
if [ -x "$build/ps-scheduler" ]; then
	"$build/ps-scheduler" --set cluster.workers=8192 \
		--set cluster.servers=512 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq 2 ] && grep -q 'cluster.workers (8192) + cluster.servers (512) + the scheduler = 8705 nodes: a job runs at most 8192' "$tmp/err" ||
		fail "ps-scheduler with 8705 nodes: exit $rc: $(cat "$tmp/err")"
fi

# --- bad inputs: a clear message and a non-zero status -----------------------
expect 1 "cannot load model.file: .*nope.json" -- --set model.file="$tmp/nope.json"
expect 2 "model.file is not set" --
expect 2 "unknown key 'link.bogus'" -- "${common[@]}" --set link.bogus=1
expect 2 "link.latency_us" -- "${common[@]}" --set link.latency_us=-5
expect 2 "link.gamma" -- "${common[@]}" --set link.gamma=abc
expect 2 "cluster.workers: '8193' is out of range \\[1, 8192\\]" -- "${common[@]}" \
	--set cluster.workers=8193
expect 1 "link.burst_bytes = 65536 needs link.sharing = fair" -- "${common[@]}" \
	--set link.burst_bytes=65536
expect 2 "link.burst_bytes" -- "${common[@]}" --set link.burst_bytes=-1
expect 1 "sim.machine_gbps = 4 needs link.sharing = fair" -- "${common[@]}" \
	--set sim.machine_gbps=4
expect 1 "sim.machine_small_gbps = 8 needs sim.machine_gbps" -- "${common[@]}" \
	--set link.sharing=fair --set sim.machine_small_gbps=8
expect 1 "sim.machine_message_us = 20 needs sim.machine_gbps" -- "${common[@]}" \
	--set link.sharing=fair --set sim.machine_message_us=20
expect 1 "cannot open the link sweep '$tmp/missing.csv'" -- "${common[@]}" \
	--set link.fit_file="$tmp/missing.csv"
printf 'bytes,concurrency,us\n1000,1,30\n2000,one,50\n' >"$tmp/garbled.csv"
expect 1 "garbled.csv:3: column 'concurrency'" -- --fit "$tmp/garbled.csv"
expect 1 "garbled.csv:3: column 'concurrency'" -- "${common[@]}" \
	--set link.fit_file="$tmp/garbled.csv"
head -c 3000 /dev/urandom >"$tmp/binary.csv"
expect 1 "binary.csv" -- --fit "$tmp/binary.csv"
chmod 000 "$tmp/sweep.csv"
if [ "$(id -u)" -ne 0 ]; then
	expect 1 "cannot open the link sweep" -- --fit "$tmp/sweep.csv"
fi
printf '{"format":"ordo-model","version":1,' >"$tmp/cut.json"
expect 1 "cannot load model.file: .*cut.json" -- --set model.file="$tmp/cut.json"
expect 1 "train.iterations must be at least 1" -- "${common[@]}" \
	--set train.iterations=0

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "ok"
