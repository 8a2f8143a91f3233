"""Scenarios and plans: the scenario files (conf/bench/*.ini: [bench],
[job], [model:NAME]), the values they and the command line give (presets
with their own sizes and [scheduling] keys, sizes, bandwidths, time
dilation, models), build_plan, which checks them all and turns them into
one plan, and plan_runs, the plan's runs in the order they are made.
"""

import configparser
import math
import os
import re

from .common import CFG_STR_MAX, SOURCE_DIR, UsageError, words

PRESETS = ["baseline", "tensorflow", "mxnet", "p3", "tictac-tio",
           "tictac-tao", "bytescheduler", "ordo"]
TRANSPORTS = ["tcp", "rdma"]

SCENARIO_KEYS = {
    "models": "models replayed: names under conf/models/ or .json paths",
    "bandwidths_gbps": "link bandwidths in Gbit/s, per direction",
    "transports": "tcp and/or rdma",
    "presets": "scheduling presets (docs/presets.md)",
    "reference": "the preset speedups are measured against (default "
                 "baseline, else the first preset)",
    "workers": "worker processes (one namespace each)",
    "servers": "server processes (one namespace each)",
    "warmup": "iterations run before the measured ones, per run",
    "iterations": "measured iterations per run",
    "repetitions": "runs per configuration (presets interleaved)",
    "run_timeout_s": "a run still going after this many seconds failed",
    "mtu": "MTU of the emulated links (netns mode)",
    "tbf_latency_ms": "tbf queue limit, as time at the shaped rate",
}


def parse_positive_int(name, v, lo=0):
    try:
        n = int(v)
    except ValueError:
        raise UsageError("%s: '%s' is not an integer" % (name, v))
    if n < lo:
        raise UsageError("%s: %d is below %d" % (name, n, lo))
    return n


def parse_bandwidth(v):
    try:
        b = float(v)
    except ValueError:
        raise UsageError("bad bandwidth '%s': expected a number of Gbit/s "
                         "such as 1, 10 or 25" % v)
    if not math.isfinite(b) or b < 0.001 or b > 400:
        raise UsageError("bad bandwidth '%s': Gbit/s must lie in "
                         "[0.001, 400]" % v)
    return b


def parse_size(name, v):
    """Bytes from '1048576', '256K', '4M', '1G' (or KiB, MiB, GiB; powers
    of 1024), as ordo's config reads sizes."""
    m = re.match(r"^\s*(\d+)\s*([kKmMgG]?)(?:i?[bB])?\s*$", v)
    if not m:
        raise UsageError("%s: '%s' is not a size (bytes, or a number with "
                         "K, M or G)" % (name, v))
    n = int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[
        m.group(2).lower()]
    if n < 4 or n % 4:
        raise UsageError("%s: %s is not a positive multiple of 4 bytes" %
                         (name, v))
    return n


def size_label(n):
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, unit)
    return str(n)


def parse_preset(v):
    """A preset, or PRESET@PARTITION/CREDIT (either size may be left out:
    ordo@1M, ordo@/4M): the preset with scheduling.partition_size and
    credit_size set; either followed by +KEY=VALUE for more [scheduling]
    keys (ordo+credit_refine=off). Returns (label, preset, partition or
    None, credit or None, settings: ((key, value), ...)); the label is how
    rows name it."""
    head, *extras = v.split("+")
    settings = []
    for e in extras:
        key, eq, value = e.partition("=")
        if not eq or not re.fullmatch(r"[a-z_]+", key) or \
                not re.fullmatch(r"[A-Za-z0-9_.-]+", value):
            raise UsageError("'%s': +%s is not a [scheduling] KEY=VALUE "
                             "(e.g. ordo+credit_refine=off)" % (v, e))
        settings.append((key, value))
    base, _, sizes = head.partition("@")
    if base not in PRESETS:
        raise UsageError("unknown preset '%s' (allowed: %s, each optionally"
                         " as PRESET@PARTITION/CREDIT, e.g. ordo@1M/4M, "
                         "and +KEY=VALUE)" % (base, ", ".join(PRESETS)))
    suffix = "".join("+%s=%s" % kv for kv in settings)
    if "@" not in head:
        return head + suffix, base, None, None, tuple(settings)
    part, _, credit = sizes.partition("/")
    p = parse_size("partition size of '%s'" % v, part) if part else None
    c = parse_size("credit size of '%s'" % v, credit) if credit else None
    if p is None and c is None:
        raise UsageError("'%s': give PRESET@PARTITION/CREDIT (e.g. "
                         "ordo@1M/4M)" % v)
    if p and c and c < p:
        raise UsageError("'%s': the credit window is smaller than a "
                         "partition (no partition could ever be sent)" % v)
    label = base + "@" + (size_label(p) if p else "") + \
        ("/" + size_label(c) if c else "")
    return label + suffix, base, p, c, tuple(settings)


def grid_presets(base, sizes):
    """Every PRESET@P/C with P <= C of sizes (ps-bench --grid)."""
    sizes = sorted(set(sizes))
    return ["%s@%s/%s" % (base, size_label(p), size_label(c))
            for p in sizes for c in sizes if c >= p]


def parse_dilation(v):
    try:
        d = float(v)
    except ValueError:
        raise UsageError("--dilation: '%s' is not a number" % v)
    if not math.isfinite(d) or d < 1 or d > 1000:
        raise UsageError("--dilation: %s must lie in [1, 1000] (1: no "
                         "dilation)" % v)
    return d


def bw_label(b):
    return ("%g" % b)


def resolve_model(name):
    if name.endswith(".json") or "/" in name:
        path = os.path.abspath(name)
        label = os.path.splitext(os.path.basename(name))[0]
    else:
        path = os.path.join(SOURCE_DIR, "conf", "models", name + ".json")
        label = name
    if not os.path.isfile(path):
        avail = sorted(f[:-5] for f in os.listdir(
            os.path.join(SOURCE_DIR, "conf", "models"))
            if f.endswith(".json")) if os.path.isdir(
            os.path.join(SOURCE_DIR, "conf", "models")) else []
        raise UsageError("model '%s' not found (%s); shipped models: %s" %
                         (name, path, ", ".join(avail) or "none found"))
    if len(path) > CFG_STR_MAX:
        raise UsageError("model path longer than %d characters: %s" %
                         (CFG_STR_MAX, path))
    return label, path


def scenario_path(name):
    if os.path.sep in name or name.endswith(".ini"):
        return name
    return os.path.join(SOURCE_DIR, "conf", "bench", name + ".ini")


def load_scenario(path):
    if not os.path.isfile(path):
        raise UsageError("scenario file not found: %s" % path)
    cp = configparser.ConfigParser(inline_comment_prefixes=(";", "#"),
                                   comment_prefixes=(";", "#"))
    cp.optionxform = str
    try:
        cp.read(path)
    except configparser.Error as e:
        raise UsageError("%s: %s" % (path, e))
    sc = {"warmup": "1", "iterations": "3", "repetitions": "2",
          "workers": "2", "servers": "2", "transports": "tcp rdma",
          "presets": " ".join(PRESETS), "run_timeout_s": "180",
          "mtu": "9000", "tbf_latency_ms": "25"}
    for sec in cp.sections():
        if sec not in ("bench", "job") and not sec.startswith("model:"):
            raise UsageError("%s: unknown section [%s] (allowed: [bench], "
                             "[job], [model:NAME])" % (path, sec))
    if cp.has_section("bench"):
        for k, v in cp.items("bench"):
            if k not in SCENARIO_KEYS:
                raise UsageError("%s: unknown key '%s' in [bench] (allowed:"
                                 " %s)" % (path, k, ", ".join(SCENARIO_KEYS)))
            sc[k] = v
    sc["job"] = []
    if cp.has_section("job"):
        for k, v in cp.items("job"):
            if "." not in k:
                raise UsageError("%s: [job] key '%s' must be section.key" %
                                 (path, k))
            sc["job"].append("%s=%s" % (k, v))
    sc["per_model"] = {}
    for sec in cp.sections():
        if sec.startswith("model:"):
            over = {}
            for k, v in cp.items(sec):
                if k not in ("warmup", "iterations", "repetitions",
                             "run_timeout_s"):
                    raise UsageError("%s: [%s] may set warmup, iterations, "
                                     "repetitions, run_timeout_s; not '%s'" %
                                     (path, sec, k))
                over[k] = v
            sc["per_model"][sec[6:]] = over
    return sc


def build_plan(sc, args):
    """Validates the scenario plus command-line overrides."""
    for k in ("models", "bandwidths_gbps", "transports", "presets",
              "workers", "servers", "warmup", "iterations", "repetitions",
              "run_timeout_s"):
        v = getattr(args, k, None)
        if v is not None:
            sc[k] = str(v)
    if "models" not in sc or "bandwidths_gbps" not in sc:
        raise UsageError("the scenario names no models or no bandwidths")
    plan = {}
    plan["models"] = [resolve_model(m) for m in words(sc["models"])]
    plan["bandwidths"] = [parse_bandwidth(b)
                          for b in words(sc["bandwidths_gbps"])]
    plan["transports"] = words(sc["transports"])
    for t in plan["transports"]:
        if t not in TRANSPORTS:
            raise UsageError("unknown transport '%s' (allowed: %s)" %
                             (t, ", ".join(TRANSPORTS)))
    presets = words(sc["presets"])
    if getattr(args, "tune", False):
        if args.presets is None:
            presets = ["ordo"]
        if len(presets) != 1 or "@" in presets[0] or "+" in presets[0] or \
                getattr(args, "grid", None):
            raise UsageError("--tune tunes the sizes of one preset: give "
                             "--presets NAME (default ordo), no sizes, no "
                             "--grid")
    if getattr(args, "grid", None):
        sizes = [parse_size("--grid", v) for v in words(args.grid)]
        if not sizes:
            raise UsageError("--grid: no sizes")
        for p in presets:
            if "@" in p or "+" in p:
                raise UsageError("--grid sweeps the sizes of plain presets;"
                                 " '%s' has its own" % p)
        presets = [g for p in presets for g in grid_presets(p, sizes)]
    plan["preset_def"] = {}
    plan["presets"] = []
    for v in presets:
        label, base, part, credit, settings = parse_preset(v)
        plan["presets"].append(label)
        plan["preset_def"][label] = (base, part, credit, settings)
    # the reference: --reference (must run), else the scenario's when it
    # runs (--presets may leave it out), else baseline, else the first
    ref = getattr(args, "reference", None)
    if ref is not None and ref not in plan["presets"]:
        raise UsageError("--reference %s is not among the presets (%s)" %
                         (ref, ", ".join(plan["presets"])))
    if ref is None and sc.get("reference") in plan["presets"]:
        ref = sc["reference"]
    if ref is None:
        ref = "baseline" if "baseline" in plan["presets"] or \
            not plan["presets"] else plan["presets"][0]
    plan["reference"] = ref
    if not plan["models"] or not plan["bandwidths"] or \
            not plan["presets"] or not plan["transports"]:
        raise UsageError("empty axis: every one of models, bandwidths, "
                         "transports and presets needs a value")
    for axis in ("models", "bandwidths", "transports", "presets"):
        if len(set(map(str, plan[axis]))) != len(plan[axis]):
            raise UsageError("%s: a value is repeated" % axis)
    plan["workers"] = parse_positive_int("workers", sc["workers"], 1)
    plan["servers"] = parse_positive_int("servers", sc["servers"], 1)
    if plan["workers"] + plan["servers"] > 64:
        raise UsageError("at most 64 nodes (workers + servers) on one "
                         "machine")
    plan["mtu"] = parse_positive_int("mtu", sc["mtu"], 576)
    plan["tbf_latency_ms"] = parse_positive_int("tbf_latency_ms",
                                                sc["tbf_latency_ms"], 1)
    base = {}
    for k in ("warmup", "iterations", "repetitions", "run_timeout_s"):
        base[k] = parse_positive_int(k, sc[k], 1)
    plan["counts"] = {}
    for label, _ in plan["models"]:
        c = dict(base)
        for k, v in sc["per_model"].get(label, {}).items():
            if getattr(args, k, None) is None:  # the command line wins
                c[k] = parse_positive_int("[model:%s] %s" % (label, k), v, 1)
        plan["counts"][label] = c
    plan["job"] = list(sc["job"]) + list(args.set or [])
    plan["dilation"] = parse_dilation(getattr(args, "dilation", None) or 1)
    plan["tune_trials"] = 10  # ordo's default tune.trials
    plan["tune_seeds"] = []
    if getattr(args, "tune", False):
        plan["tune_seeds"] = [parse_positive_int("--tune-seeds", v)
                              for v in words(args.tune_seeds)]
        if not plan["tune_seeds"]:
            raise UsageError("--tune-seeds: no seed")
        for kv in plan["job"]:
            k, v = kv.split("=", 1) if "=" in kv else (kv, "")
            if k == "tune.trials":
                plan["tune_trials"] = parse_positive_int(k, v, 1)
            elif k in ("tune.seed", "tune.warmup_iterations",
                       "tune.measure_iterations", "tune.then",
                       "tune.endpoint", "checkpoint.dir"):
                raise UsageError("'%s' is set by ps-bench --tune (use "
                                 "--tune-seeds, --warmup, --iterations)" %
                                 kv)
    # time dilation multiplies the job's own compute_scale (the last one
    # set wins, as in ordo's config)
    plan["compute_scale"] = 1.0
    for kv in plan["job"]:
        if kv.startswith("model.compute_scale="):
            try:
                plan["compute_scale"] = float(kv.split("=", 1)[1])
            except ValueError:
                raise UsageError("bad --set '%s': not a number" % kv)
    if plan["dilation"] != 1:
        plan["job"] = [kv for kv in plan["job"]
                       if not kv.startswith("model.compute_scale=")]
    owned = ("cluster.servers", "cluster.workers", "cluster.bind_host",
             "cluster.advertise_host", "cluster.scheduler_host",
             "cluster.scheduler_port", "transport.type", "model.file",
             "worker.mode", "train.iterations", "scheduling.preset",
             "output.dir", "metrics.bandwidth_gbps", "link.bandwidth_gbps")
    for kv in plan["job"]:
        if not re.match(r"^[a-z_]+\.[a-z_]+=", kv):
            raise UsageError("bad --set '%s': expected section.key=value" %
                             kv)
        if kv.split("=", 1)[0] in owned:
            raise UsageError("'%s' is set by ps-bench per run (use its own "
                             "options: --models, --bandwidths, --presets, "
                             "--workers, --servers, --iterations...)" % kv)
    return plan


def plan_runs(plan, rdma):
    """Every run of the plan in execution order: presets interleaved per
    repetition (rotated, so no preset always runs first after a change).
    rdma: the device probe's answer (rdma.rdma_status); the rdma runs are
    made only where it says "run", once per model at the port's rate."""
    out = []
    for model, path in plan["models"]:
        cnt = plan["counts"][model]
        for bw0 in plan["bandwidths"]:
            for tr in plan["transports"]:
                bw = bw0
                if tr == "rdma":
                    # unshaped: one row per model at the port's rate
                    if rdma["mode"] != "run" or \
                            bw0 != plan["bandwidths"][0]:
                        continue
                    bw = rdma["port"]["rate_gbps"]
                presets = plan["presets"]
                for rep in range(cnt["repetitions"]):
                    k = rep % len(presets)
                    for p in presets[k:] + presets[:k]:
                        base, part, credit, settings = \
                            plan["preset_def"][p]
                        out.append({"model": model, "model_file": path,
                                    "bw": bw, "transport": tr,
                                    "preset": p, "preset_base": base,
                                    "partition_size": part,
                                    "credit_size": credit,
                                    "settings": settings,
                                    "rep": rep + 1,
                                    "warmup": cnt["warmup"],
                                    "measured": cnt["iterations"],
                                    "total_iters": cnt["warmup"] +
                                    cnt["iterations"],
                                    "timeout": cnt["run_timeout_s"],
                                    # links not shaped: no dilation
                                    "dilation": 1.0 if tr == "rdma"
                                    else plan["dilation"]})
    return out
