#!/usr/bin/env bash
# bench/security_goodput.sh BUILD_DIR [SIZES] [LAYOUTS] [ROUNDS] - what
# security.mode costs: bench_goodput's ordo jobs in mode none, secret (a
# job secret and each process's token checked at every connection, the
# default under ps-launch) and curve (a key pair made here), alternating
# ROUNDS times (default 5) in one run so the machine's noise hits all
# alike. Prints per partition size and layout the median goodput of each
# mode and the median and range of the rounds' ratios secret / none and
# curve / none. Defaults: sizes 256K,1M,4M; layouts 1x1,2x2.
set -euo pipefail
build=$(cd "${1:?usage: bench/security_goodput.sh BUILD_DIR [SIZES] [LAYOUTS] [ROUNDS]}" && pwd)
sizes=${2:-256K,1M,4M}
layouts=${3:-1x1,2x2}
rounds=${4:-5}
work=$(mktemp -d /tmp/ordo-security-goodput.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$build/ps-keygen" "$work/keys" >/dev/null
secret=$("$build/ps-keygen" --secret)
for ((r = 1; r <= rounds; r++)); do
	for mode in none secret curve; do
		extra=()
		[ $mode = curve ] && extra=(--set security.mode=curve --set "security.keys_dir=$work/keys")
		[ $mode = secret ] && extra=(--set security.mode=secret)
		ORDO_JOB_SECRET=$secret "$build/bench/bench_goodput" --sizes "$sizes" \
			--layouts "$layouts" --bytes 256M --rounds 1 "${extra[@]}" \
			>"$work/$mode-$r.md"
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
modes = ("none", "secret", "curve")
runs = {m: [rows("%s/%s-%d.md" % (work, m, r)) for r in range(1, rounds + 1)] for m in modes}
print("| partition | W x S | none MB/s | secret MB/s | curve MB/s | secret / none (range) | curve / none (range) |")
print("|---:|:---:|---:|---:|---:|---:|---:|")
for key in runs["none"][0]:
    v = {m: [r[key] for r in runs[m]] for m in modes}
    def ratio(m):
        q = [y / x for x, y in zip(v["none"], v[m])]
        return "%.2f (%.2f-%.2f)" % (statistics.median(q), min(q), max(q))
    print("| %s | %s | %.0f | %.0f | %.0f | %s | %s |" % (key[0], key[1], statistics.median(v["none"]), statistics.median(v["secret"]), statistics.median(v["curve"]), ratio("secret"), ratio("curve")))
print("\n%d alternating rounds of bench_goodput (--bytes 256M --rounds 1) per mode; ordo's goodput (push + pull payload bytes / the slowest worker's time)." % rounds)
PY
