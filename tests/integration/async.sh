# Asynchronous mode: pushes applied at once, explicit pulls; the job runs to
# the end and the loss goes down.
source "$(dirname "$0")/lib.sh" "$@"

launch async 120 --set train.mode=async --set train.iterations=40 \
	--set train.lr=0.05 || fail "async job exited $?"
out=$WORK/async.out.log
n=$(grep -c "^worker [01] iter .*/40 loss " "$out")
[ "$n" -eq 80 ] || fail "$n progress lines, not 80"
first=$(loss_at "$out" 0 1)
last=$(loss_at "$out" 0 40)
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' ||
	fail "loss did not drop: $first -> $last"
pass "async: loss $first -> $last"
assert_no_leftovers
