#!/usr/bin/python3
"""
model/generate.py - writes the model files conf/models/*.json
(format: docs/model-format.md) from real model graphs.

Needs python3-torch and python3-torchvision (Debian 12: torch 1.13,
torchvision 0.14); nothing is downloaded (no pretrained weights: only the
shapes matter). Building and testing ordo do not need this script. The
shebang is /usr/bin/python3, where Debian's python3-torch is installed;
with another interpreter that has torch, run `python3 model/generate.py`.
All nine models take about 7 minutes on 2 CPU cores (the shape pass runs
the models for real; the transformer's 32000-way output projection and
inception_v3 dominate).

    model/generate.py                       # all models, batch 32, into conf/models
    model/generate.py --models vgg16,par32 --batch 64 --out /tmp/m

Output is deterministic: the same torch/torchvision and arguments give
byte-identical files.

Models
------
vgg16, resnet50, alexnet, densenet121, mobilenet_v2, inception_v3
    torchvision.models.<name>(weights=None), traced with torch.fx
    (symbolic_trace through a Tracer that also records the module scope
    of every node), shapes from torch.fx.passes.shape_prop.ShapeProp on a
    real float32 input of [batch, 3, 224, 224] (299 x 299 for
    inception_v3). All models are traced in train mode: this is the
    training graph (dropout active, batch-norm in batch-statistics mode).
    inception_v3 is built with aux_logits=True, init_weights=False and
    transform_input=False; in train mode torchvision runs the auxiliary
    classifier (AuxLogits, after Mixed_6e), so it is in the graph and its
    3,326,696 parameters are included (27,161,264 in all).
    densenet121 (memory_efficient=False, the default) and mobilenet_v2
    are the models with many small tensors: 364 and 158, most of them
    batch-norm weight and bias vectors (densenet121: 7,978,856 parameters,
    243 tensors of at most 1024 elements; mobilenet_v2: 3,504,872, 107).
    A dense layer concatenates all earlier outputs of its block (one cat
    op per layer, up to 25 inputs at the end of denseblock3);
    mobilenet_v2's depthwise convolutions have groups = channels.
transformer
    The "base" Transformer of Vaswani et al. (2017): torch.nn.Transformer
    (d_model 512, 8 heads, 6 encoder + 6 decoder layers, FFN 2048, ReLU,
    dropout 0.1, post-norm, sequence-first [L, N, E]) plus one shared
    source/target embedding of a 32,000-token vocabulary whose weight is
    also the pre-softmax output projection ("generator", no bias) - the
    three-way weight tying of the paper. Embeddings are scaled by
    sqrt(512) and added to fixed sinusoidal positional encodings (a buffer,
    not a parameter), then dropout. Source and target are 128 tokens, the
    batch is 32 sequences per worker (4096 source tokens), the decoder
    self-attention has the causal mask, no padding masks. fx cannot trace
    the fast-path checks of nn.TransformerEncoderLayer/DecoderLayer.forward
    (they test tensor properties), so each layer's forward is replaced by
    its own slow path (_sa_block/_mha_block/_ff_block, same modules, same
    math) and nn.MultiheadAttention is a leaf op. Parameters: 60,524,544
    (nn.Transformer 44,140,544 + embedding 16,384,000).
    The tied weight "embed.weight" is read by three forward ops (source
    embedding, target embedding, generator); its gradient is produced by
    the backward op of its first forward reader ("embed.bwd", which runs
    last), which also depends on the other readers' backward ops (the
    gradient is their sum).
par32, seq32
    The TicTac toy models (Hashemi et al., section 6: "Par-32, a flat model
    with 32 concurrent layers" and "Seq-32, a sequential model with 32
    layers"). The paper gives no sizes; these follow the authors' public
    code (github.com/xldrx/tf-comm-scheduling, models.py, ToyModel with
    parameter_size 2 MiB): every parameter is a float32 vector of 524,288
    elements (2 MiB); an op slices its first 1000 elements and multiplies
    the [batch, 1000] activation by them; a layer sums (add_n) its ops'
    outputs; the loss is the mean squared error against [batch, 1000]
    labels. Par-32 = one layer of 32 ops (32 independent branches reading
    the input, one add_n of 32), Seq-32 = 32 layers of one op each (a
    chain; the one-input add_n is an identity and is merged away).
    Both have 32 tensors and 16,777,216 parameters.

Ops
---
One forward op per traced node that computes: call_module,
call_function and call_method nodes. Placeholders, get_attr and output
nodes are not ops, and neither are pure views, which are merged into their
consumers (the consumer depends on the view's producers): torch.flatten,
operator.getitem (tuple element or slice), getattr, tuple/namedtuple
construction (inception_v3's InceptionOutputs), and the methods view,
reshape, flatten, size, dim, transpose, permute, unsqueeze, squeeze,
expand, t, contiguous. A synthetic forward op "loss" (cross-entropy over
the logits; for inception_v3 of both heads, for the toy models mean
squared error) consumes the graph outputs.

Op names: a call_module node is named by the module's qualified name
("features.0", "layer1.0.conv1"), the k-th extra call of the same module
gets "_k" ("layer1.0.relu_2"); a call_function/call_method node is named
"<scope>.<function>" where scope is the module whose forward called it
("layer1.0.add", "Mixed_5b.cat", "Mixed_5b.branch1x1.relu"), with "_k" for
repeats in one scope. reads = the parameters of the module (state_dict
names) plus parameters used directly through get_attr; buffers (batch-norm
running statistics, masks, positional encodings) are not parameters.
deps = the ops producing the node's inputs.

Backward: every forward op X has "X.bwd" (also parameter-free ones: they
carry the gradient flow). X.bwd depends on the .bwd ops of X's consumers;
"loss.bwd" depends on "loss". grads = the parameters X reads (a shared
parameter: see transformer above). ops lists the forward ops in graph
order, then the backward ops in reverse graph order.

Tensors are listed in forward order (order of the first reading op,
within a module in named_parameters() order).

Times (roofline, NVIDIA V100 SXM2, fp32)
----------------------------------------
    time_us = OVERHEAD_US + max(flops / PEAK_FLOPS, bytes / MEM_BW) * 1e6
    PEAK_FLOPS = 15.7e12 FLOP/s, MEM_BW = 900e9 B/s, OVERHEAD_US = 5
rounded to 0.001 us. Elements are counted as 4 bytes.

FLOPs, forward (N = batch, out = output elements, in = input elements):
    Conv2d          2 * N * Cout * Hout * Wout * Cin/groups * kh * kw
    Linear          2 * rows * in_features * out_features
                    (rows = output elements / out_features)
    MultiheadAttn   projections 2*Lq*N*E*E (q) + 2*2*Lk*N*E*E (k, v)
                    + 2*Lq*N*E*E (out), scores 2*N*Lq*Lk*E, weighted sum
                    2*N*Lq*Lk*E, softmax/scale/mask 5*N*h*Lq*Lk
    BatchNorm2d     5 * out          LayerNorm      5 * out
    ReLU, ReLU6     1 * out          Dropout        2 * out
    add / mul       1 * out          cat            0 (memory only)
    Max/AvgPool2d   kh * kw * out    AdaptiveAvgPool in
    Embedding       0                loss           5 * logits (+1 * labels)
    toy slice*mul   1 * out
    anything else   1 * out
Bytes, forward: 4 * (inputs + outputs + parameters read), where inputs are
the node's tensor inputs that are not parameters (activations, buffers).
Exceptions: MultiheadAttn adds 4 * 2 * N*h*Lq*Lk (attention probabilities
written and read again) and 4 * 2 * (Lq + 2*Lk)*N*E (q, k, v projections);
Embedding counts the gathered rows (= outputs) instead of the whole table;
a toy op reads the 1000-element slice, not the whole vector.

Backward: FLOPs 2x forward for Conv2d, Linear and MultiheadAttn (input
gradient + weight gradient), 1x forward for everything else.
Bytes 4 * (outputs [gradient in] + 2 * inputs [saved input, gradient out]
+ 2 * parameters [read, gradient written]). Exceptions: Embedding backward
writes a dense weight gradient: 4 * (outputs + inputs + table); a toy op's
backward also writes its dense 2 MiB gradient (the slice gradient padded
to the whole vector, as TensorFlow's tf.slice gradient does).
"""

import argparse
import json
import math
import operator
import os
import sys
import types

PEAK_FLOPS = 15.7e12
MEM_BW = 900e9
OVERHEAD_US = 5.0
DEVICE = "NVIDIA V100 (SXM2, fp32)"

MODELS = ["vgg16", "resnet50", "inception_v3", "alexnet", "densenet121",
          "mobilenet_v2", "transformer", "par32", "seq32"]

# Parameter totals that must come out exactly.
EXPECTED_PARAMS = {
    "vgg16": 138357544,
    "resnet50": 25557032,
    "alexnet": 61100840,
    "inception_v3": 27161264,
    "densenet121": 7978856,
    "mobilenet_v2": 3504872,
    "transformer": 60524544,
    "par32": 16777216,
    "seq32": 16777216,
}

# Toy model constants (TicTac authors' ToyModel).
TOY_VAR_ELEMS = 2 * 2 ** 20 // 4  # 2 MiB of float32
TOY_CARRY = 1000                   # slice length / activation width
TOY_LAYERS = 32

# Transformer "base".
TF_VOCAB = 32000
TF_DMODEL = 512
TF_HEADS = 8
TF_LAYERS = 6
TF_FFN = 2048
TF_DROPOUT = 0.1
TF_SEQ = 128


def time_us(flops, nbytes):
    t = OVERHEAD_US + max(flops / PEAK_FLOPS, nbytes / MEM_BW) * 1e6
    return float("%.3f" % t)


def times_block():
    return {
        "source": "roofline",
        "device": DEVICE,
        "peak_flops": PEAK_FLOPS,
        "mem_bandwidth": MEM_BW,
        "overhead_us": OVERHEAD_US,
        "note": "time = overhead + max(flops / peak_flops, bytes / "
                "mem_bandwidth); counting rules: model/generate.py",
    }


class Op:
    """One forward op with its roofline numbers (backward derived)."""

    def __init__(self, name, deps, reads, fflops, fbytes, bflops, bbytes):
        self.name = name
        self.deps = deps      # forward op names
        self.reads = reads    # tensor names
        self.fflops = int(fflops)
        self.fbytes = int(fbytes)
        self.bflops = int(bflops)
        self.bbytes = int(bbytes)


def emit(name, description, batch, tensors, fwd, shared_extra_deps=None):
    """Builds the file text from forward ops (in order) and tensors
    [(name, shape)]; backward ops are derived. Returns (text, summary)."""
    names = [op.name for op in fwd]
    assert len(set(names)) == len(names), "duplicate op names"
    index = {n: i for i, n in enumerate(names)}
    consumers = {n: [] for n in names}
    for op in fwd:
        for d in op.deps:
            assert d in index and index[d] < index[op.name], (op.name, d)
            consumers[d].append(op.name)
    sinks = [op.name for op in fwd if not consumers[op.name]]
    assert sinks == [fwd[-1].name], "the loss must be the only sink: %s" % sinks

    # Gradient of a tensor: backward op of its first forward reader.
    grad_of = {}
    readers = {}
    for op in fwd:
        for t in op.reads:
            readers.setdefault(t, []).append(op.name)
            grad_of.setdefault(t, op.name)
    tnames = [t for t, _ in tensors]
    assert set(readers) == set(tnames), "tensors read != tensors listed"
    grads = {op.name: [] for op in fwd}
    for t in tnames:
        grads[grad_of[t]].append(t)

    lines = []
    for op in fwd:
        o = {"name": op.name, "kind": "forward",
             "time_us": time_us(op.fflops, op.fbytes),
             "flops": op.fflops, "bytes": op.fbytes}
        if op.reads:
            o["reads"] = list(op.reads)
        o["deps"] = list(op.deps)
        lines.append(o)
    for op in reversed(fwd):
        if consumers[op.name]:
            deps = [c + ".bwd" for c in consumers[op.name]]
        else:
            deps = [op.name]
        for t in grads[op.name]:
            for r in readers[t]:
                if r != op.name and r + ".bwd" not in deps:
                    deps.append(r + ".bwd")
        o = {"name": op.name + ".bwd", "kind": "backward",
             "time_us": time_us(op.bflops, op.bbytes),
             "flops": op.bflops, "bytes": op.bbytes}
        if grads[op.name]:
            o["grads"] = grads[op.name]
        o["deps"] = deps
        lines.append(o)

    fwd_us = sum(o["time_us"] for o in lines if o["kind"] == "forward")
    bwd_us = sum(o["time_us"] for o in lines if o["kind"] == "backward")
    params = sum(math.prod(s) for _, s in tensors)
    assert len(description) < 256

    def dump(x):
        return json.dumps(x, separators=(", ", ": "))

    out = ["{",
           ' "format": "ordo-model",',
           ' "version": 1,',
           ' "name": %s,' % dump(name),
           ' "description": %s,' % dump(description),
           ' "batch": %d,' % batch,
           ' "times": %s,' % dump(times_block()),
           ' "tensors": [']
    out.append(",\n".join("  " + dump({"name": t, "shape": list(s)})
                          for t, s in tensors))
    out.append(" ],")
    out.append(' "ops": [')
    out.append(",\n".join("  " + dump(o) for o in lines))
    out.append(" ]")
    out.append("}")
    summary = {"name": name, "params": params, "tensors": len(tensors),
               "ops": len(lines), "forward_ops": len(fwd),
               "forward_ms": fwd_us / 1000.0, "backward_ms": bwd_us / 1000.0,
               "batch": batch}
    return "\n".join(out) + "\n", summary


# ---------------------------------------------------------------------------
# torch.fx models


def _torch():
    import torch  # noqa: F401  (imported lazily: --help works without it)
    return torch


VIEW_METHODS = {"view", "reshape", "flatten", "size", "dim", "transpose",
                "permute", "unsqueeze", "squeeze", "expand", "t",
                "contiguous"}


def make_tracer(leaf_types, nonleaf_types):
    torch = _torch()

    class ScopedTracer(torch.fx.Tracer):
        """symbolic_trace's Tracer that records, in node.meta["scope"],
        the qualified name of the module whose forward created the node."""

        def __init__(self):
            super().__init__()
            self.scope = [""]

        def is_leaf_module(self, m, qualname):
            if isinstance(m, nonleaf_types):
                return False
            if isinstance(m, leaf_types):
                return True
            return super().is_leaf_module(m, qualname)

        def call_module(self, m, forward, args, kwargs):
            self.scope.append(self.path_of_module(m))
            try:
                return super().call_module(m, forward, args, kwargs)
            finally:
                self.scope.pop()

        def create_node(self, *args, **kwargs):
            node = super().create_node(*args, **kwargs)
            node.meta["scope"] = self.scope[-1]
            return node

    return ScopedTracer()


def _metas(meta):
    """TensorMetadata leaves of a (possibly nested) tensor_meta."""
    if meta is None:
        return []
    if hasattr(meta, "shape") and hasattr(meta, "dtype"):
        return [meta]
    if isinstance(meta, (list, tuple)):
        r = []
        for m in meta:
            r.extend(_metas(m))
        return r
    if isinstance(meta, dict):
        r = []
        for k in meta:
            r.extend(_metas(meta[k]))
        return r
    return []


def _numel(node):
    return sum(math.prod(m.shape) for m in _metas(node.meta.get("tensor_meta")))


def _shape(node):
    ms = _metas(node.meta.get("tensor_meta"))
    return tuple(ms[0].shape) if ms else ()


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def fx_model(name, model, inputs, leaf_types=(), nonleaf_types=(),
             loss_flops_per_elem=5):
    """Traces model (already in the wanted mode), propagates shapes and
    returns (tensors, forward ops)."""
    torch = _torch()
    nn = torch.nn
    view_functions = {torch.flatten, operator.getitem, getattr}

    tracer = make_tracer(tuple(leaf_types), tuple(nonleaf_types))
    graph = tracer.trace(model)
    gm = torch.fx.GraphModule(tracer.root, graph)
    with torch.no_grad():
        from torch.fx.passes.shape_prop import ShapeProp
        ShapeProp(gm).propagate(*inputs)

    canon = {}  # id(param) -> state_dict name (first name if shared)
    for pname, p in model.named_parameters():
        canon.setdefault(id(p), pname)

    def resolve(target):
        obj = model
        for part in target.split("."):
            obj = getattr(obj, part)
        return obj

    prod = {}    # node -> list of op names producing it (views: merged)
    preads = {}  # node -> parameters flowing in directly (get_attr, views)
    ops = []
    used_names = {}

    def unique(base):
        k = used_names.get(base, 0)
        used_names[base] = k + 1
        return base if k == 0 else "%s_%d" % (base, k)

    def uniq_extend(lst, items):
        for x in items:
            if x not in lst:
                lst.append(x)

    unknown = set()
    outputs = []
    out_numel = {}
    for n in graph.nodes:
        if n.op == "placeholder":
            prod[n], preads[n] = [], []
            continue
        if n.op == "get_attr":
            obj = resolve(n.target)
            prod[n] = []
            preads[n] = ([canon[id(obj)]]
                         if isinstance(obj, nn.Parameter) else [])
            continue
        if n.op == "output":
            for a in n.all_input_nodes:
                uniq_extend(outputs, prod[a])
            continue
        ins = n.all_input_nodes
        deps, reads = [], []
        for a in ins:
            uniq_extend(deps, prod[a])
            uniq_extend(reads, preads[a])
        is_view = ((n.op == "call_function" and (
                        n.target in view_functions
                        or (isinstance(n.target, type)
                            and issubclass(n.target, tuple))))
                   or (n.op == "call_method" and n.target in VIEW_METHODS))
        if is_view:
            prod[n], preads[n] = deps, reads
            continue

        scope = n.meta.get("scope", "")
        mod = None
        if n.op == "call_module":
            mod = resolve(n.target)
            opname = unique(n.target)
            for _, p in mod.named_parameters():
                uniq_extend(reads, [canon[id(p)]])
            kind = type(mod).__name__
        else:
            fname = (n.target if n.op == "call_method"
                     else getattr(n.target, "__name__", str(n.target)))
            opname = unique((scope + "." if scope else "") + fname)
            kind = fname

        # Elements: tensor inputs that are not parameters.
        in_el = 0
        for a in ins:
            if a.op == "get_attr" and preads[a]:
                continue
            in_el += _numel(a)
        out_el = _numel(n)
        par_el = sum(resolve_param_numel(model, canon, r) for r in reads)

        big = False  # matmul-like: backward 2x
        fbytes = 4 * (in_el + out_el + par_el)
        bbytes = 4 * (out_el + 2 * in_el + 2 * par_el)
        if isinstance(mod, nn.Conv2d):
            N, Cout, Ho, Wo = _shape(n)
            kh, kw = mod.kernel_size
            flops = 2 * N * Cout * Ho * Wo * (mod.in_channels // mod.groups) * kh * kw
            big = True
        elif isinstance(mod, nn.Linear) or kind == "linear":
            if mod is not None:
                fin, fout = mod.in_features, mod.out_features
            else:
                fin, fout = _shape(ins[0])[-1], _shape(n)[-1]
            flops = 2 * (out_el // fout) * fin * fout
            big = True
        elif isinstance(mod, nn.MultiheadAttention):
            Lq, N, E = _shape(ins[0])
            kv = ins[1] if len(ins) > 1 and _shape(ins[1])[:1] else ins[0]
            Lk = _shape(kv)[0]
            h = mod.num_heads
            flops = (2 * Lq * N * E * E + 2 * 2 * Lk * N * E * E
                     + 2 * Lq * N * E * E + 2 * 2 * N * Lq * Lk * E
                     + 5 * N * h * Lq * Lk)
            fbytes += 4 * (2 * N * h * Lq * Lk + 2 * (Lq + 2 * Lk) * N * E)
            bbytes += 4 * (2 * N * h * Lq * Lk + 2 * (Lq + 2 * Lk) * N * E)
            big = True
        elif isinstance(mod, nn.Embedding):
            flops = 0
            fbytes = 4 * (in_el + 2 * out_el)
            bbytes = 4 * (out_el + in_el + par_el)
        elif isinstance(mod, (nn.BatchNorm2d, nn.LayerNorm)):
            flops = 5 * out_el
        elif (isinstance(mod, (nn.ReLU, nn.ReLU6))
              or kind in ("relu", "relu_", "relu6")):
            flops = out_el
        elif isinstance(mod, nn.Dropout) or kind == "dropout":
            flops = 2 * out_el
        elif kind in ("add", "iadd", "mul", "imul", "add_", "mul_"):
            flops = out_el
        elif kind == "cat":
            flops = 0
        elif isinstance(mod, (nn.MaxPool2d, nn.AvgPool2d)):
            kh, kw = _pair(mod.kernel_size)
            flops = kh * kw * out_el
        elif kind in ("max_pool2d", "avg_pool2d"):
            k = n.kwargs.get("kernel_size", n.args[1] if len(n.args) > 1 else None)
            kh, kw = _pair(k)
            flops = kh * kw * out_el
        elif (isinstance(mod, nn.AdaptiveAvgPool2d)
              or kind == "adaptive_avg_pool2d"):
            flops = in_el
        else:
            unknown.add(kind)
            flops = out_el
        bflops = 2 * flops if big else flops
        ops.append(Op(opname, deps, reads, flops, fbytes, bflops, bbytes))
        out_numel[opname] = out_el
        prod[n], preads[n] = [opname], []

    if unknown:
        sys.stderr.write("%s: counted as 1 FLOP/element: %s\n"
                         % (name, ", ".join(sorted(unknown))))
    # The loss: consumes the graph outputs.
    logits = sum(out_numel[o] for o in outputs)
    lflops = loss_flops_per_elem * logits
    lbytes = 4 * (logits + 1)
    ops.append(Op("loss", outputs, [], lflops, lbytes, lflops, 4 * 2 * logits))

    # Tensors in forward order.
    order = []
    for op in ops:
        uniq_extend(order, op.reads)
    params = dict(model.named_parameters())
    tensors = [(t, tuple(params[t].shape)) for t in order]
    total = sum(p.numel() for p in model.parameters())
    traced = sum(math.prod(s) for _, s in tensors)
    if traced != total:  # the module's own count is the reference
        raise ValueError("the traced graph reads %d parameters, the "
                         "module has %d (parameters the forward never "
                         "uses?)" % (traced, total))
    return tensors, ops


_param_numel_cache = {}


def resolve_param_numel(model, canon, pname):
    key = (id(model), pname)
    if key not in _param_numel_cache:
        _param_numel_cache[key] = dict(model.named_parameters())[pname].numel()
    return _param_numel_cache[key]


def build_torchvision(name, batch):
    torch = _torch()
    import torchvision
    torch.manual_seed(0)
    if name == "inception_v3":
        model = torchvision.models.inception_v3(
            weights=None, aux_logits=True, init_weights=False,
            transform_input=False)
        size = 299
    else:
        model = getattr(torchvision.models, name)(weights=None)
        size = 224
    model.train()
    x = torch.randn(batch, 3, size, size)
    return model, (x,)


def build_transformer(batch):
    torch = _torch()
    nn = torch.nn
    torch.manual_seed(0)

    def enc_forward(self, src, src_mask=None, src_key_padding_mask=None):
        x = src
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask))
        x = self.norm2(x + self._ff_block(x))
        return x

    def dec_forward(self, tgt, memory, tgt_mask=None, memory_mask=None,
                    tgt_key_padding_mask=None, memory_key_padding_mask=None):
        x = tgt
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask,
                                           memory_key_padding_mask))
        x = self.norm3(x + self._ff_block(x))
        return x

    class TransformerBase(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(TF_VOCAB, TF_DMODEL)
            self.src_dropout = nn.Dropout(TF_DROPOUT)
            self.tgt_dropout = nn.Dropout(TF_DROPOUT)
            self.transformer = nn.Transformer(
                d_model=TF_DMODEL, nhead=TF_HEADS,
                num_encoder_layers=TF_LAYERS, num_decoder_layers=TF_LAYERS,
                dim_feedforward=TF_FFN, dropout=TF_DROPOUT)
            self.generator = nn.Linear(TF_DMODEL, TF_VOCAB, bias=False)
            self.generator.weight = self.embed.weight  # tied
            pos = torch.arange(TF_SEQ, dtype=torch.float32).unsqueeze(1)
            div = torch.exp(torch.arange(0, TF_DMODEL, 2, dtype=torch.float32)
                            * (-math.log(10000.0) / TF_DMODEL))
            pe = torch.zeros(TF_SEQ, TF_DMODEL)
            pe[:, 0::2] = torch.sin(pos * div)
            pe[:, 1::2] = torch.cos(pos * div)
            self.register_buffer("pos_enc", pe.unsqueeze(1))  # [L, 1, E]
            self.register_buffer(
                "tgt_mask",
                nn.Transformer.generate_square_subsequent_mask(TF_SEQ))
            self.scale = math.sqrt(TF_DMODEL)
            for layer in self.transformer.encoder.layers:
                layer.forward = types.MethodType(enc_forward, layer)
            for layer in self.transformer.decoder.layers:
                layer.forward = types.MethodType(dec_forward, layer)

        def forward(self, src, tgt):
            m = self.src_dropout(self.embed(src) * self.scale + self.pos_enc)
            for layer in self.transformer.encoder.layers:
                m = layer(m)
            m = self.transformer.encoder.norm(m)
            t = self.tgt_dropout(self.embed(tgt) * self.scale + self.pos_enc)
            for layer in self.transformer.decoder.layers:
                t = layer(t, m, tgt_mask=self.tgt_mask)
            t = self.transformer.decoder.norm(t)
            return self.generator(t)

    model = TransformerBase()
    model.train()
    src = torch.randint(TF_VOCAB, (TF_SEQ, batch))
    tgt = torch.randint(TF_VOCAB, (TF_SEQ, batch))
    nonleaf = (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)
    return model, (src, tgt), (nn.MultiheadAttention,), nonleaf


DESCRIPTIONS = {
    "vgg16": "torchvision vgg16 (weights=None), train mode, traced with "
             "torch.fx; input [%d, 3, 224, 224]",
    "resnet50": "torchvision resnet50 (weights=None), train mode, traced "
                "with torch.fx; input [%d, 3, 224, 224]",
    "alexnet": "torchvision alexnet (weights=None), train mode, traced with "
               "torch.fx; input [%d, 3, 224, 224]",
    "inception_v3": "torchvision inception_v3 (weights=None, aux_logits=True"
                    "), train mode: the auxiliary head (AuxLogits) is "
                    "included; traced with torch.fx; input "
                    "[%d, 3, 299, 299]",
    "densenet121": "torchvision densenet121 (weights=None), train mode, "
                   "traced with torch.fx; input [%d, 3, 224, 224]",
    "mobilenet_v2": "torchvision mobilenet_v2 (weights=None), train mode, "
                    "traced with torch.fx; input [%d, 3, 224, 224]",
    "transformer": "Transformer base (Vaswani et al.): torch.nn.Transformer "
                   "512/8 heads/6+6 layers/FFN 2048 + shared 32000-token "
                   "embedding tied to the output projection; seq 128 src "
                   "and tgt, batch %d sequences; MultiheadAttention is a "
                   "leaf op",
    "par32": "TicTac toy Par-32: 32 parallel branches, each one 524288-"
             "element (2 MiB) parameter sliced to 1000 and multiplied into "
             "a [%d, 1000] input, summed by one add_n; MSE loss",
    "seq32": "TicTac toy Seq-32: a chain of 32 layers, each one 524288-"
             "element (2 MiB) parameter sliced to 1000 and multiplied into "
             "the [%d, 1000] activation; MSE loss",
}


def build_user(spec, batch):
    """MODULE:FUNCTION: FUNCTION(batch) returns (nn.Module, example inputs)
    (a tensor or a tuple of them). MODULE is imported as Python would,
    with the current directory on the path."""
    import importlib
    modname, _, fname = spec.partition(":")
    _torch().manual_seed(0)
    sys.path.insert(0, os.getcwd())
    try:
        fn = getattr(importlib.import_module(modname), fname)
    finally:
        sys.path.pop(0)
    out = fn(batch)
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError("%s(batch) must return (model, example_inputs), "
                        "got %r" % (spec, type(out).__name__))
    model, inputs = out
    if not isinstance(inputs, tuple):
        inputs = (inputs,)
    model.train()
    return model, inputs


def gen_fx(name, batch):
    if name == "transformer":
        model, inputs, leaf, nonleaf = build_transformer(batch)
    elif ":" in name:
        model, inputs = build_user(name, batch)
        leaf, nonleaf = (), ()
    else:
        model, inputs = build_torchvision(name, batch)
        leaf, nonleaf = (), ()
    return fx_model(name, model, inputs, leaf, nonleaf)


# ---------------------------------------------------------------------------
# TicTac toy models


def gen_toy(name, batch):
    B, C, V = batch, TOY_CARRY, TOY_VAR_ELEMS
    act = B * C

    def toy_op(opname, dep, tensor):
        # slice(var)[0:1000] * input: reads input, slice; writes output
        ff = act
        fb = 4 * (act + C + act)
        # grads: d input = g * slice, d slice = sum_batch(g * input),
        # padded into a dense [V] gradient
        bf = 2 * act + act
        bb = 4 * (act + 2 * act + C + act + C + V)
        return Op(opname, [dep] if dep else [], [tensor], ff, fb, bf, bb)

    tensors, ops = [], []
    if name == "par32":
        for j in range(TOY_LAYERS):
            t = "Toy/Layer-0/Layer-0-%d" % j
            tensors.append((t, (V,)))
            ops.append(toy_op("Toy/Layer-0/op-%d/mul" % j, None, t))
        k = TOY_LAYERS
        ops.append(Op("Toy/Layer-0/add", [o.name for o in ops], [],
                      (k - 1) * act, 4 * (k * act + act),
                      0, 4 * (act + k * act)))
    else:
        prev = None
        for i in range(TOY_LAYERS):
            t = "Toy/Layer-%d/Layer-%d-0" % (i, i)
            tensors.append((t, (V,)))
            op = toy_op("Toy/Layer-%d/op-0/mul" % i, prev, t)
            ops.append(op)
            prev = op.name
    last = ops[-1].name
    # MSE against [B, 1000] labels: diff, square, mean
    ops.append(Op("loss", [last], [], 3 * act, 4 * (2 * act + 1),
                  2 * act, 4 * (act + 2 * act)))
    return tensors, ops


# ---------------------------------------------------------------------------


def torchvision_builders():
    """Names of torchvision's image-classification model builders
    (torchvision.models.<name>(weights=None) for any of them), without
    importing torch when it is not needed."""
    import torchvision.models as tvm
    return sorted(n for n in dir(tvm)
                  if n[0].islower() and callable(getattr(tvm, n))
                  and n not in ("get_model", "get_model_builder",
                                "get_model_weights", "get_weight",
                                "list_models")
                  and not isinstance(getattr(tvm, n), types.ModuleType))


def generate(name, batch):
    if name in ("par32", "seq32"):
        tensors, ops = gen_toy(name, batch)
    else:
        tensors, ops = gen_fx(name, batch)
    params = sum(math.prod(s) for _, s in tensors)
    if name in EXPECTED_PARAMS and params != EXPECTED_PARAMS[name]:
        raise AssertionError("%s: %d parameters, expected %d"
                             % (name, params, EXPECTED_PARAMS[name]))
    if ":" in name:
        description = ("%s(batch=%%d): the user's module, train mode, "
                       "traced with torch.fx" % name)
    else:
        description = DESCRIPTIONS.get(
            name, "torchvision %s (weights=None), train mode, traced with "
                  "torch.fx; input [%%d, 3, 224, 224]" % name)
    return emit(file_name(name), description % batch, batch, tensors, ops)


def file_name(name):
    """The model's name in its file: MODULE:FUNCTION -> FUNCTION."""
    return name.split(":")[-1]


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(os.path.dirname(here), "conf", "models")
    ap = argparse.ArgumentParser(
        description="Write ordo model files (docs/model-format.md) from "
                    "torch.fx traces of torchvision models, a base "
                    "Transformer and the TicTac toy models Par-32/Seq-32; "
                    "op times are a V100 roofline estimate (see the header "
                    "of this script).")
    ap.add_argument("--out", default=default_out,
                    help="output directory (default: conf/models)")
    ap.add_argument("--batch", type=int, default=32,
                    help="samples (sequences) per worker per iteration "
                         "(default 32)")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated names: any of %s (the default: "
                         "all of them), or any other torchvision "
                         "image-classification model builder, e.g. "
                         "efficientnet_b0, regnet_y_400mf, "
                         "resnext50_32x4d (traced like resnet50, "
                         "224 x 224 input), or MODULE:FUNCTION, a "
                         "function of yours that takes the batch size and "
                         "returns (nn.Module, example inputs); the file is "
                         "FUNCTION.json" % ",".join(MODELS))
    args = ap.parse_args(argv)
    if args.batch < 1:
        ap.error("--batch must be >= 1")
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in MODELS and ":" not in m]
    if unknown:
        try:
            builders = torchvision_builders()
        except ImportError as e:
            ap.error("model '%s' is not one of %s, and torchvision is not "
                     "importable to look it up (%s)"
                     % (unknown[0], ", ".join(MODELS), e))
        for m in unknown:
            if m not in builders:
                ap.error("unknown model '%s': neither one of %s nor a "
                         "torchvision model builder (torchvision has: %s)"
                         % (m, ", ".join(MODELS), ", ".join(builders)))
    os.makedirs(args.out, exist_ok=True)
    for m in names:
        try:
            text, s = generate(m, args.batch)
        except Exception as e:  # torch.fx.proxy.TraceError and the like
            if type(e).__name__ == "TraceError":
                sys.stderr.write("generate.py: torch.fx cannot trace %s "
                                 "(data-dependent Python in its forward): "
                                 "%s\n" % (m, str(e).split(". ")[0]))
                return 1
            if isinstance(e, (ValueError, TypeError, ImportError,
                              AttributeError)):
                sys.stderr.write("generate.py: %s: %s\n" % (m, e))
                return 1
            raise
        path = os.path.join(args.out, file_name(m) + ".json")
        with open(path, "w") as f:
            f.write(text)
        print("%-13s params %11d  tensors %4d  ops %5d  batch %d  "
              "forward %8.3f ms  backward %8.3f ms  -> %s"
              % (m, s["params"], s["tensors"], s["ops"], s["batch"],
                 s["forward_ms"], s["backward_ms"], path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
