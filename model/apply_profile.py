#!/usr/bin/env python3
"""Replace a model file's op times with measured ones.

    model/apply_profile.py MODEL.json PROFILE.json OUT.json [--device NAME]

PROFILE.json maps op names to measured times in microseconds, e.g. from a
framework profiler's per-op summary:

    {"features.0": 412.5, "features.0.bwd": 790.1, ...}

Every op of the model must be in the profile (a partial profile would mix
two sources of truth); ops in the profile that the model lacks are an error
too. The output is the same model with "times" = {"source": "measured",
...} and the new time_us values; roofline fields (flops, bytes) are kept as
they are. Only the Python standard library is needed.
"""
import argparse
import json
import math
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("profile")
    ap.add_argument("out")
    ap.add_argument("--device", default="", help="where the profile was taken")
    args = ap.parse_args(argv)

    with open(args.model) as f:
        model = json.load(f)
    with open(args.profile) as f:
        profile = json.load(f)
    if not isinstance(profile, dict):
        sys.exit(f"{args.profile}: must be an object mapping op names to times")
    names = [op["name"] for op in model["ops"]]
    missing = [n for n in names if n not in profile]
    extra = sorted(set(profile) - set(names))
    if missing:
        sys.exit(f"{args.profile}: no time for {len(missing)} op(s), e.g. '{missing[0]}'")
    if extra:
        sys.exit(f"{args.profile}: op '{extra[0]}' is not in {args.model}")
    for op in model["ops"]:
        t = profile[op["name"]]
        if not isinstance(t, (int, float)) or isinstance(t, bool) or not math.isfinite(t) or t < 0:
            sys.exit(f"{args.profile}: '{op['name']}': time must be a number >= 0")
        op["time_us"] = round(float(t), 3)
    model["times"] = {"source": "measured",
                      "note": f"op times from {args.profile}"}
    if args.device:
        model["times"]["device"] = args.device
    with open(args.out, "w") as f:
        json.dump(model, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
