# Exactness: integer gradients, lr 1, no momentum; after every iteration
# every parameter must equal the closed form (exact_worker checks), for
# W workers (the argument) x S in {1,2,3} x partition sizes that split
# unevenly, cut to single elements' worth of bytes, or exceed every tensor;
# over three connections per peer pair; then with server.optimizer = none,
# the averages themselves.
source "$(dirname "$0")/lib.sh" "$@"
W=${ARGS[0]}

# exact NAME S PSIZE [ps-launch options...]: a job of W x S whose every
# worker found every value exact
exact() {
	local name=$1 S=$2 psize=$3 n
	shift 3
	EXACT_WORKER_SIZES=1000,4097,10,1 \
		launch "$name" 120 --worker "$TOOLS/exact_worker" \
		--set cluster.workers="$W" --set cluster.servers="$S" \
		--set scheduling.partition_size="$psize" \
		--set train.iterations=6 "$@" ||
		fail "$name: job exited $?"
	n=$(grep -c "^exact: .* 0 wrong$" "$WORK/$name.out.log")
	[ "$n" -eq "$W" ] || fail "$name: $n of $W workers exact"
}

for S in 1 2 3; do
	for psize in 64 1024 1M; do
		exact "w${W}s${S}p$psize" "$S" "$psize" --set train.lr=1 \
			--set train.momentum=0
		pass "w${W}s${S}p$psize"
	done
done

# three connections per peer pair: the partitions spread over them, each
# partition's messages in order on its own
exact "lanes-w${W}s2" 2 64 --set train.lr=1 --set train.momentum=0 \
	--set transport.connections_per_peer=3
pass "lanes-w${W}s2: transport.connections_per_peer = 3, exact"

# server.optimizer = none: the servers send each round's average back
# (exact_worker checks it against the closed form); lr and momentum are
# set to values the servers must ignore
for S in 1 3; do
	exact "none-w${W}s$S" "$S" 1024 --set server.optimizer=none \
		--set train.lr=0.3 --set train.momentum=0.9
	pass "none-w${W}s$S: the averaged gradient, exact"
done
assert_no_leftovers
