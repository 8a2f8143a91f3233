# Installing ordo (cmake/Install.cmake): `cmake --install` into a
# temporary prefix puts the binaries, libordo.so (SONAME libordo.so.0,
# only the public API exported), the headers, ordo.pc, the CMake package
# and (with help2man) man pages there; a program that includes only
# <ordo/ordo.h> is built against it with pkg-config and with
# find_package(ordo), and both run as the workers of a real job started
# by the installed ps-launch, exact. With the benchmarks built, ps-bench
# is installed too and runs from the prefix. cpack -G DEB makes a package
# with the same files under /usr and its shared-library dependencies.
source "$(dirname "$0")/lib.sh" "$@"
prefix=$WORK/prefix
cmake --install "$BUILD" --prefix "$prefix" >"$WORK/install.log" 2>&1 ||
	fail "cmake --install: $(tail -n 5 "$WORK/install.log")"
# lib, or lib/<multiarch> when configured with CMAKE_INSTALL_PREFIX=/usr
libdir=$prefix/$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$BUILD/CMakeCache.txt")
for f in bin/ps-launch bin/ps-scheduler bin/ps-server bin/ps-worker bin/ps-keygen \
	include/ordo/ordo.h include/ordo/error.h; do
	[ -e "$prefix/$f" ] || fail "not installed: $f"
done
for f in libordo.so libordo.so.0 pkgconfig/ordo.pc cmake/ordo/ordoConfig.cmake \
	cmake/ordo/ordoConfigVersion.cmake cmake/ordo/ordoTargets.cmake; do
	[ -e "$libdir/$f" ] || fail "not installed: $libdir/$f"
done
objdump -p "$libdir/libordo.so" | grep -q "SONAME *libordo.so.0$" || fail "libordo.so has no SONAME libordo.so.0"
exports=$(nm -D --defined-only "$libdir/libordo.so" | awk '$3 != "ORDO_0" {print $3}' | sed 's/@.*//' | sort)
other=$(grep -v '^ps_client_\|^ps_config_\(new\|free\|load\|set\|get\)$\|^ps_strerror$\|^ps_err_from_errno$' <<<"$exports" || true)
[ -z "$other" ] || fail "libordo.so exports more than the public API: $other"
grep -q ps_client_push <<<"$exports" || fail "libordo.so does not export ps_client_push"
# the device-memory API exists in every build (without CUDA: PS_ENOTSUP)
for f in ps_client_declare_cuda ps_client_push_stream ps_client_ready_event; do
	grep -qx "$f" <<<"$exports" || fail "libordo.so does not export $f"
done
if command -v help2man >/dev/null; then
	[ -s "$prefix/share/man/man1/ps-launch.1" ] || fail "no man page for ps-launch"
fi

# The consumer is built the way this build was: a sanitized libordo.so
# needs a sanitized program.
flags=()
grep -q '^PS_SANITIZE:STRING=\(ON\|address\)$' "$BUILD/CMakeCache.txt" &&
	flags=(-fsanitize=address,undefined)
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc -std=c11 -Wall -Werror "${flags[@]}" -o "$WORK/hello-pc" "$SRC/tests/install/hello.c" \
	$(pkg-config --cflags --libs ordo) -Wl,-rpath,"$libdir" ||
	fail "building against pkg-config --cflags --libs ordo failed"
CFLAGS="${flags[*]}" LDFLAGS="${flags[*]}" cmake -S "$SRC/tests/install" -B "$WORK/cmk" \
	-DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_RPATH="$libdir" >"$WORK/cmk.log" 2>&1 &&
	cmake --build "$WORK/cmk" >>"$WORK/cmk.log" 2>&1 ||
	fail "building with find_package(ordo) failed: $(tail -n 5 "$WORK/cmk.log")"
ldd "$WORK/hello-pc" | grep -q "libordo.so.0 => $libdir" || fail "hello-pc does not use the installed libordo.so.0"

for h in hello-pc cmk/hello; do
	name=$(basename "$h")
	timeout --kill-after=5 120 "$prefix/bin/ps-launch" --config "$JOB" \
		--worker "$WORK/$h" --set train.iterations=3 --set train.lr=1 \
		--set train.momentum=0 >"$WORK/$name.out.log" 2>"$WORK/$name.err.log" ||
		fail "the job with $h exited $?"
	n=$(grep -c "^hello: rank [01] exact$" "$WORK/$name.out.log")
	[ "$n" -eq 2 ] || fail "$n of 2 $h workers exact"
done
# The Python package finds the installed library by itself.
pre=()
[ ${#flags[@]} -gt 0 ] && pre=(env "LD_PRELOAD=$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0)
got=$(PYTHONPATH=$prefix/lib/python3/dist-packages "${pre[@]}" python3 -c 'import ordo; print(ordo.library_path())') ||
	fail "the installed Python package does not import"
[ "$got" = "$libdir/libordo.so.0" ] || fail "the installed Python package uses $got, not $libdir/libordo.so.0"
pass "installed: binaries, libordo.so.0 (public API only), headers, ordo.pc, the CMake package, the Python package; built both ways, exact jobs"

# ps-bench (built with the benchmarks): bin/ps-bench starts its package
# under share/ordo, which reads the scenarios and models installed beside
# it; moved elsewhere with share/ordo, it still runs (nothing points back
# into the build or source tree); it writes no __pycache__ there.
if [ -x "$BUILD/ps-bench" ]; then
	for f in bin/ps-bench share/ordo/ps_bench/cli.py share/ordo/ps_bench/_build.py \
		share/ordo/conf/bench/quick.ini share/ordo/conf/models/resnet50.json; do
		[ -e "$prefix/$f" ] || fail "not installed: $f"
	done
	"$prefix/bin/ps-bench" --help >"$WORK/ps-bench-help.log" 2>&1 ||
		fail "installed ps-bench --help exited $?: $(tail -n 3 "$WORK/ps-bench-help.log")"
	grep -q -- "--predict-only" "$WORK/ps-bench-help.log" || fail "installed ps-bench --help lists no --predict-only"
	mkdir -p "$WORK/moved/bin" "$WORK/moved/share"
	cp -p "$prefix/bin/ps-bench" "$WORK/moved/bin/"
	cp -rp "$prefix/share/ordo" "$WORK/moved/share/"
	for pb in "$prefix/bin/ps-bench" "$WORK/moved/bin/ps-bench --bin-dir $prefix/bin"; do
		# shellcheck disable=SC2086 # the launcher and its arguments
		(cd "$WORK" && $pb --dry-run --quick) >"$WORK/ps-bench-dry.log" 2>&1 ||
			fail "$pb --dry-run --quick exited $?: $(tail -n 3 "$WORK/ps-bench-dry.log")"
		grep -q "^  8 resnet50 1 Gbit/s tcp ordo rep 1 (2+2 iterations)$" "$WORK/ps-bench-dry.log" ||
			fail "$pb --dry-run --quick: $(cat "$WORK/ps-bench-dry.log")"
	done
	[ -z "$(find "$prefix/share/ordo" "$WORK/moved" -name __pycache__)" ] ||
		fail "the installed ps-bench wrote __pycache__"
	pass "installed ps-bench: --help, --dry-run --quick from the prefix and moved elsewhere"
fi

# cpack -G DEB
(cd "$WORK" && cpack -G DEB --config "$BUILD/CPackConfig.cmake" >"$WORK/cpack.log" 2>&1) ||
	fail "cpack -G DEB: $(tail -n 5 "$WORK/cpack.log")"
deb=$(ls "$WORK"/ordo_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || fail "cpack made no .deb"
dpkg-deb -c "$deb" >"$WORK/deb.list"
for f in ./usr/bin/ps-launch ./usr/include/ordo/ordo.h "libordo.so.0" "pkgconfig/ordo.pc" \
	"cmake/ordo/ordoConfig.cmake"; do
	grep -q -- "$f" "$WORK/deb.list" || fail "the .deb lacks $f"
done
if [ -x "$BUILD/ps-bench" ]; then
	for f in ./usr/bin/ps-bench ./usr/share/ordo/ps_bench/cli.py ./usr/share/ordo/ps_bench/_build.py \
		./usr/share/ordo/conf/bench/quick.ini ./usr/share/ordo/conf/models/resnet50.json; do
		grep -q -- "$f" "$WORK/deb.list" || fail "the .deb lacks $f"
	done
fi
dpkg-deb -f "$deb" Depends | grep -q libzmq5 || fail "the .deb does not depend on libzmq5: $(dpkg-deb -f "$deb" Depends)"
pass "$(basename "$deb"): /usr/bin, the library, headers, pkg-config, CMake package; Depends: $(dpkg-deb -f "$deb" Depends | cut -c1-80)..."
assert_no_leftovers
