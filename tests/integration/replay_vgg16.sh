# VGG16 replayed on 2 workers x 2 servers on loopback for 20 iterations;
# its timeline is valid JSON with the expected lanes.
source "$(dirname "$0")/lib.sh" "$@"
out=$WORK/out

launch vgg 3000 --set model.file="$SRC/conf/models/vgg16.json" \
	--set worker.mode=replay --set train.iterations=20 \
	--set output.dir="$out" || fail "VGG16 replay exited $?"
for w in 0 1; do
	n=$(grep -c "^worker $w iter .*/20 time " "$WORK/vgg.out.log")
	[ "$n" -eq 20 ] || fail "worker $w: $n of 20 iterations"
done
python3 - "$out/timeline.json" <<'PY' || fail "timeline invalid or lanes missing"
import json, sys
ev = json.load(open(sys.argv[1]))
procs = {e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
lanes = {}
for e in ev:
    if e.get("ph") == "M" and e["name"] == "thread_name":
        lanes[(e["pid"], e["tid"])] = e["args"]["name"]
used = {}
for e in ev:
    if e.get("ph") in ("X", "i"):
        used.setdefault(lanes[(e["pid"], e["tid"])], 0)
        used[lanes[(e["pid"], e["tid"])]] += 1
assert procs == {"worker 0", "worker 1", "server 0", "server 1"}, procs
for lane in ("compute", "push", "receive", "update", "send"):
    assert used.get(lane, 0) > 0, (lane, used)
push = [e for e in ev if e.get("ph") == "X" and lanes[(e["pid"], e["tid"])] == "push"]
assert all(e["args"]["ready_us"] <= e["args"]["sent_us"] <= e["args"]["acked_us"] for e in push)
print("timeline:", len(ev), "events;", ", ".join(f"{k} {v}" for k, v in sorted(used.items())))
PY
pass "VGG16 x 20 iterations, timeline valid"
grep '^summary: throughput' "$WORK/vgg.out.log"
assert_no_leftovers
