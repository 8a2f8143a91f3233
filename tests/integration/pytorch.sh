# ordo.torch (python/ordo/torch.py) through examples/pytorch/train.py,
# started as `ps-launch ... -- env python3 train.py ARGS` by 2 workers x 2
# servers: at every one of 100 iterations the workers' mean loss equals
# the loss of one process training on the whole batches with the same
# torch optimizer (train.py --reference) within 1e-5 relative, and the
# final parameters' checksums agree, for
#   SGD with momentum, server.optimizer = none (the workers step) and
#     = sgd (the servers step, the values written into the parameters);
#   Adam and AdamW, server.optimizer = none;
#   AdamW with a cosine learning-rate schedule and gradient clipping;
#   a model with a frozen layer and a branch unused every other iteration;
#   two backward() passes per step (backward_passes_per_step = 2).
# The credit chosen at the start is refined during such a job.
# Then the errors: an optimizer the servers cannot run with =sgd, lr
# mismatches, a float64 parameter, backward() twice before step(), an
# optimizer parameter missing from named_parameters, workers whose models
# differ.
# Skips (77) where /usr/bin/python3 lacks torch (Debian: python3-torch).
source "$(dirname "$0")/lib.sh" "$@"
py=/usr/bin/python3
if ! $py -c "import torch" 2>/dev/null; then
	echo "SKIP: $py cannot import torch (apt-get install python3-torch)"
	exit 77
fi
ex=$SRC/examples/pytorch/train.py
python_worker $py "$ex" # PYTHONPATH, LIBORDO_PATH, PY_ENV (ASan)
N=100

# job NAME LIMIT WORKERS SERVER_OPTIMIZER "SETS" PROGRAM ARGS...: a job of
# WORKERS x WORKERS running python3 PROGRAM ARGS as its workers (SETS:
# more ps-launch options, split at spaces)
job() {
	local name=$1 limit=$2 w=$3 sopt=$4 sets=$5
	shift 5
	# shellcheck disable=SC2086
	launch "$name" "$limit" --set cluster.workers="$w" --set cluster.servers="$w" \
		--set server.optimizer="$sopt" $sets -- env $PY_ENV $py "$@"
}

# run NAME SERVER_OPTIMIZER "SETS" TRAIN.PY-ARGS...: the job and the
# reference, compared
run() {
	local name=$1 sopt=$2 sets=$3
	shift 3
	job "$name" 600 2 "$sopt" "--set train.iterations=$N $sets" "$ex" --iterations $N "$@" ||
		fail "$name: the job exited $?"
	$py "$ex" --reference --iterations $N "$@" >"$WORK/$name.ref.log" 2>&1 ||
		fail "$name: the single-process run failed: $(tail -n 3 "$WORK/$name.ref.log")"
	$py - "$WORK/$name.out.log" "$WORK/$name.ref.log" $N >"$WORK/$name.check.log" 2>&1 <<'PY' ||
import collections, sys
n = int(sys.argv[3])
w, final = collections.defaultdict(list), {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[:1] == ["worker"] and f[2] == "loss":
        w[int(f[3])].append(float(f[4]))
    elif f[:1] == ["worker"] and f[2] == "final":
        final[int(f[1])] = float(f[4])
ref, ref_final = {}, None
for f in (l.split() for l in open(sys.argv[2])):
    if f[:1] == ["loss"]:
        ref[int(f[1])] = float(f[2])
    elif f[:1] == ["final"]:
        ref_final = float(f[2])
assert sorted(w) == list(range(n)) and all(len(v) == 2 for v in w.values()), "missing losses"
rel = max(abs(sum(w[i]) / 2 - ref[i]) / abs(ref[i]) for i in range(n))
assert len(final) == 2 and final[0] == final[1], "the workers' parameters differ: %s" % final
frel = abs(final[0] - ref_final) / max(abs(ref_final), 1.0)
print("loss %.4f -> %.4f, largest relative difference from one process %.1e, checksum %.1e"
      % (sum(w[0]) / 2, sum(w[n - 1]) / 2, rel, frel))
assert rel <= 1e-5, "the losses differ from one process's by %.2e (relative)" % rel
assert frel <= 1e-5, "the final parameters differ from one process's by %.2e" % frel
PY
		fail "$name: $(cat "$WORK/$name.check.log")"
	pass "$name: $(cat "$WORK/$name.check.log")"
}

run sgd-none none "" --optimizer sgd --lr 0.05 --momentum 0.9
# ordo.torch never calls next_iteration: its pushes tell the scheduler the
# iterations begun, so the credit chosen at the start is refined there too
# (values exact through the changes, above), and the summary has its time
grep -q "^scheduling: credit refined from measured iterations: .*; kept" \
	"$WORK/sgd-none.out.log" ||
	fail "sgd-none: the credit was not refined: $(grep '^scheduling' "$WORK/sgd-none.out.log" | tr '\n' ';')"
grep -q "^summary: worker 1: $N iterations in [0-9.]* s ([0-9.]* it/s)$" \
	"$WORK/sgd-none.out.log" ||
	fail "sgd-none: summary: $(grep '^summary: worker' "$WORK/sgd-none.out.log" | tr '\n' ';')"
pass "sgd-none: $(grep -h '^scheduling: credit refined' "$WORK/sgd-none.out.log")"
run sgd-servers sgd "--set train.lr=0.05 --set train.momentum=0.9" \
	--optimizer sgd --lr 0.05 --momentum 0.9
run adam-none none "" --optimizer adam --lr 0.01
run adamw-none none "" --optimizer adamw --lr 0.01
run adamw-cosine-clip none "" --optimizer adamw --lr 0.01 --schedule cosine --clip 1.0
run branchy-adamw none "" --model branchy --optimizer adamw --lr 0.01
run accumulate-adam none "" --optimizer adam --lr 0.01 --accumulate 2
# the servers step Adam / AdamW; the learning rate each push carries
run adam-servers adam "" --optimizer adam --lr 0.01
run adamw-cosine-servers adamw "--set train.weight_decay=0.01" \
	--optimizer adamw --lr 0.01 --weight-decay 0.01 --schedule cosine
run sgd-cosine-servers sgd "--set train.momentum=0.9" \
	--optimizer sgd --lr 0.05 --momentum 0.9 --schedule cosine
run branchy-adamw-servers adamw "--set train.weight_decay=0.01" \
	--model branchy --optimizer adamw --lr 0.01 --weight-decay 0.01

# the transfer order from the model: forward's order as torch.fx traces
# it (a head declared before the body it follows, a bare parameter read in
# between), the given order where tracing fails (control flow on a tensor)
cat >"$WORK/order.py" <<'PYORDER'
import torch
from ordo.torch import forward_order
class Rev(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(8, 2)
        self.scale = torch.nn.Parameter(torch.ones(8))
        self.body = torch.nn.Linear(4, 8)
    def forward(self, x):
        return self.head(self.body(x) * self.scale)
class Dyn(Rev):
    def forward(self, x):
        return self.head(self.body(x if x.sum() > 0 else -x))
m = Rev()
got, why = forward_order(m, list(m.named_parameters()))
assert [n for n, _ in got] == ["body.weight", "body.bias", "scale", "head.weight",
                               "head.bias"] and why is None, (got, why)
m = Dyn()
got, why = forward_order(m, list(m.named_parameters()))
assert [n for n, _ in got] == [n for n, _ in m.named_parameters()], got
assert "control flow" in why, why
print("forward order traced; untraceable model keeps its order (%s)" % why.split(":")[0])
PYORDER
# shellcheck disable=SC2086
out=$(env $PY_ENV $py "$WORK/order.py" 2>&1) || fail "transfer order: $out"
pass "transfer order: $out"

# the environment a worker gets from ps-launch, as torchrun gives it, and
# RANK is ordo's rank of the worker (asked for at registration)
cat >"$WORK/env.py" <<'PYENV'
import os, sys, torch
import ordo.torch as ot
ot.init()
net = torch.nn.Linear(3, 1)
opt = ot.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                              named_parameters=net.named_parameters())
net(torch.ones(2, 3)).sum().backward()
opt.step()
sys.stdout.write("env %s %s %s %s rank %d size %d local %d\n" % (  # one write
    os.environ.get("RANK"), os.environ.get("WORLD_SIZE"), os.environ.get("LOCAL_RANK"),
    os.environ.get("LOCAL_WORLD_SIZE"), ot.rank(), ot.size(), ot.local_rank()))
sys.stdout.flush()
ot.shutdown()
PYENV
job env 120 3 none "--set train.iterations=1" "$WORK/env.py" || fail "env: the job exited $?"
for r in 0 1 2; do
	grep -q "^env $r 3 $r 3 rank $r size 3 local $r$" "$WORK/env.out.log" ||
		fail "env: worker $r: $(grep '^env' "$WORK/env.out.log" | tr '\n' ';')"
done
pass "env: workers 0..2 get RANK = ordo's rank, WORLD_SIZE 3, LOCAL_RANK, LOCAL_WORLD_SIZE 3"

# broadcasts: a model whose buffers and optimizer state differ per worker
# (BatchNorm's running statistics and counter, Adam's moments and step,
# one layer not declared at all) becomes worker 1's everywhere, bit for
# bit; workers that disagree on the tensors are told which differs
cat >"$WORK/bcast.py" <<'PYB'
import hashlib, sys, torch
import ordo.torch as ot
ot.init()
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 2))
opt = ot.DistributedOptimizer(torch.optim.Adam(net.parameters(), lr=0.01),
                              named_parameters=net.named_parameters())
me = ot.rank()
torch.manual_seed(100 + me)  # from here on the workers differ
net(torch.randn(16, 4)).sum().backward()
opt.step()
extra = torch.nn.Linear(3, 3)  # never declared
state = opt.state_dict()
for st in state["state"].values():
    st["exp_avg"].add_(me)
opt.load_state_dict(state)
ot.broadcast_parameters(net.state_dict(), root_rank=1)
ot.broadcast_parameters(extra.named_parameters(), root_rank=1)
ot.broadcast_optimizer_state(opt, root_rank=1)
h = hashlib.sha256()
for t in list(net.state_dict().values()) + list(extra.parameters()):
    h.update(t.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
for st in opt.state_dict()["state"].values():
    for v in st.values():
        h.update(v.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
sys.stdout.write("bcast %d %s %d\n" % (me, h.hexdigest()[:16],
                 int(net[1].num_batches_tracked)))
sys.stdout.flush()
if len(sys.argv) > 1:  # worker 0 offers another set of tensors
    try:
        ot.broadcast_parameters(net.state_dict() if me else extra.state_dict(), 1)
    except ValueError as e:
        print(e, file=sys.stderr)
        sys.exit(3)
ot.shutdown()
PYB
job bcast 120 2 none "--set train.iterations=1" "$WORK/bcast.py" || fail "bcast: the job exited $?"
n=$(grep '^bcast' "$WORK/bcast.out.log" | awk '{print $3, $4}' | sort -u | wc -l)
[ "$n" -eq 1 ] && [ "$(grep -c '^bcast' "$WORK/bcast.out.log")" -eq 2 ] ||
	fail "bcast: the workers differ after the broadcasts: $(grep '^bcast' "$WORK/bcast.out.log" | tr '\n' ';')"
pass "broadcast_parameters/broadcast_optimizer_state: buffers, an undeclared layer, Adam's state equal worker 1's on both workers ($(grep -m1 '^bcast' "$WORK/bcast.out.log" | cut -d' ' -f3))"
job bcast-differ 120 2 none "--set train.iterations=1 --set cluster.heartbeat_timeout_ms=2000" \
	"$WORK/bcast.py" differ && fail "bcast-differ: the job succeeded"
grep -q "broadcast_parameters: worker 0's tensor 0 is ('weight', (3, 3), 'torch.float32'), the root's (worker 1) ('0.weight', (8, 4), 'torch.float32')" \
	"$WORK/bcast-differ.err.log" || fail "bcast-differ: no error naming the tensor: $(tail -n 5 "$WORK/bcast-differ.err.log")"
pass "broadcast_parameters with different tensors: the first difference named"

# errors: clear, at once, nothing left running
fails() { # NAME PATTERN SERVER_OPTIMIZER "SETS" PROGRAM ARGS: the job fails saying PATTERN
	local name=$1 pattern=$2 sopt=$3 sets=$4
	shift 4
	job "$name" 120 1 "$sopt" "--set train.iterations=3 --set cluster.connect_timeout_ms=3000 \
		--set cluster.heartbeat_timeout_ms=2000 $sets" "$@" && fail "$name: the job succeeded"
	grep -q -- "$pattern" "$WORK/$name.err.log" || {
		tail -n 20 "$WORK/$name.err.log"
		fail "$name: no error saying '$pattern'"
	}
	pass "$name: $(grep -o -- "$pattern.*" "$WORK/$name.err.log" | head -1 | cut -c1-150)"
}
fails adam-on-sgd-servers "server.optimizer = sgd runs SGD on the servers" sgd "" \
	"$ex" --iterations 3 --optimizer adam
fails momentum-mismatch "server.optimizer = sgd runs on the servers with train.momentum = 0, but the optimizer has momentum 0.9" \
	sgd "--set train.momentum=0" "$ex" --iterations 3 --optimizer sgd --momentum 0.9
fails betas-mismatch "server.optimizer = adam runs on the servers with train.beta2 = 0.99, but the optimizer has betas (0.9, 0.999)" \
	adam "--set train.beta2=0.99" "$ex" --iterations 3 --optimizer adam
fails adam-on-adamw-servers "server.optimizer = adamw runs AdamW on the servers; wrap a torch.optim.AdamW" \
	adamw "" "$ex" --iterations 3 --optimizer adam
fails unknown-optimizer "server.optimizer.*rmsprop" rmsprop "" "$ex" --iterations 3
cat >"$WORK/bad_models.py" <<'PYBAD'
import os, sys, torch
import ordo.torch as ot
ot.init()
what = sys.argv[1]
net = torch.nn.Linear(4, 2)
if what == "float64":
    net = net.double()
if what == "mismatch":  # the first worker here builds another model
    try:
        os.mkdir(sys.argv[2])
        net = torch.nn.Linear(4, 3)
    except FileExistsError:
        pass
params = list(net.parameters())
if what == "missing":  # the optimizer holds a layer named_parameters lacks
    params += list(torch.nn.Linear(2, 2).parameters())
opt = ot.DistributedOptimizer(torch.optim.Adam(params), named_parameters=net.named_parameters())
if what == "set_lr":  # a negative learning rate, then one set behind set_lr's back
    try:
        opt.set_lr(-0.5)
    except ValueError as e:
        print(e, file=sys.stderr)
    opt.param_groups[0]["lr"] = float("nan")
x = torch.ones(3, 4, dtype=next(net.parameters()).dtype)
net(x).sum().backward()
net(x).sum().backward()  # twice before step()
opt.step()
PYBAD
fails float64 "ordo.torch: parameter 'weight' is torch.float64: ordo moves float32 only" none "" \
	"$WORK/bad_models.py" float64
fails set-lr "set_lr(-0.5): a learning rate is finite and >= 0" adam "" "$WORK/bad_models.py" set_lr
grep -q "learning rate nan at iteration 0: .*must be finite" "$WORK/set-lr.err.log" ||
	fail "set-lr: a NaN learning rate in the optimizer's group is not refused at step()"
pass "set-lr: a NaN learning rate in a group: refused at step(), naming the iteration"
fails backward-twice "backward() reached parameter '.*' 2 times before step(): pass backward_passes_per_step=2" \
	none "" "$WORK/bad_models.py" twice
fails missing-params "2 of the optimizer's parameters (shapes \[(2, 2), (2,)\]) are not in named_parameters" \
	none "" "$WORK/bad_models.py" missing
# workers whose models differ: refused at registration, naming the tensor
# (two workers here: the fails helper runs one)
job mismatch 120 2 none "--set train.iterations=3 --set cluster.heartbeat_timeout_ms=2000" \
	"$WORK/bad_models.py" mismatch "$WORK/first" && fail "mismatch: the job succeeded"
grep -q "tensor 0 is 'weight' ([0-9]* elements), the first worker to register declared 'weight' ([0-9]*)" \
	"$WORK/mismatch.err.log" || fail "mismatch: no error naming the tensor: $(tail -n 5 "$WORK/mismatch.err.log")"
pass "workers with different models: refused at registration, naming tensor 0 'weight'"
assert_no_leftovers
