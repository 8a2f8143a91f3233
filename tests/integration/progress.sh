# ps-launch's progress (the scheduler's "progress N" lines on its pipe:
# every worker has finished N iterations): plain lines at every 10% when
# stderr is not a terminal; on a terminal (util-linux script(1) gives it
# one) a single line rewritten in place, ended before the job's last
# words.
source "$(dirname "$0")/lib.sh" "$@"
launch plain 120 --set train.iterations=20 || fail "the job exited $?"
n=$(grep -c "^ps-launch: iteration [0-9]*/20 ([0-9]*%)" "$WORK/plain.err.log")
[ "$n" -ge 5 ] || fail "$n progress lines, want one per 10%: $(grep iteration "$WORK/plain.err.log")"
grep -q "^ps-launch: iteration 20/20 (100%), [0-9.]* it/s$" "$WORK/plain.err.log" ||
	fail "no final progress line with a rate"
grep -q $'\r' "$WORK/plain.err.log" && fail "carriage returns written to a file"
pass "not a terminal: $n plain progress lines, the last at 100% with the rate"

if ! command -v script >/dev/null; then
	echo "skipping the terminal part: no script(1) (util-linux)"
	assert_no_leftovers
	exit 0
fi
script -qec "timeout 120 '$BUILD/ps-launch' --config '$JOB' --set train.iterations=20 \
	--set log.level=warn >/dev/null" /dev/null >"$WORK/tty.log" 2>&1 ||
	fail "the job on a terminal failed: $(tail -n 5 "$WORK/tty.log")"
grep -q $'\rps-launch: iteration 20/20, [0-9.]* it/s\e\[K' "$WORK/tty.log" ||
	fail "no rewritten progress line on the terminal: $(cat -A "$WORK/tty.log" | tail -n 5)"
grep -q "^ps-launch: iteration [0-9]*/20 ([0-9]*%)" "$WORK/tty.log" &&
	fail "plain progress lines on a terminal"
# the terminal turns the newline that ends it into CR LF
grep -qE $'\e\\[K\r?$' "$WORK/tty.log" || fail "the progress line was not ended"
pass "on a terminal: one line rewritten in place, ended before ps-launch's last line"
assert_no_leftovers
