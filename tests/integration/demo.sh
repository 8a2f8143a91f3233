# The README's demo job: 1 scheduler, 2 servers, 2 workers train the MLP.
source "$(dirname "$0")/lib.sh" "$@"

launch demo 120 --set train.iterations=30 || fail "demo job exited $?"
out=$WORK/demo.out.log
for w in 0 1; do
	n=$(grep -c "^worker $w iter .*/30 loss " "$out")
	[ "$n" -eq 30 ] || fail "worker $w printed $n progress lines, not 30"
done
grep -q "^summary: job .* finished: 2 worker(s) x 2 server(s), 30 iterations" "$out" ||
	fail "no job summary"
grep -q "imbalance" "$out" || fail "placement not printed"
first=$(loss_at "$out" 0 1)
last=$(loss_at "$out" 0 30)
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.8 * a) }' ||
	fail "loss did not drop: $first -> $last"
pass "30 iterations, loss $first -> $last"
assert_no_leftovers
