#!/usr/bin/env bash
# tests/sim/bench_rdma_rows.sh - ps-bench's rdma rows, fast and
# without root: on loopback with a tiny model, `--transports tcp,rdma` on a
# machine without an RDMA device gives measured tcp rows and, per preset, an
# rdma row predicted by ps-sim's rdma link model, marked as not run with the
# reason (report and results.csv), plus the TCP-vs-RDMA table and
# predicted.csv; --predict-only runs nothing and prints that table; the
# device probe reads a sysfs tree (a fake one here: GID -> IPv4, port rate,
# rxe marked as an emulator).
# Usage: bench_rdma_rows.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
src=$2
bench=$src/bench/ps-bench # the launcher of the package bench/ps_bench/
tmp=$(mktemp -d /tmp/ordo-bench-rdma-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for b in ps-scheduler ps-server ps-worker ps-sim; do
	[ -x "$build/$b" ] || { echo "skip: $build/$b not built"; exit 77; }
done

# --- the device probe, on a fake sysfs tree --------------------------------
PYTHONDONTWRITEBYTECODE=1 python3 - "$src/bench" "$tmp/sys" "$build" <<'PY' || fail "device probe"
import os, sys
sys.path.insert(0, sys.argv[1])
import ps_bench as pb
root, build = sys.argv[2], sys.argv[3]
assert pb.ipv4_of_gid("0000:0000:0000:0000:0000:ffff:c000:0201") == "192.0.2.1"
assert pb.ipv4_of_gid("fe80:0000:0000:0000:0000:00ff:fe00:0001") is None
assert pb.parse_port_rate("100 Gb/sec (4X EDR)") == 100.0
assert pb.parse_port_rate("garbage") is None
st = pb.rdma_status(build, root=root)
assert st["mode"] == "predict" and "no RDMA device here" in st["reason"], st
port = os.path.join(root, "rxe0", "ports", "1")
os.makedirs(os.path.join(port, "gids"))
os.makedirs(os.path.join(port, "gid_attrs", "types"))
def put(rel, text):
    with open(os.path.join(port, rel), "w") as f:
        f.write(text + "\n")
put("gids/0", "fe80:0000:0000:0000:0000:00ff:fe00:0001")
put("gid_attrs/types/0", "RoCE v2")
put("gids/1", "0000:0000:0000:0000:0000:ffff:c000:0201")
put("gid_attrs/types/1", "RoCE v2")
put("rate", "10 Gb/sec (1X QDR)")
put("state", "1: DOWN")
st = pb.rdma_status(build, root=root)
assert st["mode"] == "predict" and "no active port" in st["reason"], st
put("state", "4: ACTIVE")
st = pb.rdma_status(build, root=root)
rdma_build = os.path.isfile(os.path.join(build, "CMakeCache.txt")) and \
    "PS_WITH_RDMA:BOOL=ON" in open(os.path.join(build, "CMakeCache.txt")).read()
if rdma_build:
    assert st["mode"] == "run", st
    p = st["port"]
    assert p["addr"] == "192.0.2.1" and p["rate_gbps"] == 10.0, p
    assert p["gid_index"] == "1" and st["emulated"], st
else:
    assert st["mode"] == "predict" and "without the rdma transport" in \
        st["reason"], st
st = pb.rdma_status(build, root=root, want_addr="10.0.0.9")
assert st["mode"] == "predict" and "carrying 10.0.0.9" in st["reason"], st
print("device probe ok")
PY

# --- a run: measured tcp rows, predicted rdma rows --------------------------
if [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
	python3 "$bench" --mode loopback --models "$src/tests/models/chain8.json" \
		--bandwidths 10 --presets baseline,p3,ordo --transports tcp,rdma \
		--warmup 1 --iterations 1 --repetitions 1 --no-plot \
		--no-calibration --bin-dir "$build" --out "$tmp/run" \
		>"$tmp/run.out" 2>"$tmp/run.err" ||
		fail "ps-bench exited $?: $(tail -n 5 "$tmp/run.err")"
	out=$tmp/run.out
	grep -q "^- rdma: \*\*predicted only, not run\*\*: no RDMA device here" "$out" ||
		fail "report: no rdma header line"
	for p in baseline p3 ordo; do
		grep -q "^| chain8 | 10 | tcp | $p | 1/1 | [0-9]" "$out" ||
			fail "report: no measured tcp row for $p"
		grep -q "^| chain8 | 10 | rdma | $p | 0/0 | predicted only, not run: no RDMA device here.* | [0-9.]* | [0-9.]* | n/a |$" "$out" ||
			fail "report: no predicted rdma row for $p"
		grep -q "^| chain8 | 10 | $p | [0-9.]* | [0-9.]* | [0-9.]* |$" "$out" ||
			fail "report: no TCP-vs-RDMA row for $p"
	done
	python3 - "$tmp/run" <<'PY' || fail "results.csv / predicted.csv"
import csv, os, sys
res = list(csv.DictReader(open(os.path.join(sys.argv[1], "results.csv"))))
tcp = [r for r in res if r["transport"] == "tcp"]
rdma = [r for r in res if r["transport"] == "rdma"]
assert len(tcp) == 3 and all(float(r["iteration_ms_median"]) > 0 for r in tcp)
assert sorted(r["preset"] for r in rdma) == ["baseline", "ordo", "p3"], rdma
for r in rdma:
    assert r["mode"] == "predicted" and r["runs"] == "0", r
    assert r["iteration_ms_median"] == "" and r["speedup"] == "", r
    assert float(r["sim_iteration_ms"]) > 0, r
    assert r["sim_note"].startswith("predicted only (ps-sim, rdma link "
                                    "model), not run: no RDMA device"), r
pred = list(csv.DictReader(open(os.path.join(sys.argv[1], "predicted.csv"))))
assert [r["preset"] for r in pred] == ["baseline", "p3", "ordo"], pred
for r in pred:
    assert float(r["tcp_model_iteration_ms"]) > 0, r
    assert float(r["rdma_model_iteration_ms"]) > 0, r
PY
fi

# --- --predict-only: nothing runs ------------------------------------------
python3 "$bench" --predict-only --models resnet50 --bandwidths 10,25 \
	--presets p3,ordo --bin-dir "$build" --out "$tmp/pred" \
	>"$tmp/pred.out" 2>"$tmp/pred.err" || fail "--predict-only: $(cat "$tmp/pred.err")"
[ -d "$tmp/pred/runs" ] && fail "--predict-only ran jobs"
for bw in 10 25; do
	grep -q "^| resnet50 | $bw | p3 | [0-9.]* | [0-9.]* | 0\.[0-9]* |$" "$tmp/pred.out" ||
		fail "--predict-only: p3 at $bw Gbit/s not faster over RDMA: $(cat "$tmp/pred.out")"
done
[ "$(wc -l <"$tmp/pred/predicted.csv")" -eq 5 ] || fail "predicted.csv: $(cat "$tmp/pred/predicted.csv")"

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "ok"
