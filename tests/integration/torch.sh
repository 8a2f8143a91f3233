# PyTorch through the Python package (python/examples/torch_digits.py): a
# small network (64-64-10) trained on scikit-learn's digits by 2 workers x
# 2 servers, gradients pushed from backward hooks as autograd produces
# them, parameters waited for layer by layer in forward pre-hooks; and the
# same model, initial values and global batches in one process with
# torch.optim.SGD. The loss must fall (the last 10 iterations' mean below
# a fifth of the first 10's) and, at every one of the 100 iterations, the
# workers' mean loss must match the single process's within 1e-4 (float32
# sums in another order: the servers average the two halves' gradients in
# double, torch sums the whole batch in float32). Accuracy on the held-out
# 20% is printed. Skips (77) where /usr/bin/python3 lacks torch or sklearn
# (Debian: python3-torch, python3-sklearn).
source "$(dirname "$0")/lib.sh" "$@"
py=/usr/bin/python3
if ! $py -c "import torch, sklearn" 2>/dev/null; then
	echo "SKIP: $py cannot import torch and sklearn (apt-get install python3-torch python3-sklearn)"
	exit 77
fi
ex=$SRC/python/examples/torch_digits.py
python_worker $py "$ex"
launch torch 600 --worker "$WORK/worker" --set train.iterations=100 \
	--set train.lr=0.1 --set train.momentum=0.9 || fail "the PyTorch job exited $?"
$py "$ex" --reference --iterations 100 --lr 0.1 --momentum 0.9 >"$WORK/ref.log" 2>&1 ||
	fail "the single-process run failed: $(tail -n 3 "$WORK/ref.log")"
$py - "$WORK/torch.out.log" "$WORK/ref.log" >"$WORK/check.log" 2>&1 <<'PY' || fail "losses: $(cat "$WORK/check.log")"
import collections, sys
w = collections.defaultdict(list)
acc = {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[:1] == ["worker"] and f[2] == "loss":
        w[int(f[3])].append(float(f[4]))
    elif f[:1] == ["worker"] and f[2] == "accuracy":
        acc[int(f[1])] = float(f[3])
ref = {int(f[1]): float(f[2]) for f in (l.split() for l in open(sys.argv[2])) if f[0] == "loss"}
ref_acc = [float(l.split()[1]) for l in open(sys.argv[2]) if l.startswith("accuracy")][0]
assert sorted(w) == list(range(100)) and all(len(v) == 2 for v in w.values()), "missing losses"
dist = {i: sum(v) / 2 for i, v in w.items()}
diff = max(abs(dist[i] - ref[i]) for i in ref)
first = sum(dist[i] for i in range(10)) / 10
last = sum(dist[i] for i in range(90, 100)) / 10
print("loss: first 10 iterations %.4f, last 10 %.4f; largest difference from one process %.2e" % (first, last, diff))
print("held-out accuracy: workers %s, one process %.4f" % (acc, ref_acc))
assert last < first / 5, "the loss did not fall"
assert diff <= 1e-4, "the distributed losses differ from one process's by %.2e" % diff
PY
pass "PyTorch on digits, 2 x 2: $(paste -sd';' "$WORK/check.log")"
assert_no_leftovers
