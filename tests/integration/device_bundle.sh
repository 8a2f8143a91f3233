# The device bundle (scripts/device-bundle.sh, docs/device.md) runs where
# nothing of ordo's dependencies is installed: this build is bundled, the
# bundle relocated for a chroot that holds the bundle and nothing else (no
# /usr, no /lib, no shell, an empty environment), and there:
#  - every executable and library resolves every library it needs inside
#    the bundle (the bundle's own loader, --list);
#  - every ps-* program answers --help;
#  - a 2 x 2 exactness job runs (ps-launch starting the scheduler, servers
#    and exact_worker from the bundle), every value exact;
#  - in a CUDA build, server.device = cuda fails with "no CUDA device"
#    (the chroot has no driver), not with a loader error;
#  - rdma-core's ibv_devinfo loads.
# Then scripts/device-check.sh runs end to end on the bundle here and
# reports every step it cannot run as skipped, with its reason.
# Skipped (77) when not root (chroot and mounts need it) or without
# patchelf.
source "$(dirname "$0")/lib.sh" "$@"

[ "$(id -u)" -eq 0 ] || { echo "skip: not root: the bare environment is a chroot"; exit 77; }
command -v patchelf >/dev/null || { echo "skip: no patchelf (apt-get install patchelf)"; exit 77; }
command -v unshare >/dev/null || { echo "skip: no unshare (util-linux)"; exit 77; }

ROOT=$WORK/root
mkdir -p "$ROOT/dev" "$ROOT/proc" "$ROOT/tmp"
# The suite's own build is a sanitizer build, 68 MiB bundled; the builds
# a GPU machine runs (release, CUDA) take 20-35 MiB, under the default
# limit of 64 MiB. The limit itself is checked right after.
BUNDLE_LIMIT_MIB=128 bash "$SRC/scripts/device-bundle.sh" "$ROOT/bundle" \
	--from "$BUILD" >"$WORK/bundle.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$WORK/bundle.log"; fail "device-bundle.sh exited $rc"; }
cat "$WORK/bundle.log"
# ... and a bundle over the limit is refused, saying so
if BUNDLE_LIMIT_MIB=1 bash "$SRC/scripts/device-bundle.sh" "$WORK/small" \
	--from "$BUILD" >"$WORK/small.log" 2>&1; then
	fail "a bundle over BUNDLE_LIMIT_MIB=1 was not refused"
fi
grep -q "MiB, over the limit of 1 MiB (BUNDLE_LIMIT_MIB)" "$WORK/small.log" ||
	fail "a bundle over the limit: no message saying so"
rm -rf "$WORK/small"
bash "$ROOT/bundle/relocate.sh" --as /bundle >"$WORK/relocate.log" 2>&1 ||
	{ cat "$WORK/relocate.log"; fail "relocate.sh --as /bundle failed"; }
grep -q "^build/ps-launch$" "$ROOT/bundle/ELF-LIST" || fail "ps-launch is not in the bundle"
[ -x "$ROOT/bundle/tools/patchelf" ] || fail "patchelf is not in the bundle"

# in_root COMMAND...: runs COMMAND in the chroot with an empty environment,
# in a mount namespace of its own holding /proc and /dev/null (and nothing
# else of this machine); stdout and stderr are the caller's.
cat >"$WORK/in_root.sh" <<'SH'
root=$1
shift
mount -t proc proc "$root/proc" || exit 90
touch "$root/dev/null" "$root/dev/urandom"
mount --bind /dev/null "$root/dev/null" || exit 90
mount --bind /dev/urandom "$root/dev/urandom" || exit 90
exec env -i "$(command -v chroot)" "$root" "$@"
SH
in_root() {
	unshare --mount --fork bash "$WORK/in_root.sh" "$ROOT" "$@"
}
[ -z "$(ls "$ROOT/usr" "$ROOT/lib" "$ROOT/bin" 2>/dev/null)" ] || fail "the chroot is not bare"

# 1. every ELF file resolves inside the bundle
checked=0
while IFS= read -r f; do
	# a library is loaded by an executable, whose DT_RPATH its own
	# dependencies go by: --library-path stands in for it
	lp=()
	case $f in lib/*) lp=(--library-path /bundle/lib) ;; esac
	in_root /bundle/lib/ld-linux-x86-64.so.2 "${lp[@]}" --list "/bundle/$f" >"$WORK/list.log" 2>&1
	rc=$?
	[ $rc -ne 90 ] || fail "cannot set up the chroot's mounts"
	# a library the loader cannot find, or one from outside the bundle
	if grep -q 'not found' "$WORK/list.log" ||
		grep '=>' "$WORK/list.log" | grep -v '=> /bundle/lib/' | grep -q .; then
		cat "$WORK/list.log"
		fail "$f loads a library from outside the bundle or not at all"
	fi
	[ $rc -eq 0 ] || { cat "$WORK/list.log"; fail "the loader cannot list $f (exit $rc)"; }
	checked=$((checked + 1))
done <"$ROOT/bundle/ELF-LIST"
pass "$checked ELF files resolve every library inside the bundle, in a bare chroot"

# 2. the programs start from their own interpreter path
for p in "$ROOT"/bundle/build/ps-*; do
	name=$(basename "$p")
	head -c4 "$p" | grep -q ELF || continue
	in_root "/bundle/build/$name" --help >"$WORK/help.log" 2>&1 ||
		{ cat "$WORK/help.log"; fail "$name --help in the chroot exited $?"; }
	grep -qi "usage" "$WORK/help.log" || fail "$name --help printed no usage"
done
pass "every ps-* program answers --help in the chroot"

# 3. a job
cp "$JOB" "$ROOT/tmp/job.ini"
timeout --kill-after=5 300 unshare --mount --fork bash "$WORK/in_root.sh" "$ROOT" \
	/bundle/build/ps-launch --config /tmp/job.ini --set train.iterations=5 \
	--set train.lr=1 --set train.momentum=0 --set scheduling.partition_size=1K \
	--worker /bundle/build/tests/exact_worker >"$WORK/job.out.log" 2>"$WORK/job.err.log" ||
	fail "the job in the chroot exited $?"
n=$(grep -c '^exact: .* 0 wrong$' "$WORK/job.out.log")
[ "$n" -eq 2 ] || fail "$n of 2 workers exact in the chroot"
pass "a 2 x 2 job in the bare chroot: every value exact"

# 4. CUDA without a driver: a clear error
if grep -q '^PS_WITH_CUDA:BOOL=ON' "$BUILD/CMakeCache.txt"; then
	in_root /bundle/build/ps-server --set server.device=cuda \
		--set cluster.scheduler_port=1 --set cluster.connect_timeout_ms=1000 \
		>"$WORK/cuda.log" 2>&1
	grep -q "no CUDA device: " "$WORK/cuda.log" ||
		{ cat "$WORK/cuda.log"; fail "server.device = cuda in the chroot: no 'no CUDA device' error"; }
	pass "server.device = cuda without a driver: $(grep -o 'no CUDA device: .*' "$WORK/cuda.log" | head -1)"
fi

# 5. rdma-core's tools load (no device here: they say so)
if [ -x "$ROOT/bundle/tools/ibv_devinfo" ]; then
	in_root /bundle/tools/ibv_devinfo >"$WORK/ibv.log" 2>&1
	if grep -q 'error while loading shared libraries\|not found' "$WORK/ibv.log"; then
		cat "$WORK/ibv.log"
		fail "ibv_devinfo does not load in the chroot"
	fi
	pass "ibv_devinfo loads in the chroot: $(head -1 "$WORK/ibv.log")"
fi

# 6. the device script's path without a GPU: every step it cannot run is
#    skipped with its reason, facts are reported, the raw logs bundled
bash "$ROOT/bundle/relocate.sh" >/dev/null || fail "relocate.sh back to $ROOT/bundle failed"
DEVICE_CHECK_MIN_CORES=1000 bash "$SRC/scripts/device-check.sh" "$ROOT/bundle" \
	--out "$WORK/results" --budget 300 >"$WORK/check.out.log" 2>"$WORK/check.err.log" ||
	fail "device-check.sh exited $? on a machine where every step but facts skips"
for f in results.md steps.tsv raw.tar.gz; do
	[ -s "$WORK/results/$f" ] || fail "device-check.sh wrote no $f"
done
steps=$(wc -l <"$WORK/results/steps.tsv")
all=$(sed -n 's/^ALL_STEPS="\(.*\)"$/\1/p' "$SRC/scripts/device-check.sh" | wc -w)
[ "$all" -gt 0 ] || fail "no ALL_STEPS in scripts/device-check.sh"
[ "$steps" -eq "$all" ] || fail "steps.tsv has $steps steps, expected $all"
grep -q "^facts	pass	" "$WORK/results/steps.tsv" || fail "facts did not pass"
# every other step skipped here, each with a reason
awk -F'\t' '$1 != "facts" && ($2 != "skip" || $4 == "") { print; bad = 1 } END { exit bad }' \
	"$WORK/results/steps.tsv" || fail "a step that cannot run here was not skipped with a reason"
grep -q "^| kernel | $(uname -s)" "$WORK/results/results.md" || fail "results.md has no facts"
grep -q "cores here; this step measures a machine of 1000 or more" "$WORK/results/steps.tsv" ||
	fail "the many-core steps did not give their reason"
tar -tzf "$WORK/results/raw.tar.gz" | grep -q 'facts.log' || fail "raw.tar.gz has no step logs"
pass "device-check.sh without a GPU: facts, then every step skipped with its reason"
cut -f1,2,4 "$WORK/results/steps.tsv"
