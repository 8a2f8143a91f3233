#!/usr/bin/env bash
# tests/layers.sh BUILD_DIR SOURCE_DIR - the layering of docs/architecture.md.
#
#  1. Every #include "DIR/..." of a source folder is allowed by the table
#     between <!-- layers begin --> and <!-- layers end --> in
#     docs/architecture.md; every folder holding .c/.h files has a row.
#  2. The checker can fail: on a copy of the tree with one upward include
#     added, it reports exactly that include.
#  3. The pure libraries (ordo_core, ordo_sim) reference no ZeroMQ, pthread
#     or clock symbol, and ps-sim does not load libzmq.
set -u
build=$1
src=$2
fail=0

# check_tree ROOT: prints every include the table forbids; status 1 if any.
check_tree() {
	local root=$1 doc=$1/docs/architecture.md
	awk '
		/<!-- layers begin -->/ { on = 1; next }
		/<!-- layers end -->/ { on = 0 }
		on && /^\| `/ {
			n = split($0, cell, "|")
			folder = cell[2]; gsub(/[` ]/, "", folder)
			allowed = cell[3]; gsub(/`/, "", allowed)
			gsub(/^ +| +$/, "", allowed)
			print folder ":" allowed
		}' "$doc" >"$tmp/table"
	if [ ! -s "$tmp/table" ]; then
		echo "no layer table in $doc"
		return 1
	fi
	local bad=0 dir f inc top
	for dir in "$root"/*/; do
		dir=${dir%/}
		dir=${dir##*/}
		case $dir in tests | bench | cmake | build* | include | conf | docs | scripts) continue ;; esac
		ls "$root/$dir"/*.[ch] >/dev/null 2>&1 || continue
		if ! grep -q "^$dir:" "$tmp/table"; then
			echo "folder $dir/ has sources but no row in docs/architecture.md"
			bad=1
			continue
		fi
		local allowed
		allowed=" $(grep "^$dir:" "$tmp/table" | cut -d: -f2-) "
		for f in "$root/$dir"/*.[ch]; do
			while IFS= read -r inc; do
				top=${inc%%/*}
				[ "$top" = "$inc" ] && continue # same-folder "x.h"
				[ "$top" = "$dir" ] && continue
				case $allowed in *" $top "*) continue ;; esac
				echo "$dir/${f##*/} includes \"$inc\": $dir/ may not include $top/"
				bad=1
			done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
		done
	done
	return $bad
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== includes against docs/architecture.md"
if ! check_tree "$src"; then
	fail=1
fi

echo "== the checker catches an upward include"
mkdir -p "$tmp/tree"
(cd "$src" && tar cf - --exclude='./build*' --exclude=./.git \
	--exclude=./tests --exclude=./bench . ) | (cd "$tmp/tree" && tar xf -)
sed -i '0,/^#include "/s//#include "worker\/replay.h"\n#include "/' \
	"$tmp/tree/scheduling/gate.c"
out=$(check_tree "$tmp/tree")
if [ $? -eq 0 ] || ! grep -q 'scheduling/gate.c includes "worker/replay.h"' <<<"$out"; then
	echo "FAIL: an include of worker/ from scheduling/ was not reported: $out"
	fail=1
fi
mkdir -p "$tmp/tree/newfolder"
echo '#include "common/log.h"' >"$tmp/tree/newfolder/x.c"
out=$(check_tree "$tmp/tree")
if ! grep -q 'folder newfolder/ has sources but no row' <<<"$out"; then
	echo "FAIL: a folder without a row was not reported: $out"
	fail=1
fi

echo "== the pure libraries need no ZeroMQ, threads or clock"
for lib in libordo_core.a libordo_sim.a; do
	if [ ! -f "$build/$lib" ]; then
		echo "FAIL: $build/$lib is missing"
		fail=1
		continue
	fi
	syms=$(nm -u "$build/$lib" 2>/dev/null |
		grep -E ' (zmq_[a-z_]*|pthread_[a-z_]*|clock_gettime|gettimeofday|time|nanosleep|usleep|sleep)$' |
		awk '{print $NF}' | sort -u | tr '\n' ' ')
	if [ -n "$syms" ]; then
		echo "FAIL: $lib references $syms"
		fail=1
	fi
done
if ldd "$build/ps-sim" | grep -q libzmq; then
	echo "FAIL: ps-sim loads libzmq"
	fail=1
fi
if ! ldd "$build/ps-server" | grep -q libzmq; then
	echo "FAIL: ps-server does not load libzmq: the check above cannot see a link"
	fail=1
fi

[ $fail -eq 0 ] && echo "layers: OK"
exit $fail
