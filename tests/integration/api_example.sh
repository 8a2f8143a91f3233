# The public header's example compiles and runs: the indented example in
# include/ordo/ordo.h's first comment is, line for line (whitespace
# aside), the part of examples/worker.c between "// example: begin" and
# "// example: end"; examples/worker.c builds with the compiler of this
# build against include/ and libordo.so alone (-std=c11 -pedantic -Wall
# -Wextra -Werror), its 2 workers train exactly in a 2 x 2 job, and
# without a scheduler it fails saying why (ps_client_last_error).
source "$(dirname "$0")/lib.sh" "$@"

norm() { sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]\+/ /g' -e 's/[[:space:]]*$//'; }
awk 'f && !/^ \*     / {exit} /^ \*     / {f = 1; sub(/^ \*/, ""); print}' \
	"$SRC/include/ordo/ordo.h" | norm >"$WORK/header.txt"
sed -n '/\/\/ example: begin$/,/\/\/ example: end$/p' "$SRC/examples/worker.c" |
	sed '1d;$d' | norm >"$WORK/example.txt"
[ -s "$WORK/header.txt" ] || fail "no indented example in include/ordo/ordo.h's first comment"
[ -s "$WORK/example.txt" ] || fail "no '// example: begin' ... '// example: end' in examples/worker.c"
diff -u "$WORK/example.txt" "$WORK/header.txt" >"$WORK/diff.log" ||
	fail "the header's example is not examples/worker.c's: $(cat "$WORK/diff.log")"
pass "include/ordo/ordo.h's example is examples/worker.c's ($(wc -l <"$WORK/header.txt") lines)"

cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
flags=()
grep -q '^PS_SANITIZE:STRING=\(ON\|address\)$' "$BUILD/CMakeCache.txt" &&
	flags=(-fsanitize=address,undefined)
"${cc:-cc}" -std=c11 -pedantic -Wall -Wextra -Werror "${flags[@]}" -I"$SRC/include" \
	-o "$WORK/worker" "$SRC/examples/worker.c" -L"$BUILD" -lordo -Wl,-rpath,"$BUILD" \
	>"$WORK/cc.log" 2>&1 || fail "examples/worker.c does not build: $(head -n 20 "$WORK/cc.log")"
pass "examples/worker.c builds against include/ and libordo.so alone"

launch example 120 --worker "$WORK/worker" --set train.iterations=3 \
	--set train.lr=0.5 --set train.momentum=0 || fail "the job exited $?"
n=$(grep -c "^worker: 3 iterations, w1\[0\] = 0.125$" "$WORK/example.out.log")
[ "$n" -eq 2 ] || fail "$n of 2 workers at w1[0] = 0.125 after 3 halvings: $(grep '^worker' "$WORK/example.out.log")"
pass "examples/worker.c: 2 workers x 2 servers, 3 iterations, every worker at 0.125"

"$WORK/worker" --config "$JOB" --set cluster.scheduler_port=1 \
	--set cluster.connect_timeout_ms=200 >"$WORK/alone.log" 2>&1 &&
	fail "examples/worker.c succeeded without a scheduler"
grep -q "^worker: ps_client_start: the job failed: scheduler tcp://127.0.0.1:1 unreachable" "$WORK/alone.log" ||
	fail "examples/worker.c without a scheduler: $(tail -n 3 "$WORK/alone.log")"
pass "examples/worker.c without a scheduler: \"$(grep '^worker: ' "$WORK/alone.log")\""
assert_no_leftovers
