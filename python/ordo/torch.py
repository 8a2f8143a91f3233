"""ordo.torch - data-parallel PyTorch training over ordo's parameter servers.

    import ordo.torch as ot
    ot.init()                                             # the job ps-launch started
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)  # any optimizer
    opt = ot.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    for x, y in batches(rank=ot.rank(), size=ot.size()):
        opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    ot.shutdown()

Run it as the workers of a job: `ps-launch --set server.optimizer=none
--worker train.py` (docs/pytorch.md).

What the wrapper does:
 - every parameter with requires_grad is declared to ordo, in the order
   model.named_parameters() gives (frozen parameters are left out);
 - at construction the job starts: every worker gets worker 0's initial
   parameters (ordo's start sends them), so all replicas begin equal;
 - each gradient is pushed the moment autograd has accumulated it into
   p.grad (a hook on the parameter's AccumulateGrad node), so the sends of
   the last layers overlap the backward pass of the first;
 - step() makes sure every declared parameter was pushed this iteration
   (one that got no gradient pushes zeros, so no round ever waits for it;
   where its average is zero and it had no .grad, .grad stays None and the
   optimizer skips it, as one process would),
   waits for the servers' answers, and then:
     server.optimizer = none (any optimizer): each parameter's .grad
       becomes the average over the workers, and the wrapped optimizer
       steps as it would in one process: Adam, AdamW, SGD, a learning-rate
       scheduler, gradient clipping all work as in torch;
     server.optimizer = sgd: the servers applied SGD with momentum
       (train.lr, train.momentum); the new parameters are written into the
       parameters' own memory and the wrapped optimizer does not step. It
       must be a torch.optim.SGD with the same lr and momentum (checked).
       Given model=, step() does not wait at all: each module waits for
       its own parameters just before its forward (forward pre-hooks), so
       the first layers' values are used while the last ones still arrive;
       wait_parameters() (and shutdown()) wait for all of them.

Gradient accumulation: backward_passes_per_step=N pushes after the N-th
backward() of an iteration (p.grad then holds their sum, as in torch); a
backward() more than N times before step() makes that step() raise.

The learning rate is always the wrapped optimizer's own: with none it
steps with it, with sgd/adam/adamw every push carries it to the servers.
"""
import atexit
import os
import sys
import time

import torch

import ordo

__all__ = ["init", "rank", "size", "local_rank", "DistributedOptimizer",
           "shutdown", "client", "forward_order", "broadcast_object",
           "broadcast_parameters", "broadcast_optimizer_state"]

_job = {"config": None, "client": None, "optimizer": None}


def _take_job_args(argv):
    """Removes ps-launch's --config FILE and --set K=V from argv (in
    place) and returns them."""
    taken, i = [], 1
    while i < len(argv):
        if argv[i] in ("--config", "--set") and i + 1 < len(argv):
            taken += argv[i:i + 2]
            del argv[i:i + 2]
        elif argv[i].startswith("--config=") or argv[i].startswith("--set="):
            opt, val = argv[i].split("=", 1)
            taken += [opt, val]
            del argv[i]
        else:
            i += 1
    return taken


def init(argv=None):
    """Reads the job's configuration. ps-launch gives a worker program
    `--config FILE` and `--set SECTION.KEY=VALUE` arguments: init() takes
    them out of sys.argv (or argv), so that the program's own argument
    parser never sees them. Call it before parsing arguments. Returns the
    ordo.Config."""
    if _job["config"] is not None:
        return _job["config"]
    args = _take_job_args(sys.argv if argv is None else argv)
    _job["config"] = ordo.Config(argv=args)
    return _job["config"]


def client():
    """The job's ordo.Client (created by DistributedOptimizer)."""
    if _job["client"] is None:
        raise RuntimeError("ordo.torch: no job yet: create the "
                           "DistributedOptimizer first")
    return _job["client"]


def rank():
    """This worker's rank, 0 .. size() - 1. Under ps-launch it is known
    from init() on (the worker.rank ps-launch gives the worker, which it
    asks for at registration; also its RANK); otherwise once the job has
    started (ordo numbers the workers as they register)."""
    if _job["client"] is not None:
        return _job["client"].rank
    asked = int((_job["config"] or init()).get("worker.rank"))
    if asked < 0:
        raise RuntimeError("ordo.torch: the rank is known once the job has "
                           "started (create the DistributedOptimizer first), "
                           "or from init() when worker.rank is set (ps-launch "
                           "sets it)")
    return asked


def size():
    """The number of workers (cluster.workers; a launcher's WORLD_SIZE
    counts the scheduler and the servers too)."""
    if _job["client"] is not None:
        return _job["client"].num_workers
    return int((_job["config"] or init()).get("cluster.workers"))


def local_rank():
    """This worker's rank among the workers of its host: LOCAL_RANK, which
    ps-launch sets (0 where no launcher says)."""
    return int(os.environ.get("LOCAL_RANK", "0"))


def broadcast_object(obj, root_rank=0):
    """Collective (every worker calls it): returns root_rank's obj on every
    worker, pickled (torch tensors included) and sent through the
    scheduler. Only the job's own workers can send it (as every message of
    a job; cluster.curve keeps strangers out)."""
    c = client()
    import pickle
    me = rank() == root_rank
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL) if me else b""
    size = bytearray(len(data).to_bytes(8, "little"))
    c.broadcast(root_rank, size)
    buf = bytearray(data) if me else bytearray(int.from_bytes(size, "little"))
    c.broadcast(root_rank, buf)
    return obj if me else pickle.loads(bytes(buf))


def _named_tensors(params):
    items = list(params.items()) if isinstance(params, dict) else list(params)
    for name, t in items:
        if not isinstance(t, torch.Tensor):
            raise TypeError("ordo.torch.broadcast_parameters: '%s' is a %s, not "
                            "a tensor" % (name, type(t).__name__))
    return items


def broadcast_parameters(params, root_rank=0):
    """Collective: every tensor of params (a state_dict, or (name, tensor)
    pairs such as model.named_parameters()) becomes root_rank's, bit for
    bit, whatever its dtype (BatchNorm's running statistics and counters
    included). Every worker must pass the same names, shapes and dtypes
    (checked first: the first difference is named). Parameters the job
    declared start equal on every worker anyway (worker 0's initial
    values); with the servers stepping (sgd, adam, adamw) the servers hold
    them, so a model loaded after the DistributedOptimizer was made is
    not theirs: load it before."""
    items = _named_tensors(params)
    mine = [(n, tuple(t.shape), str(t.dtype)) for n, t in items]
    theirs = broadcast_object(mine, root_rank)
    if theirs != mine:
        diff = next((k for k in range(min(len(mine), len(theirs)))
                     if mine[k] != theirs[k]), min(len(mine), len(theirs)))
        raise ValueError(
            "ordo.torch.broadcast_parameters: worker %d's tensor %d is %s, "
            "the root's (worker %d) %s" % (
                rank(), diff, mine[diff] if diff < len(mine) else "missing",
                root_rank, theirs[diff] if diff < len(theirs) else "missing"))
    if not items:
        return
    with torch.no_grad():
        flat = torch.cat([t.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
                          for _, t in items])
        client().broadcast(root_rank, flat.numpy())
        if rank() == root_rank:
            return
        off = 0
        for _, t in items:
            n = t.numel() * t.element_size()
            t.copy_(flat[off:off + n].view(t.dtype).view(t.shape))
            off += n


def broadcast_optimizer_state(optimizer, root_rank=0):
    """Collective: every worker's optimizer takes root_rank's state
    (optimizer.load_state_dict of its state_dict): the moments of an
    optimizer the workers step (server.optimizer = none), its step counts
    and hyper-parameters. With the servers stepping, their state is the
    servers' (and in the checkpoints); the workers' is empty."""
    state = broadcast_object(optimizer.state_dict(), root_rank)
    if rank() != root_rank:
        optimizer.load_state_dict(state)


def shutdown():
    """Ends this worker's part in the job (waits for the last update;
    called at exit if the program does not)."""
    opt = _job["optimizer"]
    c = _job["client"]
    if c is None:
        return
    if opt is not None:
        opt._ordo_finish()
    c.close()
    _job["client"] = None
    _job["optimizer"] = None


atexit.register(shutdown)


def forward_order(model, named):
    """The (name, parameter) pairs of `named` in the order model's forward
    uses them, as torch.fx traces it (modules called, attributes read),
    those it does not reach after them in their own order; with the reason
    as second value, `named` as it is where the model cannot be traced
    (control flow on tensors, unsupported calls)."""
    try:
        import torch.fx
        gm = torch.fx.symbolic_trace(model)
    except Exception as e:  # any tracing failure: keep the given order
        return list(named), "%s: %s" % (type(e).__name__, e)
    rank = {}
    for node in gm.graph.nodes:
        if node.op == "call_module":
            used = list(gm.get_submodule(node.target).parameters())
        elif node.op == "get_attr":
            obj = gm
            for part in node.target.split("."):
                obj = getattr(obj, part, None)
            used = [obj] if isinstance(obj, torch.nn.Parameter) else []
        else:
            continue
        for p in used:
            rank.setdefault(id(p), len(rank))
    last = len(rank)
    keyed = [(rank.get(id(p), last), k, (n, p)) for k, (n, p) in enumerate(named)]
    return [pair for _, _, pair in sorted(keyed, key=lambda x: x[:2])], None


class _Distributed:
    """Mixed into the wrapped optimizer's own class (so isinstance checks
    and learning-rate schedulers see a torch optimizer of that kind)."""

    def _ordo_setup(self, named_parameters, passes, model):
        cfg = _job["config"] or init()
        if _job["client"] is not None:
            raise RuntimeError("ordo.torch: one DistributedOptimizer per "
                               "process")
        if passes < 1:
            raise ValueError("backward_passes_per_step must be at least 1")
        self._ordo_passes = passes
        mode = cfg.get("server.optimizer")
        self._ordo_none = mode == "none"
        params = {id(p) for g in self.param_groups for p in g["params"]}
        if named_parameters is None:
            named = [("param.%d" % k, p) for k, p in
                     enumerate(p for g in self.param_groups for p in g["params"])]
        else:
            named = list(named_parameters)
        seen, self._ordo_params = set(), []
        for name, p in named:
            if not p.requires_grad or id(p) in seen:
                continue  # frozen, or shared (declared once)
            if id(p) not in params:
                continue  # not this optimizer's
            if p.dtype != torch.float32:
                raise TypeError("ordo.torch: parameter '%s' is %s: ordo "
                                "moves float32 only" % (name, p.dtype))
            if p.device.type != "cpu":
                raise TypeError("ordo.torch: parameter '%s' is on %s: "
                                "this version moves host (cpu) tensors"
                                % (name, p.device))
            seen.add(id(p))
            self._ordo_params.append((name, p))
        if not self._ordo_params:
            raise ValueError("ordo.torch: no parameter to train (all frozen?)")
        # the transfer order (scheduling.order layer/tio/tao follow the
        # declaration order): the order forward uses the parameters in
        self.transfer_order_source = "named_parameters"
        if model is not None:
            self._ordo_params, why = forward_order(model, self._ordo_params)
            self.transfer_order_source = ("named_parameters (torch.fx could "
                                          "not trace the model: %s)" % why
                                          if why else "torch.fx trace")
        missing = [p for g in self.param_groups for p in g["params"]
                   if p.requires_grad and id(p) not in seen]
        if missing:
            raise ValueError("ordo.torch: %d of the optimizer's parameters "
                             "(shapes %s) are not in named_parameters: they "
                             "would train apart on every worker; pass "
                             "model.named_parameters() of the model that "
                             "holds them" % (len(missing), [tuple(p.shape)
                                                             for p in missing[:4]]))
        if not self._ordo_none:
            self._ordo_check_server(cfg, mode)
        self._ordo_lr_sent, self._ordo_lr_it = None, None
        c = ordo.Client(cfg)
        _job["client"], _job["optimizer"] = c, self
        self._ordo_tensors, self._ordo_recv, self._ordo_send = [], [], []
        for name, p in self._ordo_params:
            if self._ordo_none:
                # the averages arrive here; worker 0's initial values first
                buf = p.detach().clone().reshape(-1).contiguous()
            else:
                if not p.data.is_contiguous():
                    raise TypeError("ordo.torch: parameter '%s' is not "
                                    "contiguous" % name)
                buf = p.data.view(-1)  # the servers' SGD writes here
            self._ordo_recv.append(buf)
            # two send buffers: one may be in flight while the next fills
            self._ordo_send.append([torch.empty(p.numel()), torch.empty(p.numel())])
            self._ordo_tensors.append(c.declare(name, buf.numpy()))
        c.start()
        self._ordo_it = c.start_iteration()
        self._ordo_t0 = time.monotonic()  # the summary's time
        if self._ordo_none and self._ordo_it == 0:
            with torch.no_grad():  # worker 0's initial values, everywhere
                for (_, p), buf in zip(self._ordo_params, self._ordo_recv):
                    p.copy_(buf.view_as(p))
        self._ordo_count = [0] * len(self._ordo_params)
        self._ordo_pushed = [False] * len(self._ordo_params)
        self._ordo_synced = False
        self._ordo_error = None
        self._ordo_hooks = []
        for k, (_, p) in enumerate(self._ordo_params):
            acc = p.expand_as(p).grad_fn.next_functions[0][0]
            acc.register_hook(self._ordo_hook(k))
            self._ordo_hooks.append(acc)  # the node must stay alive
        # the servers step (sgd, adam, adamw) and the model is given: no
        # wait in step(); each module waits for its own parameters just
        # before its forward
        self._ordo_lazy = not self._ordo_none and model is not None
        if self._ordo_lazy:
            index = {id(p): k for k, (_, p) in enumerate(self._ordo_params)}
            for m in model.modules():
                ks = [index[id(p)] for p in m.parameters(recurse=False) if id(p) in index]
                if ks:
                    m.register_forward_pre_hook(self._ordo_before_forward(ks))

    # server.optimizer: the torch optimizer it runs, and the job's keys
    # that must equal the wrapped optimizer's settings
    _ORDO_SERVER = {
        "sgd": ("SGD", (("momentum", "train.momentum"),),
                (("weight_decay", 0.0), ("dampening", 0.0), ("nesterov", False),
                 ("maximize", False))),
        "adam": ("Adam", (("betas0", "train.beta1"), ("betas1", "train.beta2"),
                          ("eps", "train.eps"), ("weight_decay", "train.weight_decay")),
                 (("amsgrad", False), ("maximize", False))),
        "adamw": ("AdamW", (("betas0", "train.beta1"), ("betas1", "train.beta2"),
                            ("eps", "train.eps"), ("weight_decay", "train.weight_decay")),
                  (("amsgrad", False), ("maximize", False))),
    }

    def _ordo_check_server(self, cfg, mode):
        """server.optimizer = sgd | adam | adamw: the servers step; the
        wrapped optimizer must be that optimizer with the job's settings
        (the learning rate excepted: each push carries the wrapped
        optimizer's, so schedulers drive it)."""
        name, keys, fixed = self._ORDO_SERVER[mode]
        want = getattr(torch.optim, name)
        exact = isinstance(self, want) and not (
            mode == "adam" and isinstance(self, torch.optim.AdamW))
        if not exact:
            raise TypeError("ordo.torch: server.optimizer = %s runs %s on the "
                            "servers; wrap a torch.optim.%s, or set "
                            "server.optimizer = none to step %s on the "
                            "workers" % (mode, name, name, type(self).__name__))
        lrs = {g["lr"] for g in self.param_groups}
        if len(lrs) > 1:
            raise ValueError("ordo.torch: server.optimizer = %s: the parameter "
                             "groups have different learning rates %s; the "
                             "servers apply one: use server.optimizer = none"
                             % (mode, sorted(lrs)))
        for g in self.param_groups:
            have = dict(g)
            if "betas" in g:
                have["betas0"], have["betas1"] = g["betas"]
            for opt_key, cfg_key in keys:
                v, c = float(have.get(opt_key, 0.0)), float(cfg.get(cfg_key))
                if abs(v - c) > 1e-12 * max(1.0, abs(c)):
                    shown = "betas" if opt_key.startswith("betas") else opt_key
                    raise ValueError(
                        "ordo.torch: server.optimizer = %s runs on the servers "
                        "with %s = %g, but the optimizer has %s %s: make them "
                        "equal (--set %s=%r), or use server.optimizer = none"
                        % (mode, cfg_key, c, shown,
                           tuple(g["betas"]) if shown == "betas" else g.get(opt_key),
                           cfg_key, v))
            for opt_key, default in fixed:
                if have.get(opt_key, default) != default:
                    raise ValueError(
                        "ordo.torch: server.optimizer = %s does not run %s = "
                        "%r on the servers: use server.optimizer = none"
                        % (mode, opt_key, have.get(opt_key)))

    def set_lr(self, lr):
        """Sets every parameter group's learning rate (what a torch
        learning-rate scheduler does): with the servers stepping, the
        gradients pushed from now on carry it."""
        lr = float(lr)
        if not (lr >= 0 and lr != float("inf")):
            raise ValueError("ordo.torch: set_lr(%r): a learning rate is "
                             "finite and >= 0" % lr)
        for g in self.param_groups:
            g["lr"] = lr

    def _ordo_send_lr(self):
        """Before this iteration's first push: the servers' learning rate
        is the wrapped optimizer's (one scheduler step may have changed
        it). Runs inside autograd's hooks: errors are kept for step()."""
        self._ordo_lr_it = self._ordo_it
        lrs = {g["lr"] for g in self.param_groups}
        if len(lrs) != 1:
            self._ordo_error = self._ordo_error or (
                "ordo.torch: the parameter groups' learning rates became %s; "
                "the servers apply one: use server.optimizer = none" % sorted(lrs))
            return
        lr = float(lrs.pop())
        if lr == self._ordo_lr_sent:
            return
        try:
            _job["client"].set_lr(self._ordo_it, lr)
            self._ordo_lr_sent = lr
        except (ValueError, ordo.Error) as e:
            self._ordo_error = self._ordo_error or (
                "ordo.torch: learning rate %r at iteration %d: %s"
                % (lr, self._ordo_it, e))

    def _ordo_hook(self, k):
        # An exception must not cross autograd's engine (C++): a mistake
        # found here is raised by the next synchronize() or step().
        def hook(*_):
            self._ordo_count[k] += 1
            n = self._ordo_count[k]
            if n > self._ordo_passes or self._ordo_synced:
                if not self._ordo_error:
                    self._ordo_error = (
                        "ordo.torch: backward() reached parameter '%s' %d "
                        "times before step(): pass backward_passes_per_step="
                        "%d to the DistributedOptimizer to accumulate that "
                        "many" % (self._ordo_params[k][0], n, n))
                return
            if n == self._ordo_passes:
                self._ordo_push(k, self._ordo_params[k][1].grad)
        return hook

    def _ordo_raise(self):
        if self._ordo_error:
            raise RuntimeError(self._ordo_error)

    def _ordo_push(self, k, grad):
        if not self._ordo_none and self._ordo_lr_it != self._ordo_it:
            self._ordo_send_lr()
        buf = self._ordo_send[k][self._ordo_it % 2]
        with torch.no_grad():
            if grad is None:
                buf.zero_()
            else:
                buf.copy_(grad.reshape(-1))
        _job["client"].push(self._ordo_tensors[k], buf.numpy(), self._ordo_it)
        self._ordo_pushed[k] = True

    def _ordo_before_forward(self, ks):
        def hook(module, inputs):
            c = _job["client"]
            if c is None:
                return
            for k in ks:  # this iteration's parameters (arrived: at once)
                c.wait(self._ordo_tensors[k], self._ordo_it)
        return hook

    def _ordo_complete_pushes(self):
        for k, (_, p) in enumerate(self._ordo_params):
            if not self._ordo_pushed[k]:
                # no gradient this iteration: zeros complete the round
                self._ordo_push(k, p.grad if self._ordo_count[k] else None)

    def wait_parameters(self):
        """server.optimizer = sgd with model=: waits for every parameter
        of the last step (the forward passes wait for their own; this is
        for reading them otherwise, e.g. to save the model)."""
        c = _job["client"]
        for t in self._ordo_tensors:
            c.wait(t, self._ordo_it)

    def synchronize(self):
        """Pushes what backward() did not reach (zeros), then waits for
        every parameter's answer of this iteration: with server.optimizer
        = none each .grad is then the average, so it can be clipped or
        inspected before step(). step() calls it if the program did not."""
        self._ordo_raise()
        if self._ordo_synced:
            return
        c = _job["client"]
        self._ordo_complete_pushes()
        for t in self._ordo_tensors:
            c.wait(t, self._ordo_it + 1)
        if self._ordo_none:
            with torch.no_grad():
                for (_, p), buf in zip(self._ordo_params, self._ordo_recv):
                    avg = buf.view_as(p)
                    if p.grad is not None:
                        p.grad.copy_(avg)
                    elif bool(torch.any(avg != 0)):
                        p.grad = avg.clone()  # another worker's gradient
                    # else no worker had one: .grad stays None and the
                    # optimizer skips the parameter, as torch would
        self._ordo_synced = True

    def step(self, closure=None):
        if closure is not None:
            raise ValueError("ordo.torch: step(closure) is not supported")
        self._ordo_raise()
        result = None
        if self._ordo_lazy:
            self._ordo_complete_pushes()  # the forward passes wait
        else:
            self.synchronize()
        if self._ordo_none:
            result = super(self.__class__, self).step()
        # else the servers stepped: the new values are in place
        self._ordo_count = [0] * len(self._ordo_params)
        self._ordo_pushed = [False] * len(self._ordo_params)
        self._ordo_synced = False
        self._ordo_it += 1
        return result

    @property
    def transfer_order(self):
        """The parameters' names in the order they were declared: the
        order the gate sends them in under scheduling.order = layer, tio
        or tao (transfer_order_source says where it came from)."""
        return [name for name, _ in self._ordo_params]

    @property
    def iteration(self):
        """The iteration the next step() completes (from 0, or where a
        resumed job starts)."""
        return self._ordo_it

    def _ordo_finish(self):
        self.wait_parameters()  # the last step's values, in place
        _job["client"].finish(self._ordo_it, time.monotonic() - self._ordo_t0)


def DistributedOptimizer(optimizer, named_parameters=None,
                         backward_passes_per_step=1, model=None):
    """Wraps a torch.optim.Optimizer for training over ordo (the module's
    docstring says how). Starts the job: every worker must create it, with
    the same parameters in the same order. model (optional): with
    server.optimizer = sgd, step() does not wait; each of model's modules
    waits for its own parameters just before its forward, so the first
    layers compute while the last ones' parameters still arrive."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError("ordo.torch.DistributedOptimizer wraps a "
                        "torch.optim.Optimizer, got %s" % type(optimizer).__name__)
    body = {k: v for k, v in _Distributed.__dict__.items()
            if k not in ("__dict__", "__weakref__")}
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,), body)
    opt = cls.__new__(cls)
    # the wrapped optimizer's groups, defaults and state, as they are
    opt.__dict__.update(optimizer.__dict__)
    opt._ordo_setup(named_parameters, backward_passes_per_step, model)
    return opt
