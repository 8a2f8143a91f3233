#!/usr/bin/env bash
# bench/security_goodput.sh BUILD_DIR [SIZES] [LAYOUTS] [ROUNDS] - what
# security.mode costs: bench_goodput's ordo jobs in mode none, secret (a
# job secret and each process's token checked at every connection, the
# default under ps-launch), sealed (every frame AES-256-GCM under keys
# from that secret) and curve (a key pair made here), alternating ROUNDS
# times (default 5) in one run so the machine's noise hits all alike.
# Prints per partition size and layout the median goodput of each mode
# and the median and range of the rounds' ratios to the first mode.
# Defaults: sizes 256K,1M,4M; layouts 1x1,2x2.
# MODES (environment, default "none secret curve") picks the modes, each
# optionally with its transport.io_threads and
# transport.connections_per_peer as MODE:THREADS[:CONNECTIONS] (e.g.
# MODES="none secret curve:1:1 curve"; an empty field keeps the
# default); ratios are to the first.
set -euo pipefail
build=$(cd "${1:?usage: bench/security_goodput.sh BUILD_DIR [SIZES] [LAYOUTS] [ROUNDS]}" && pwd)
sizes=${2:-256K,1M,4M}
layouts=${3:-1x1,2x2}
rounds=${4:-5}
work=$(mktemp -d /tmp/ordo-security-goodput.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$build/ps-keygen" "$work/keys" >/dev/null
secret=$("$build/ps-keygen" --secret)
modes=${MODES:-none secret curve}
for ((r = 1; r <= rounds; r++)); do
	for mode in $modes; do
		m=${mode%%:*}
		case $m in none | secret | sealed | curve) ;; *) echo "security_goodput: no mode '$m' (none, secret, sealed, curve)" >&2; exit 2 ;; esac
		extra=(--set "security.mode=$m")
		[ $m = curve ] && extra+=(--set "security.keys_dir=$work/keys")
		IFS=: read -r _ threads conns <<<"$mode"
		[ -n "$threads" ] && extra+=(--set "transport.io_threads=$threads")
		[ -n "$conns" ] && extra+=(--set "transport.connections_per_peer=$conns")
		ORDO_JOB_SECRET=$secret "$build/bench/bench_goodput" --sizes "$sizes" \
			--layouts "$layouts" --bytes 256M --rounds 1 "${extra[@]}" \
			>"$work/$mode-$r.md"
	done
done
python3 - "$work" "$rounds" $modes <<'PY'
import glob, statistics, sys
work, rounds, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def rows(path):
    out = {}
    for line in open(path):
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(c) >= 6 and c[0].endswith("KiB"):
            out[(c[0], c[1])] = float(c[4])
    return out
runs = {m: [rows("%s/%s-%d.md" % (work, m, r)) for r in range(1, rounds + 1)] for m in modes}
base = modes[0]
print("| partition | W x S | " + " | ".join("%s MB/s" % m for m in modes) + " | " +
      " | ".join("%s / %s (range)" % (m, base) for m in modes[1:]) + " |")
print("|---:|:---:|" + "---:|" * (2 * len(modes) - 1))
for key in runs[base][0]:
    v = {m: [r[key] for r in runs[m]] for m in modes}
    def ratio(m):
        q = [y / x for x, y in zip(v[base], v[m])]
        return "%.2f (%.2f-%.2f)" % (statistics.median(q), min(q), max(q))
    print("| %s | %s | " % key + " | ".join("%.0f" % statistics.median(v[m]) for m in modes) +
          " | " + " | ".join(ratio(m) for m in modes[1:]) + " |")
print("\n%d alternating rounds of bench_goodput (--bytes 256M --rounds 1) per mode; ordo's goodput (push + pull payload bytes / the slowest worker's time)." % rounds)
PY
