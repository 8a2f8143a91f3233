#!/usr/bin/env bash
# scripts/check-deb.sh BUILD_DIR [CHROOT_DIR] - checks that `cpack -G DEB`
# makes a .deb that installs and runs on a clean Debian 12.
#
# A manual check, not part of CTest: it needs root (debootstrap, chroot,
# mount) and downloads Debian 12 from the mirror this host's apt uses
# (about 45 MB for the base system the first time, then the package's
# dependencies and a compiler on every run).
#
#   1. cpack -G DEB in BUILD_DIR (a configured and built tree).
#   2. CHROOT_DIR (default /var/tmp/ordo-deb-bookworm) holds a pristine
#      `debootstrap --variant=minbase bookworm` system, made if it is not
#      there yet and reused as it is otherwise. Each run works in a fresh
#      copy of it, CHROOT_DIR.run, removed at the end (KEEP=1 keeps it),
#      so the package always meets a clean system; downloaded packages are
#      kept in CHROOT_DIR.cache for the next run.
#   3. In the copy: `apt-get install ./ordo_*.deb`, apt resolving Depends
#      from the mirror; every binary's --version, no "not found" library,
#      the man page, the Python package (python3 is Recommended); a job
#      from a minimal INI (2 servers, 2 workers) that must exit 0; then
#      with pkg-config, gcc, libc6-dev, cmake and make installed,
#      tests/install/hello.c built against the installed headers and
#      library with pkg-config and with find_package(ordo), both run as
#      the workers of a job and exact, and python/examples/exact_worker.py
#      run the same way through the installed Python package; last,
#      apt-get purge ordo.
#
# Prints one line per check and a PASS/FAIL summary; exits 0 only when
# every check passed. MIRROR and SECURITY_MIRROR override the mirrors.
set -uo pipefail

die() { echo "check-deb: $*" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: $0 BUILD_DIR [CHROOT_DIR]"
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mount)"
for t in cpack dpkg-deb debootstrap chroot mount umount; do
	command -v $t >/dev/null || die "$t not found (apt-get install debootstrap dpkg-dev cmake)"
done
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$1" 2>/dev/null && pwd) || die "no build directory $1"
[ -f "$BUILD/CPackConfig.cmake" ] || die "$BUILD is not a configured build tree (no CPackConfig.cmake)"
BASE=${2:-/var/tmp/ordo-deb-bookworm}
BASE=${BASE%/}
RUN=$BASE.run
CACHE=$BASE.cache
start=$SECONDS

# The mirror that this host's apt uses for a suite (one-line .list files
# and deb822 .sources files), else deb.debian.org.
mirror_for() {
	local suite=$1 fallback=$2 found
	found=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk -v s="$suite" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) while ($i !~ /\]$/) i++;
			if ($2 ~ /^\[/) i++; if ($(i + 1) == s) { print $i; exit } }')
	[ -n "$found" ] || found=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk -v s="$suite" '
			/^[ \t]*$/ { if (ok && uri != "") { print uri; exit } ok = 0; uri = ""; next }
			tolower($1) == "uris:" { uri = $2 }
			tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == s) ok = 1 }
			END { if (ok && uri != "") print uri }' | head -n 1)
	echo "${found:-$fallback}"
}
MIRROR=${MIRROR:-$(mirror_for bookworm http://deb.debian.org/debian)}
SECURITY_MIRROR=${SECURITY_MIRROR:-$(mirror_for bookworm-security http://deb.debian.org/debian-security)}

# --- checks and the summary
passed=0
failed=()
ok() { passed=$((passed + 1)); echo "  ok    $*"; }
bad() { failed+=("$*"); echo "  FAIL  $*"; }
summary() {
	local total=$((passed + ${#failed[@]}))
	echo
	if [ ${#failed[@]} -eq 0 ] && [ "$total" -gt 0 ]; then
		echo "check-deb: PASS: $passed of $total checks, $(basename "${DEB:-?}") on a clean Debian 12 ($((SECONDS - start)) s)"
	else
		echo "check-deb: FAIL: ${#failed[@]} of $total checks failed ($((SECONDS - start)) s):"
		printf '  - %s\n' "${failed[@]}"
	fi
}
# fatal: a check the rest cannot go on without
fatal() { bad "$*"; summary; exit 1; }
phase() { echo "== $* ($((SECONDS - start)) s)"; }

# --- 1. the package
phase "cpack -G DEB in $BUILD"
rm -f "$BUILD"/ordo_*.deb
(cd "$BUILD" && cpack -G DEB) >"$BUILD/check-deb-cpack.log" 2>&1 ||
	fatal "cpack -G DEB: $(tail -n 5 "$BUILD/check-deb-cpack.log")"
DEB=$(ls "$BUILD"/ordo_*.deb 2>/dev/null | head -n 1)
[ -n "$DEB" ] || fatal "cpack made no .deb (see $BUILD/check-deb-cpack.log)"
depends=$(dpkg-deb -f "$DEB" Depends)
echo "  $(basename "$DEB"): $(du -k "$DEB" | cut -f1) KiB"
echo "  Depends: $depends"
echo "  Recommends: $(dpkg-deb -f "$DEB" Recommends)"
missing=""
for p in libc6 libzmq5 libmsgpackc2 libgsl27 libinih1 libjansson4 zlib1g; do
	grep -q "\b$p\b" <<<"$depends" || missing+=" $p"
done
[ -z "$missing" ] && ok "Depends names every runtime library" ||
	bad "Depends lacks$missing"

# --- 2. the clean Debian 12
cleanup() {
	local m
	for m in "$RUN/var/cache/apt/archives" "$RUN/dev/pts" "$RUN/proc"; do
		mountpoint -q "$m" 2>/dev/null && umount "$m"
	done
	if [ "${KEEP:-0}" = 1 ]; then
		echo "check-deb: kept $RUN"
	elif [ -d "$RUN" ]; then
		# never remove through a mount that did not come off
		if grep -q " $RUN/" /proc/mounts; then
			echo "check-deb: $RUN still has mounts, not removed" >&2
		else
			rm -rf "$RUN"
		fi
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -x "$BASE/usr/bin/apt-get" ] && [ -f "$BASE/etc/debian_version" ]; then
	phase "reusing the Debian $(cat "$BASE/etc/debian_version") base in $BASE"
else
	phase "debootstrap --variant=minbase bookworm $BASE $MIRROR"
	rm -rf "$BASE.tmp"
	debootstrap --variant=minbase bookworm "$BASE.tmp" "$MIRROR" >"$BASE.debootstrap.log" 2>&1 ||
		fatal "debootstrap: $(tail -n 5 "$BASE.debootstrap.log")"
	cat >"$BASE.tmp/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY_MIRROR bookworm-security main
EOF
	rm -rf "$BASE"
	mv "$BASE.tmp" "$BASE"
fi
grep -q '^12\.' "$BASE/etc/debian_version" && ok "the chroot is Debian $(cat "$BASE/etc/debian_version") (minbase)" ||
	bad "the chroot is Debian $(cat "$BASE/etc/debian_version"), not 12"

phase "a fresh copy in $RUN"
KEEP=0 cleanup
[ ! -e "$RUN" ] || fatal "could not remove the old $RUN"
cp -a "$BASE" "$RUN" || fatal "cp -a $BASE $RUN"
mkdir -p "$CACHE/partial"
cp /etc/resolv.conf "$RUN/etc/resolv.conf"
mount -t proc proc "$RUN/proc" || fatal "mount proc"
mkdir -p "$RUN/dev/pts" && mount -t devpts -o newinstance devpts "$RUN/dev/pts" 2>/dev/null || true
mount --bind "$CACHE" "$RUN/var/cache/apt/archives" || fatal "bind mount the apt cache"
[ -c "$RUN/dev/null" ] || fatal "the chroot has no /dev/null"
cp "$DEB" "$RUN/tmp/"
in_chroot() { chroot "$RUN" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }

# --- 3. install and run
phase "apt-get install ./$(basename "$DEB") (in the chroot)"
in_chroot apt-get update -q >"$RUN/root/update.log" 2>&1 ||
	fatal "apt-get update: $(tail -n 5 "$RUN/root/update.log")"
in_chroot sh -c "cd /tmp && apt-get install -y ./$(basename "$DEB")" >"$RUN/root/install.log" 2>&1 ||
	fatal "apt-get install ./$(basename "$DEB"): $(tail -n 8 "$RUN/root/install.log")"
new=$(sed -n '/^The following NEW packages will be installed:/,/^[0-9]* upgraded/p' "$RUN/root/install.log" |
	sed '1d;$d' | tr -s ' \n' ' ')
ok "apt-get install ./$(basename "$DEB"): installed$new"
echo "        $(grep -E '^[0-9]+ upgraded' "$RUN/root/install.log")"

phase "the installed package"
for p in ps-launch ps-scheduler ps-server ps-worker ps-model ps-ckpt ps-sim ps-tune ps-keygen; do
	v=$(in_chroot /usr/bin/$p --version 2>&1) && [ -n "$v" ] && ok "$p --version: $v" ||
		bad "$p --version: $v"
done
lib=$(in_chroot sh -c 'ls /usr/lib/libordo.so.0 /usr/lib/*/libordo.so.0 2>/dev/null' | head -n 1)
[ -n "$lib" ] && ok "libordo.so.0 at $lib" || bad "no libordo.so.0 under /usr/lib"
if in_chroot sh -c 'command -v ldd' >/dev/null; then
	nf=$(in_chroot sh -c "ldd /usr/bin/ps-* $lib 2>&1 | grep 'not found'" | sort -u)
	[ -z "$nf" ] && ok "ldd: every library of the binaries and libordo.so.0 found" ||
		bad "ldd: $nf"
fi
man=$(in_chroot sh -c 'ls /usr/share/man/man1/ps-launch.1* 2>/dev/null')
if in_chroot sh -c 'command -v man' >/dev/null; then
	man=$(in_chroot man -w ps-launch 2>&1)
fi
[ -n "$man" ] && in_chroot test -s "${man%% *}" && ok "man page: $man" || bad "no man page for ps-launch ($man)"
if in_chroot sh -c 'command -v python3' >/dev/null; then
	got=$(in_chroot python3 -c 'import ordo; print(ordo.library_path())' 2>&1)
	[ "$got" = "$lib" ] && ok "python3 -c 'import ordo': uses $got" ||
		bad "python3 -c 'import ordo': $got"
else
	bad "python3 (Recommends) was not installed"
fi

cat >"$RUN/root/job.ini" <<'INI'
[cluster]
scheduler_host = 127.0.0.1
scheduler_port = 0
servers = 2
workers = 2
[train]
iterations = 5
INI
job() { # NAME [ps-launch args]: in the chroot; status of ps-launch
	local name=$1
	shift
	in_chroot timeout --kill-after=5 180 ps-launch --config /root/job.ini "$@" \
		>"$RUN/root/$name.out" 2>"$RUN/root/$name.err"
}
phase "a job: ps-launch --config /root/job.ini (2 servers, 2 workers, 5 iterations)"
if job mlp; then
	ok "ps-launch --config job.ini exited 0: $(tail -n 1 "$RUN/root/mlp.err")"
else
	bad "ps-launch --config job.ini exited $?: $(tail -n 3 "$RUN/root/mlp.err")"
fi

phase "building against the package: apt-get install pkg-config gcc libc6-dev cmake make"
in_chroot apt-get install -y --no-install-recommends pkg-config gcc libc6-dev cmake make \
	>"$RUN/root/install-dev.log" 2>&1 ||
	fatal "apt-get install pkg-config gcc libc6-dev cmake make: $(tail -n 5 "$RUN/root/install-dev.log")"
mkdir -p "$RUN/root/hello"
cp "$SRC/tests/install/hello.c" "$SRC/tests/install/CMakeLists.txt" "$RUN/root/hello/"
flags=$(in_chroot pkg-config --cflags --libs ordo 2>&1) && ok "pkg-config --cflags --libs ordo: $flags" ||
	bad "pkg-config --cflags --libs ordo: $flags"
if out=$(in_chroot sh -c "cd /root/hello && cc -std=c11 -Wall -Werror -o hello-pc hello.c \$(pkg-config --cflags --libs ordo)" 2>&1); then
	ok "cc hello.c \$(pkg-config --cflags --libs ordo)"
else
	bad "cc hello.c with pkg-config: $out"
fi
if out=$(in_chroot sh -c "cmake -S /root/hello -B /root/hello/cmk && cmake --build /root/hello/cmk" 2>&1); then
	ok "cmake: find_package(ordo) ($(grep '^ordo_DIR' "$RUN/root/hello/cmk/CMakeCache.txt")), ordo::ordo: built"
else
	bad "cmake with find_package(ordo): $(tail -n 5 <<<"$out")"
fi
for h in hello/hello-pc hello/cmk/hello; do
	[ -x "$RUN/root/$h" ] || continue
	name=$(basename "$h")
	if job "$name" --worker "/root/$h" --set train.iterations=3 --set train.lr=1 --set train.momentum=0; then
		n=$(grep -c "^hello: rank [01] exact$" "$RUN/root/$name.out")
		[ "$n" -eq 2 ] && ok "ps-launch --worker /root/$h: 2 of 2 workers exact" ||
			bad "ps-launch --worker /root/$h: $n of 2 workers exact"
	else
		bad "ps-launch --worker /root/$h exited $?: $(tail -n 3 "$RUN/root/$name.err")"
	fi
done
install -m 755 "$SRC/python/examples/exact_worker.py" "$RUN/root/exact_worker.py"
if job py --worker /root/exact_worker.py --set train.iterations=4 --set train.lr=1 --set train.momentum=0; then
	n=$(grep -c "^exact: worker [01] of 2: 20388 values checked, 0 wrong$" "$RUN/root/py.out")
	[ "$n" -eq 2 ] && ok "ps-launch --worker exact_worker.py (the installed Python package): 2 of 2 workers exact" ||
		bad "ps-launch --worker exact_worker.py: $n of 2 workers exact"
else
	bad "ps-launch --worker exact_worker.py exited $?: $(tail -n 3 "$RUN/root/py.err")"
fi

phase "apt-get purge ordo"
if out=$(in_chroot apt-get purge -y ordo 2>&1) && ! in_chroot test -e /usr/bin/ps-launch &&
	! in_chroot test -e "$lib"; then
	ok "apt-get purge ordo: removed"
else
	bad "apt-get purge ordo: $(tail -n 3 <<<"$out")"
fi

summary
[ ${#failed[@]} -eq 0 ]
