#!/usr/bin/env bash
# scripts/device-bundle.sh OUT_DIR [--from BUILD_DIR] - one folder that
# runs ordo's binaries, tests and benchmarks on another x86-64 Linux
# machine that has nothing installed but its kernel (and, for the CUDA
# paths, its GPU driver): docs/device.md.
#
# Without --from it configures and builds build-device/ (Release,
# -DPS_WITH_CUDA=ON -DPS_WITH_RDMA=ON, tests and benchmarks) and bundles
# that; --from bundles an existing build tree instead (any configuration;
# tests/integration/device_bundle.sh bundles the suite's own).
#
# OUT_DIR receives:
#   build/     every executable of the build tree at its relative path, the
#              scripts CMake generated (ps-bench, with its package
#              ps_bench/) and CMakeCache.txt, so the test and bench
#              scripts take OUT_DIR/build as BUILD_DIR;
#   lib/       the C library and its loader (ld-linux-x86-64.so.2) and
#              every shared library the executables load, the rdma-core
#              providers (libibverbs' drivers) among them;
#   tools/     patchelf, iproute2's ip and tc (ps-bench's emulated hosts),
#              and rdma-core's and perftest's ibv_devinfo,
#              ib_write_bw and ib_read_bw where this machine has them;
#   relocate.sh, env.sh, ELF-LIST, MANIFEST.
# On the target, `bash OUT_DIR/relocate.sh` points every executable's
# interpreter and library path (DT_RPATH) at OUT_DIR's absolute path
# there; from then on the binaries load nothing of the target's own but
# the GPU driver's libcuda (found through env.sh).
#
# The bundle must stay under BUNDLE_LIMIT_MIB (default 64 MiB), so that
# it stays quick to copy to the target; the script fails if it does not,
# and prints its size.
set -euo pipefail

usage() {
	echo "usage: bash scripts/device-bundle.sh OUT_DIR [--from BUILD_DIR]" >&2
	exit 2
}
die() {
	echo "device-bundle: $*" >&2
	exit 1
}
[ $# -ge 1 ] || usage
out=$1
shift
from=
while [ $# -gt 0 ]; do
	case $1 in
	--from)
		[ $# -ge 2 ] || usage
		from=$2
		shift 2
		;;
	-h | --help)
		awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
		exit 0
		;;
	*) usage ;;
	esac
done
src=$(cd "$(dirname "$0")/.." && pwd)
limit_mib=${BUNDLE_LIMIT_MIB:-64}

[ "$(uname -m)" = x86_64 ] || die "this machine is $(uname -m); the bundle is for x86-64 machines"
command -v patchelf >/dev/null || die "patchelf is missing (apt-get install patchelf)"
loader=/lib64/ld-linux-x86-64.so.2
[ -e "$loader" ] || die "no $loader: not a glibc x86-64 system"

if [ -z "$from" ]; then
	nvcc=$(command -v nvcc || true)
	[ -n "$nvcc" ] || { [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc; }
	[ -n "$nvcc" ] || die "no nvcc on PATH or at /usr/local/cuda/bin/nvcc: the device bundle is a CUDA build (install the CUDA toolkit, or bundle another build with --from)"
	from=$src/build-device
	cmake -S "$src" -B "$from" -DCMAKE_BUILD_TYPE=Release -DPS_WITH_CUDA=ON \
		-DPS_WITH_RDMA=ON -DCMAKE_CUDA_COMPILER="$nvcc" >/dev/null
	cmake --build "$from" -j"$(nproc)"
fi
build=$(cd "$from" 2>/dev/null && pwd) || die "no build directory '$from'"
[ -f "$build/CMakeCache.txt" ] || die "$build is not a CMake build directory (no CMakeCache.txt)"

case $out in /*) ;; *) out=$PWD/$out ;; esac
[ ! -e "$out" ] || [ -z "$(ls -A "$out")" ] || die "$out exists and is not empty"
mkdir -p "$out/build" "$out/lib" "$out/tools"

is_elf() { [ "$(head -c4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }

# 1. The build tree's executables (ELF, or scripts CMake generated: ps-bench)
#    at their relative paths; the libraries (.so) built there go to lib/.
: >"$out/ELF-LIST"
while IFS= read -r -d '' f; do
	rel=${f#"$build"/}
	if is_elf "$f"; then
		mkdir -p "$out/build/$(dirname "$rel")"
		# debug information off (a RelWithDebInfo build is twice the
		# size), the symbols kept for backtraces
		strip --strip-debug -o "$out/build/$rel" "$f" 2>/dev/null ||
			cp -p "$f" "$out/build/$rel"
		echo "build/$rel" >>"$out/ELF-LIST"
	elif head -c2 "$f" | grep -q '#!'; then
		mkdir -p "$out/build/$(dirname "$rel")"
		cp -p "$f" "$out/build/$rel"
	fi
done < <(find "$build" -path "$build/CMakeFiles" -prune -o -path '*/CMakeFiles' -prune \
	-o -type f -perm -u+x ! -name '*.so*' -print0)
cp "$build/CMakeCache.txt" "$out/build/"
# ps-bench's package beside it (Python modules, not executables)
if [ -d "$build/ps_bench" ]; then
	mkdir -p "$out/build/ps_bench"
	cp -p "$build"/ps_bench/*.py "$out/build/ps_bench/"
fi
for so in "$build"/lib*.so.*; do
	{ [ -f "$so" ] && [ ! -L "$so" ] && is_elf "$so"; } || continue
	soname=$(patchelf --print-soname "$so" 2>/dev/null || true)
	cp -p "$so" "$out/lib/${soname:-$(basename "$so")}"
done

# 2. rdma-core's providers (libibverbs dlopens them by name: lib/ is
#    searched through the executables' DT_RPATH) and the tools.
for p in /usr/lib/x86_64-linux-gnu/libibverbs/*.so; do
	[ -f "$p" ] && cp -pL "$p" "$out/lib/"
done
for t in patchelf ibv_devinfo ib_write_bw ib_read_bw ip tc; do
	p=$(command -v "$t" || true)
	[ -n "$p" ] || { echo "device-bundle: note: no $t here; the bundle goes without it" >&2; continue; }
	cp -pL "$p" "$out/tools/$t"
	echo "tools/$t" >>"$out/ELF-LIST"
done

# 3. Every shared library they load, by the loader's own resolution here,
#    and the loader itself.
cp -pL "$loader" "$out/lib/ld-linux-x86-64.so.2"
deps() { # FILE: the absolute paths of the libraries FILE loads
	"$loader" --list "$1" 2>/dev/null |
		sed -n 's/^[[:space:]]*\([^ ]*\) => \(\/[^ ]*\) (0x.*/\2/p'
}
missing=()
while IFS= read -r f; do
	if "$loader" --list "$out/$f" 2>&1 | grep -q 'not found'; then
		missing+=("$f: $("$loader" --list "$out/$f" 2>&1 | grep 'not found' | tr -s ' \t' ' ' | paste -sd,)")
	fi
	deps "$out/$f"
done <"$out/ELF-LIST" >"$out/.deps"
for p in "$out"/lib/*.so*; do
	[ "$(basename "$p")" = ld-linux-x86-64.so.2 ] || deps "$p"
done >>"$out/.deps"
[ ${#missing[@]} -eq 0 ] || die "libraries not found here: ${missing[*]}"
sort -u "$out/.deps" | while IFS= read -r lib; do
	name=$(basename "$lib")
	case $name in
	libcuda.so* | libnvidia-*) continue ;; # the driver's: the target's own
	esac
	[ -e "$out/lib/$name" ] || cp -pL "$lib" "$out/lib/$name"
done
rm -f "$out/.deps"
for p in "$out"/lib/*.so*; do
	[ "$(basename "$p")" = ld-linux-x86-64.so.2 ] || echo "lib/$(basename "$p")"
done >>"$out/ELF-LIST"

# 4. relocate.sh and env.sh (copied from scripts/device/)
cp "$src/scripts/device/relocate.sh" "$src/scripts/device/env.sh" "$out/"
providers=$(find "$out/lib" -maxdepth 1 -name '*-rdmav*.so' -printf '%f\n' | sort |
	sed 's/^lib\(.*\)-rdmav[0-9]*\.so$/\1/' | paste -sd:)
{
	echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(
		# shellcheck disable=SC1091
		. /etc/os-release && echo "$PRETTY_NAME"), glibc $(ldd --version | sed -n '1s/.* //p')"
	echo "source: $(git -C "$src" describe --always --dirty 2>/dev/null || echo unknown)"
	echo "build: $build ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt"))"
	grep -E '^PS_WITH_(CUDA|RDMA):BOOL=' "$build/CMakeCache.txt" || true
	echo "source_dir: $(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")"
	echo "build_dir: $build"
	echo "providers: $providers"
} >"$out/MANIFEST"

size_kib=$(du -sk "$out" | cut -f1)
echo "device-bundle: $out: $(wc -l <"$out/ELF-LIST") ELF files, $((size_kib / 1024)) MiB"
[ "$size_kib" -le $((limit_mib * 1024)) ] ||
	die "$out is $((size_kib / 1024)) MiB, over the limit of $limit_mib MiB (BUNDLE_LIMIT_MIB)"
