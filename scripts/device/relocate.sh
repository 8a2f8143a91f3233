#!/usr/bin/env bash
# relocate.sh [--as DIR] [--source SRC] - part of a device bundle
# (scripts/device-bundle.sh, docs/device.md): points every executable's
# interpreter at the bundle's own loader and every ELF file's library path
# (DT_RPATH, searched before LD_LIBRARY_PATH) at the bundle's lib/, by
# their absolute paths, so nothing of the machine's own libraries is
# loaded but the GPU driver's. Run it once where the bundle lies (again
# after moving it). It needs nothing but the bundle: patchelf runs on the
# bundle's own loader.
#   --as DIR      the bundle's absolute path as its programs will see it
#                 (inside a chroot, say); default: where it lies now
#   --source SRC  the ordo source tree there: ps-bench reads its conf/
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
as=$here
source_dir=
while [ $# -gt 0 ]; do
	case $1 in
	--as) as=${2:?--as needs a directory}; shift 2 ;;
	--source) source_dir=$(cd "${2:?--source needs a directory}" && pwd); shift 2 ;;
	*) echo "usage: bash relocate.sh [--as DIR] [--source SRC]" >&2; exit 2 ;;
	esac
done
case $as in /*) ;; *) echo "relocate.sh: --as $as: not an absolute path" >&2; exit 2 ;; esac

# patchelf from a copy: it rewrites its own file too
pe_copy=$(mktemp /tmp/ordo-patchelf.XXXXXX)
trap 'rm -f "$pe_copy"' EXIT
cp "$here/tools/patchelf" "$pe_copy"
pe() { "$here/lib/ld-linux-x86-64.so.2" --library-path "$here/lib" "$pe_copy" "$@"; }

n=0
while IFS= read -r f; do
	case $f in
	lib/*)
		# a library's own RUNPATH would hide the executable's DT_RPATH
		# from its dependencies: replace it where there is one
		[ -z "$(pe --print-rpath "$here/$f")" ] ||
			pe --force-rpath --set-rpath "$as/lib" "$here/$f"
		;;
	*)
		pe --set-interpreter "$as/lib/ld-linux-x86-64.so.2" \
			--force-rpath --set-rpath "$as/lib" "$here/$f"
		n=$((n + 1))
		;;
	esac
done <"$here/ELF-LIST"
if [ -n "$source_dir" ] && [ -f "$here/build/ps_bench/_build.py" ]; then
	sed -i "s|^SOURCE_DIR = .*|SOURCE_DIR = \"$source_dir\"|" \
		"$here/build/ps_bench/_build.py"
fi
echo "relocate.sh: $n executables now load from $as/lib"
