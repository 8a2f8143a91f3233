#!/usr/bin/env bash
# bench_seal_rate runs (a short smoke: two sizes, with and without a
# helper), prints a row with numbers per size and helper count, and
# refuses bad arguments with exit 2 and a message. Every message it times
# is opened and compared with what was sealed, so a seal that does not
# round-trip fails the run. How fast it is: docs/benchmarks.md, never
# asserted here.
source "$(dirname "$0")/lib.sh" "$@"
BENCH=$BUILD/bench/bench_seal_rate

timeout --kill-after=10 120 "$BENCH" --sizes 3000,600K --helpers 0,1 \
	--messages 3 >"$WORK/sr.out.log" 2>"$WORK/sr.err.log" ||
	fail "bench_seal_rate exited $?: $(cat "$WORK/sr.err.log")"
num='[0-9]+\.[0-9]'
for row in "3000 B | 0" "3000 B | 1" "600 KiB | 0" "600 KiB | 1"; do
	grep -Eq "^\| $row \| $num \| $num \| $num+ \| $num+ \|$" "$WORK/sr.out.log" ||
		fail "no row '$row': $(cat "$WORK/sr.out.log")"
done
pass "bench_seal_rate: a row per size and helper count"

refuses_bad_args "$BENCH" "--sizes fast" "--sizes 0" "--helpers x" "--helpers 65" \
	"--messages 0" "--nosuch 1" "--sizes"
pass "bad arguments exit 2 with a message"
