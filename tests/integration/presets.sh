# Ordered transfers end to end: every preset trains exactly (partitions,
# gates and credit windows in both directions lose and repeat nothing);
# VGG16 and Inception-v3 replay with every preset; with the counter gate,
# the timeline shows every server's parameter sends to each worker in the
# computed order.
source "$(dirname "$0")/lib.sh" "$@"
PRESETS="baseline p3 tictac-tio tictac-tao bytescheduler ordo"

for p in $PRESETS; do
	EXACT_WORKER_SIZES=1000,100000,10,50000 \
		launch "exact-$p" 120 --worker "$TOOLS/exact_worker" \
		--set scheduling.preset="$p" --set train.iterations=5 \
		--set train.lr=1 --set train.momentum=0 ||
		fail "$p: exactness job exited $?"
	n=$(grep -c "^exact: .* 0 wrong$" "$WORK/exact-$p.out.log")
	[ "$n" -eq 2 ] || fail "$p: $n of 2 workers exact"
	grep "^scheduling: preset $p:" "$WORK/exact-$p.out.log" >/dev/null ||
		fail "$p: settings not printed at start-up"
done
pass "every preset exact: $(grep -h '^scheduling: preset' "$WORK"/exact-*.out.log | sed 's/ (worker.*//' | paste -sd';')"

for model in vgg16 inception_v3; do
	for p in $PRESETS; do
		out=$WORK/$model-$p
		launch "$model-$p" 600 --set worker.mode=replay \
			--set model.file="$SRC/conf/models/$model.json" \
			--set scheduling.preset="$p" --set train.iterations=2 \
			--set output.dir="$out" || fail "$model $p: replay exited $?"
		case $p in tictac-*) ;; *) continue ;; esac
		python3 - "$out" <<'PY' || fail "$model $p: parameter sends out of order"
import csv, json, sys
out = sys.argv[1]
prio = {int(r["tensor"]): int(r["priority"]) for r in csv.DictReader(open(out + "/order.csv"))}
ev = json.load(open(out + "/timeline.json"))
lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
seqs = {}
for e in ev:
    if e.get("ph") == "X" and lanes[(e["pid"], e["tid"])] == "send":
        key = (e["pid"], e["name"], e["args"]["iteration"])
        seqs.setdefault(key, []).append((e["args"]["sent_us"], prio[e["args"]["tensor"]]))
assert seqs, "no parameter sends in the timeline"
for key, s in seqs.items():
    s.sort()
    order = [p for _, p in s]
    assert order == sorted(order), (key, order[:20])
print(f"{len(seqs)} send sequences (server, worker, version), all in order")
PY
	done
done
pass "VGG16 and Inception-v3 replayed with every preset; counter-gate orders held"
assert_no_leftovers
