# cluster.interface: servers and workers bind and advertise the IPv4
# address of the named interface.
#  1. lo: the job runs on 127.0.0.1, exact.
#  2. an interface that does not exist: every server and worker stops with
#     an error naming the key and listing the interfaces that have an
#     IPv4 address.
#  3. (root: a network namespace of its own with a veth pair v0 10.201.0.1
#     and v1 10.201.0.2) the scheduler on v0's address, cluster.interface =
#     v1: every node listens on 10.201.0.2, exact.
#  4. (the same namespace) every node advertising 10.201.0.99, where
#     nobody is: the scheduler's error names the node and the address.
source "$(dirname "$0")/lib.sh" "$@"
exact=(--worker "$TOOLS/exact_worker" --set train.iterations=3
	--set train.lr=1 --set train.momentum=0)

EXACT_WORKER_SIZES=100 launch lo 120 "${exact[@]}" --set cluster.interface=lo ||
	fail "the job on interface lo exited $?"
[ "$(grep -c '^exact: .* 0 wrong$' "$WORK/lo.out.log")" -eq 2 ] || fail "job on lo not exact"
n=$(grep -c '\(server\|worker\)\] info: listening on tcp://127.0.0.1:' "$WORK/lo.err.log")
[ "$n" -eq 4 ] || fail "$n of 4 nodes listen on lo's 127.0.0.1"
pass "cluster.interface = lo: 4 nodes on 127.0.0.1, exact"

EXACT_WORKER_SIZES=100 launch nosuch 120 "${exact[@]}" --set cluster.interface=nosuch0 &&
	fail "a job on a missing interface ran"
grep -q "error: cluster.interface = nosuch0: no such network interface; interfaces with an IPv4 address here: .*lo 127.0.0.1" \
	"$WORK/nosuch.err.log" || fail "no listing error: $(grep -m2 error "$WORK/nosuch.err.log")"
pass "cluster.interface = nosuch0: the error lists the interfaces"

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
	echo "skipping the namespace part: needs root and ip"
	assert_no_leftovers
	exit 0
fi
ns=ordo-if-$$
cleanup_ns() {
	local rc=$?
	ip netns del "$ns" 2>/dev/null
	(exit $rc)
	on_exit
}
trap cleanup_ns EXIT
ip netns add "$ns" || fail "ip netns add"
ip -n "$ns" link set lo up
ip -n "$ns" link add v0 type veth peer name v1 || fail "veth"
ip -n "$ns" addr add 10.201.0.1/24 dev v0
ip -n "$ns" addr add 10.201.0.2/24 dev v1
ip -n "$ns" link set v0 up
ip -n "$ns" link set v1 up
launch_ns() {
	timeout --kill-after=5 300 ip netns exec "$ns" "$BUILD/ps-launch" --config "$JOB" "$@" \
		>"$WORK/ns.out.log" 2>"$WORK/ns.err.log"
}
EXACT_WORKER_SIZES=100 launch_ns "${exact[@]}" --set cluster.scheduler_host=10.201.0.1 \
	--set cluster.interface=v1 || fail "the job in the namespace exited $?"
[ "$(grep -c '^exact: .* 0 wrong$' "$WORK/ns.out.log")" -eq 2 ] || fail "job in the namespace not exact"
n=$(grep -c '\(server\|worker\)\] info: listening on tcp://10.201.0.2:' "$WORK/ns.err.log")
[ "$n" -eq 4 ] || fail "$n of 4 nodes listen on v1's 10.201.0.2"
pass "cluster.interface = v1 in a namespace: 4 nodes on 10.201.0.2 (the scheduler on v0's 10.201.0.1), exact"
assert_no_leftovers

# 4. an advertised address the scheduler cannot reach (10.201.0.99: in v0's
#    subnet, nobody there): the scheduler's error names the node and the
#    address, and the job fails instead of waiting on.
EXACT_WORKER_SIZES=100 launch_ns "${exact[@]}" --set cluster.scheduler_host=10.201.0.1 \
	--set cluster.bind_host=0.0.0.0 --set cluster.advertise_host=10.201.0.99 \
	--set cluster.connect_timeout_ms=20000 && fail "a job advertising an unreachable address ran"
grep -q "scheduler\] error: aborting the job: cannot reach \(server\|worker\) pid [0-9]* at tcp://10.201.0.99:[0-9]*, which registered: .* (cluster.advertise_host?)" \
	"$WORK/ns.err.log" || fail "no error naming the unreachable address: $(grep -m3 error "$WORK/ns.err.log")"
pass "an advertised address the scheduler cannot reach: named in the scheduler's error, the job failed"
assert_no_leftovers
