# bench/torch_bench.py (real PyTorch training over ordo against torch
# DDP) in a tiny configuration on loopback: MobileNet-V2 at batch 4 per
# worker, 2 workers, the ordo preset in both layouts (servers on their own
# hosts, servers on the workers' hosts) and DDP, 1 warm-up + 2 measured
# iterations. Every run completes, the report, results.csv, runs.csv and
# losses.csv are written, the ordo runs leave timelines, and the losses of
# all three runs are equal (the loss-equality check passes). Then bad
# options exit 2 with a message. Skips (77) where /usr/bin/python3 lacks
# torch or torchvision.
source "$(dirname "$0")/lib.sh" "$@"
py=/usr/bin/python3
for m in torch torchvision; do
	if ! $py -c "import $m" 2>/dev/null; then
		echo "SKIP: $py cannot import $m (apt-get install python3-torch python3-torchvision)"
		exit 77
	fi
done
python_worker $py "$SRC/examples/pytorch/train.py" # LIBORDO_PATH check, PY_ENV (ASan)
bench=$SRC/bench/torch_bench.py
out=$WORK/out
# shellcheck disable=SC2086 # PY_ENV: NAME=VALUE words, empty without ASan
env $PY_ENV python3 "$bench" --mode loopback --bin-dir "$BUILD" --models mobilenet_v2 \
	--presets ordo --batch 4 --warmup 1 --iterations 2 --repetitions 1 \
	--run-timeout 300 --out "$out" >"$WORK/bench.out.log" 2>"$WORK/bench.err.log" ||
	fail "torch_bench.py exited $?: $(tail -n 5 "$WORK/bench.err.log")"
for f in report.md results.csv runs.csv losses.csv; do
	[ -s "$out/$f" ] || fail "no $f"
done
cmp -s "$out/report.md" "$WORK/bench.out.log" || fail "stdout is not report.md"
grep -q "^- mobilenet_v2: equal: 3 runs" "$out/report.md" ||
	fail "no passed loss-equality check: $(grep -A3 'no math' "$out/report.md")"
for row in "torch DDP (gloo)" "separate | ordo ordo" "colocated | ordo ordo"; do
	grep -q "| mobilenet_v2 | .*$row | 1/1 | [0-9.]* \[" "$out/report.md" ||
		fail "no measured row '$row': $(grep '^| mobilenet_v2' "$out/report.md")"
done
[ "$(grep -c ',ok,' "$out/runs.csv")" -eq 3 ] || fail "runs.csv: not 3 runs ok"
# 3 runs x 3 iterations of losses
[ "$(tail -n +2 "$out/losses.csv" | wc -l)" -eq 9 ] || fail "losses.csv: not 9 rows"
for r in 001 002 003; do
	grep -q -- "--ddp" "$out/runs/$r/w0.log" && continue
	[ -s "$out/runs/$r/timeline.json" ] || fail "ordo run $r left no timeline"
done
pass "DDP and ordo (both layouts) trained MobileNet-V2, losses equal: $(grep -o 'difference.*' "$out/report.md")"

# bad options: exit 2 and a message, nothing written
for bad in "--models vgg" "--presets fast" "--layouts mixed" "--workers 0" \
	"--gpu-ms resnet18" "--gpu-ms resnet18=-1" "--cpu-ms nosuch=3" \
	"--nic-gbps 0" "--bandwidth-gbps 9999" "--loss-tolerance 2" \
	"--bin-dir $WORK/none" "--python $WORK/none" "--set train.nosuch=1" \
	"--set scheduling.credit_size=lots"; do
	# shellcheck disable=SC2086
	python3 "$bench" $bad --out "$WORK/bad" >"$WORK/bad.log" 2>&1
	rc=$?
	[ $rc -eq 2 ] || fail "torch_bench.py $bad exited $rc, expected 2"
	grep -q "^torch_bench.py: error: " "$WORK/bad.log" || fail "$bad: no error message"
	[ ! -e "$WORK/bad" ] || fail "$bad: wrote results"
done
pass "bad options exit 2 with a message"
python3 "$bench" --help | grep -q -- "--nic-gbps" || fail "--help does not list --nic-gbps"
assert_no_leftovers
