#!/usr/bin/env python3
"""bench/dilation_compare.py - does ps-bench's --dilation tell the truth?

    python3 bench/dilation_compare.py LABEL=results.csv LABEL=results.csv ...

Reads ps-bench results.csv files (the first is the reference, normally an
undilated run on a machine with cores to spare) and prints a Markdown
table: per model, bandwidth and preset (measured tcp rows only), each
file's median iteration time and its ratio to the reference's, and each
file's CPU busy %. scripts/device-check.sh uses it to set an undilated
10 Gbit/s run beside dilated ones.
"""
import csv
import sys


def load(path):
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r.get("transport") != "tcp" or r.get("runs_ok") in (None, "", "0"):
                continue
            key = (r["model"], r["bandwidth_gbps"], r["preset"])
            rows[key] = r
    return rows


def main(argv):
    if len(argv) < 2 or any("=" not in a for a in argv[1:]):
        sys.stderr.write("usage: dilation_compare.py LABEL=results.csv LABEL=results.csv ...\n")
        return 2
    runs = []
    for a in argv[1:]:
        label, path = a.split("=", 1)
        try:
            runs.append((label, load(path)))
        except (OSError, KeyError, csv.Error) as e:
            sys.stderr.write("dilation_compare.py: %s: %s\n" % (path, e))
            return 1
    ref_label, ref = runs[0]
    head = ["model", "Gbit/s", "preset", ref_label + " ms", "CPU %"]
    for label, _ in runs[1:]:
        head += [label + " ms", "CPU %", "/ " + ref_label]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] * 3 + ["---:"] * (len(head) - 3)) + "|")
    for key, r in ref.items():
        ms = float(r["iteration_ms_median"])
        cells = list(key) + ["%.1f" % ms, "%.0f" % float(r["cpu_busy_pct"] or 0)]
        for _, other in runs[1:]:
            o = other.get(key)
            if o is None:
                cells += ["-", "-", "-"]
                continue
            oms = float(o["iteration_ms_median"])
            cells += ["%.1f" % oms, "%.0f" % float(o["cpu_busy_pct"] or 0),
                      "%.3f" % (oms / ms)]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
