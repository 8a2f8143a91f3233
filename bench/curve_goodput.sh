#!/usr/bin/env bash
# bench/curve_goodput.sh BUILD_DIR [SIZES] [LAYOUTS] [ROUNDS] - what
# security.mode = curve costs: bench_goodput's ordo jobs without and with
# CURVE (a key pair made here), alternating ROUNDS times (default 5) in one
# run so the machine's noise hits both alike. Prints per partition size and
# layout the median goodput of each mode and the median and range of the
# rounds' ratios curve / none. Defaults: sizes 256K,1M,4M; layouts 1x1,2x2.
set -euo pipefail
build=$(cd "${1:?usage: bench/curve_goodput.sh BUILD_DIR [SIZES] [LAYOUTS] [ROUNDS]}" && pwd)
sizes=${2:-256K,1M,4M}
layouts=${3:-1x1,2x2}
rounds=${4:-5}
work=$(mktemp -d /tmp/ordo-curve-goodput.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$build/ps-keygen" "$work/keys" >/dev/null
for ((r = 1; r <= rounds; r++)); do
	for mode in none curve; do
		extra=()
		[ $mode = curve ] && extra=(--set security.mode=curve --set "security.keys_dir=$work/keys")
		"$build/bench/bench_goodput" --sizes "$sizes" --layouts "$layouts" \
			--bytes 256M --rounds 1 "${extra[@]}" >"$work/$mode-$r.md"
	done
done
python3 - "$work" "$rounds" <<'PY'
import glob, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def rows(path):
    out = {}
    for line in open(path):
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(c) >= 6 and c[0].endswith("KiB"):
            out[(c[0], c[1])] = float(c[4])
    return out
runs = {m: [rows("%s/%s-%d.md" % (work, m, r)) for r in range(1, rounds + 1)] for m in ("none", "curve")}
print("| partition | W x S | none MB/s | curve MB/s | curve / none | range |")
print("|---:|:---:|---:|---:|---:|---:|")
for key in runs["none"][0]:
    a = [r[key] for r in runs["none"]]
    b = [r[key] for r in runs["curve"]]
    q = [y / x for x, y in zip(a, b)]
    print("| %s | %s | %.0f | %.0f | %.2f | %.2f-%.2f |" % (key[0], key[1], statistics.median(a), statistics.median(b), statistics.median(q), min(q), max(q)))
print("\n%d alternating rounds of bench_goodput (--bytes 256M --rounds 1) per mode; ordo's goodput (push + pull payload bytes / the slowest worker's time)." % rounds)
PY
