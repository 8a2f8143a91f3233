#!/usr/bin/env bash
# tests/checkpoint/cli.sh - ps-ckpt's command line over checkpoints written
# by make_ckpt (the contents of tests/support/ckpt_fixture.h): list, show,
# verify and export outputs; the .npy bytes (Python's struct; numpy too
# when it is installed); the shard and manifest layout read by the Python
# code of docs/checkpoint-format.md itself; and every bad input failing with a
# message that names the problem and the right exit status (1 a bad
# checkpoint, 2 a usage error), never a crash.
# Usage: cli.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
src=$2
ckpt=$build/ps-ckpt
make=$build/tests/make_ckpt
tmp=$(mktemp -d /tmp/ordo-ckpt-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect STATUS PATTERN -- ARGS: the run exits STATUS and stderr matches
expect() {
	local want=$1 pat=$2
	shift 3
	"$ckpt" "$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "ps-ckpt $*: exit $rc, want $want; stderr: $(cat "$tmp/err")"
	elif ! grep -q -- "$pat" "$tmp/err"; then
		fail "ps-ckpt $*: stderr does not match '$pat': $(cat "$tmp/err")"
	fi
}

# run ARGS: the run succeeds; its stdout in $tmp/out
run() {
	if ! "$ckpt" "$@" >"$tmp/out" 2>"$tmp/err"; then
		fail "ps-ckpt $*: exit $?; stderr: $(cat "$tmp/err")"
	fi
}

has() { grep -q -- "$1" "$tmp/out" || fail "$2: no line matching '$1' in: $(cat "$tmp/out")"; }

root=$tmp/root
"$make" "$root" 10 >/dev/null || fail "make_ckpt 10"
"$make" "$root" 20 >/dev/null || fail "make_ckpt 20"
"$make" "$root" 30 --no-manifest >/dev/null || fail "make_ckpt 30"
echo "not a checkpoint" >"$root/notes.txt"
c20=$root/ckpt-000000000020

# --- list: every ckpt-* directory, newest last ----------------------------
run list "$root"
has '^10 *complete .*KiB  [0-9-]* [0-9:]*$' "list"
has '^20 *complete ' "list"
has '^30 *incomplete .*ckpt-000000000030: not a checkpoint (no manifest.json)$' "list"
[ "$(grep -c '^[0-9]' "$tmp/out")" -eq 3 ] || fail "list: not 3 checkpoints: $(cat "$tmp/out")"
[ "$(awk 'NR > 1 {print $1}' "$tmp/out" | tr '\n' ' ')" = "10 20 30 " ] ||
	fail "list: not oldest first: $(cat "$tmp/out")"
grep -q notes "$tmp/out" && fail "list shows a file that is not a checkpoint"
mkdir "$tmp/empty"
run list "$tmp/empty"
has "no checkpoints under $tmp/empty" "list of an empty root"

# --- show -------------------------------------------------------------------
run show "$c20"
has "^checkpoint  $c20\$" "show"
has '^iteration   20$' "show"
has '^mode        sync$' "show"
has '^layout      4 workers, 2 servers, partition size 8192 bytes, preset ordo$' "show"
has '^seed        -42$' "show"
has '^tensors     5 (5376 elements, 21.0 KiB)$' "show"
has '^  2  *fc.w  *4099$' "show"
has '^  4  *out.w  *257$' "show"
has "^  shard-0.bin  *$(stat -c %s "$c20/shard-0.bin") bytes  *3 segments\$" "show"
has "^  shard-1.bin  *$(stat -c %s "$c20/shard-1.bin") bytes  *5 segments\$" "show"
# a root: the newest complete checkpoint (20, not the incomplete 30)
run show "$root"
has "^checkpoint  $c20\$" "show ROOT"
run show "$c20" --config
printf '[train]\nseed = -42\n[cluster]\nservers = 2\n' | cmp -s - "$tmp/out" ||
	fail "show --config: $(cat "$tmp/out")"

# --- verify -----------------------------------------------------------------
run verify "$c20"
has "^ok: $c20: iteration 20, 5 tensors, 2 shards, 8 segments, " "verify"
run verify "$root"
has "^ok: $c20: " "verify ROOT"

# --- export: .npy bytes -----------------------------------------------------
run export "$c20" fc.w "$tmp/fc.w.npy"
has "^ok: $tmp/fc.w.npy: tensor 2 'fc.w' (4099 elements, values)$" "export"
run export "$c20" 0 "$tmp/conv.w.m.npy" --momentum
run export "$root" conv.b "$tmp/conv.b.m.npy" --momentum
run export "$c20" conv.w "$tmp/conv.w.s.npy" --second
has "^ok: $tmp/conv.w.s.npy: tensor 0 'conv.w' (1000 elements, second moment)$" "export --second"
run export "$c20" 1 "$tmp/conv.b.s.npy" --second
run export "$c20" fc.b "$tmp/fc.b.s.npy" --second
[ -e "$tmp/fc.w.npy.tmp" ] && fail "export left its temporary file"
python3 - "$tmp" <<'PY' || fail ".npy contents"
import ast, struct, sys
tmp = sys.argv[1]
def load(name):
    b = open(f"{tmp}/{name}", "rb").read()
    assert b[:8] == b"\x93NUMPY\x01\x00", b[:8]
    hlen = struct.unpack_from("<H", b, 8)[0]
    assert (10 + hlen) % 64 == 0, hlen
    header = b[10:10 + hlen].decode("latin1")
    assert header.endswith("\n"), header
    d = ast.literal_eval(header.strip())
    assert d == {"descr": "<f4", "fortran_order": False, "shape": (d["shape"][0],)}, d
    n = d["shape"][0]
    assert len(b) == 10 + hlen + 4 * n
    return list(struct.unpack_from(f"<{n}f", b, 10 + hlen))
# ckpt_fixture.h: value (t * 100000 + i) * 0.25, momentum -i - t * 0.5,
# conv.b (t = 1) without momentum (zeros); second moment i * 0.5 + t + 0.125
# for conv.w and conv.b (t <= 1), none (zeros) for the others
v = load("fc.w.npy")
assert len(v) == 4099 and all(x == (2 * 100000 + i) * 0.25 for i, x in enumerate(v))
m = load("conv.w.m.npy")
assert len(m) == 1000 and all(x == -i for i, x in enumerate(m))
z = load("conv.b.m.npy")
assert z == [0.0] * 7, z
s = load("conv.w.s.npy")
assert len(s) == 1000 and all(x == i * 0.5 + 0.125 for i, x in enumerate(s))
s = load("conv.b.s.npy")
assert s == [i * 0.5 + 1.125 for i in range(7)], s
z = load("fc.b.s.npy")
assert z == [0.0] * 13, z
try:
    import numpy
except ImportError:
    sys.exit(0)
a = numpy.load(f"{tmp}/fc.w.npy")
assert a.dtype == numpy.float32 and a.shape == (4099,)
assert (a == (2 * 100000 + numpy.arange(4099)) * 0.25).all()
PY

# --- the format, read from Python with the code of docs/checkpoint-format.md
python3 - "$c20" "$src/docs/checkpoint-format.md" <<'PY' || fail "the documented layout"
import os, re, struct, sys, zlib
ck, doc = sys.argv[1], open(sys.argv[2]).read()
blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
reader = [b for b in blocks if "def read_shard" in b]
check = [b for b in blocks if "zlib.crc32(canon.encode())" in b]
assert len(reader) == 1 and len(check) == 1, "the doc's Python blocks"
os.chdir(ck)
env = {}
exec(check[0], env)        # the manifest's checksum, as documented
exec(reader[0], env)       # defines read_shard
man = env["m"]
assert man["format"] == "ordo-checkpoint" and man["format_version"] == 2
assert [t["name"] for t in man["tensors"]] == ["conv.w", "conv.b", "fc.w", "fc.b", "out.w"]
seen = 0
for s in man["shards"]:
    data = open(s["file"], "rb").read()
    assert len(data) == s["bytes"]
    trailer_at = len(data) - 32
    tail = struct.unpack_from("<8sQIIII", data, trailer_at)
    n = tail[2]
    assert tail[0] == b"ORDOTAIL" and tail[1] == man["iteration"] == 20
    assert tail[3] == zlib.crc32(data[:64 + 64 * n])        # header + table
    assert tail[4] == zlib.crc32(data[:trailer_at]) == s["crc32"]
    assert tail[5] == zlib.crc32(data[trailer_at:trailer_at + 28])
    it, rank, segs = env["read_shard"](s["file"])
    assert it == 20 and rank == s["rank"] and len(segs) == s["segments"] == n
    for t, off, values, momentum, second in segs:
        vals = struct.unpack(f"<{len(values) // 4}f", values)
        assert all(x == (t * 100000 + off + i) * 0.25 for i, x in enumerate(vals))
        if t == 1:
            assert momentum is None
        else:
            mom = struct.unpack(f"<{len(momentum) // 4}f", momentum)
            assert all(x == -(off + i) - t * 0.5 for i, x in enumerate(mom))
        if t > 1:
            assert second is None
        else:
            sec = struct.unpack(f"<{len(second) // 4}f", second)
            assert all(x == (off + i) * 0.5 + t + 0.125 for i, x in enumerate(sec))
        seen += len(vals)
assert seen == sum(t["numel"] for t in man["tensors"]), seen
PY

# --- bad inputs ---------------------------------------------------------------
expect 2 "no command given" --
expect 2 "unknown command 'frobnicate'" -- frobnicate "$root"
expect 2 "export needs DIR TENSOR FILE.npy" -- export "$c20" fc.w
expect 2 "show: unexpected argument 'extra'" -- show "$c20" extra
expect 2 "unknown option '--momentum' for show" -- show "$c20" --momentum
expect 2 "export: --momentum and --second exclude each other" -- \
	export "$c20" fc.w "$tmp/x.npy" --momentum --second
expect 2 "unknown option '--second' for verify" -- verify "$c20" --second
expect 2 "unknown option '--bogus'" -- verify "$c20" --bogus
expect 1 "$tmp/nowhere: not a checkpoint (no manifest.json)" -- verify "$tmp/nowhere"
expect 1 "$tmp/nowhere: cannot read the directory: No such file or directory" -- \
	list "$tmp/nowhere"
expect 1 "$tmp/empty: not a checkpoint (no manifest.json) and no ckpt-\* directory" -- \
	show "$tmp/empty"
"$make" "$tmp/partial" 5 --no-manifest >/dev/null
expect 1 "none of its 1 ckpt-\* directories is a complete checkpoint" -- \
	verify "$tmp/partial"
expect 1 "ckpt-000000000005: not a checkpoint (no manifest.json)" -- \
	show "$tmp/partial/ckpt-000000000005"
expect 1 "has no tensor 'fc.nope' (its 5 tensors: 'conv.w', 'conv.b', 'fc.w'" -- \
	export "$c20" fc.nope "$tmp/x.npy"
expect 1 "has no tensor '5'" -- export "$c20" 5 "$tmp/x.npy"
expect 1 "$tmp/no/such/dir/x.npy.tmp: cannot create" -- \
	export "$c20" fc.w "$tmp/no/such/dir/x.npy"

# corrupt copies: a flipped value (open succeeds, verify and export fail),
# a flipped header byte, a truncated shard
flip() { # FILE OFFSET
	python3 - "$1" "$2" <<'PY'
import sys
p, off = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read())
b[off] ^= 0x40
open(p, "wb").write(b)
PY
}
cp -r "$c20" "$tmp/bad-value"
flip "$tmp/bad-value/shard-1.bin" 500
expect 1 "shard-1.bin: checksum mismatch in segment 0 (tensor 'conv.w' elements 333..999, values)" -- \
	verify "$tmp/bad-value"
expect 1 "shard-1.bin: checksum mismatch in segment 0" -- \
	export "$tmp/bad-value" conv.w "$tmp/bad.npy"
[ -e "$tmp/bad.npy" ] && fail "export of a corrupt tensor wrote a file"
run show "$tmp/bad-value" # the header is intact: show works
cp -r "$c20" "$tmp/bad-header"
flip "$tmp/bad-header/shard-0.bin" 17
expect 1 "bad-header/shard-0.bin: header checksum mismatch" -- show "$tmp/bad-header"
cp -r "$c20" "$tmp/truncated"
truncate -s 3000 "$tmp/truncated/shard-1.bin"
expect 1 "truncated/shard-1.bin: the file has 3000 bytes, its header says" -- \
	verify "$tmp/truncated"
# a newer format version (checksum fixed): refused as newer
cp -r "$c20" "$tmp/newer"
python3 - "$tmp/newer/manifest.json" <<'PY'
import json, sys, zlib
p = sys.argv[1]
m = json.load(open(p))
m["format_version"] = 3
del m["crc32"]
canon = json.dumps(m, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
m["crc32"] = zlib.crc32(canon.encode())
json.dump(m, open(p, "w"), indent=2)
PY
expect 1 "manifest.json: format version 3 is newer than this ordo reads (2)" -- \
	verify "$tmp/newer"
printf 'garbage' >"$tmp/newer/manifest.json"
expect 1 "manifest.json: not valid JSON" -- show "$tmp/newer"

# --- help and version --------------------------------------------------------
for c in "" list show verify export; do
	# shellcheck disable=SC2086
	"$ckpt" $c --help >"$tmp/out" 2>&1 || fail "ps-ckpt $c --help: exit $?"
	grep -q "^Usage: ps-ckpt $c" "$tmp/out" || fail "ps-ckpt $c --help: $(cat "$tmp/out")"
done
"$ckpt" --version | grep -q '^ps-ckpt (ordo [0-9.]*)$' || fail "--version"

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "ok: ps-ckpt command line"
