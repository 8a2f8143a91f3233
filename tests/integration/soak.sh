# A short soak (bench/soak.sh runs 16 x 4 x 1000): 4 workers x 2 servers,
# 200 iterations of the exactness worker, every process's resident memory
# sampled at ten milestones of worker 0's progress: every value exact and
# no process growing by more than 32 MiB from the second milestone on. The
# bound is loose because this build runs under ASan (its quarantine of
# freed memory, here 4 MiB, and its allocator's caches fill over time); a
# leak per message (64 KiB partitions, thousands of messages) exceeds it
# many times over, and LeakSanitizer checks every process at exit.
source "$(dirname "$0")/lib.sh" "$@"
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4" \
	SOAK_GROWTH_MIB=32 SOAK_GROWTH_PCT=0 \
	bash "$SRC/bench/soak.sh" "$BUILD" 4 2 200 >"$WORK/soak.log" 2>&1
status=$?
cat "$WORK/soak.log"
[ $status -eq 0 ] || fail "the soak failed (status $status)"
grep -q "^soak: 4 workers x 2 servers, 200 iterations, .* 4 of 4 workers exact" "$WORK/soak.log" ||
	fail "not every worker exact"
n=$(grep -c "^| exact_worker \| ps-server \| ps-scheduler " "$WORK/soak.log")
[ "$n" -eq 7 ] || fail "$n of 7 processes sampled"
pass "4 x 2 x 200: exact, memory flat"
assert_no_leftovers
