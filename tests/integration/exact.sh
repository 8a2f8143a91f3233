# Exactness: integer gradients, lr 1, no momentum; after every iteration
# every parameter must equal the closed form (exact_worker checks), for
# W workers (the argument) x S in {1,2,3} x partition sizes that split
# unevenly, cut to single elements' worth of bytes, or exceed every tensor.
source "$(dirname "$0")/lib.sh" "$@"
W=${ARGS[0]}

for S in 1 2 3; do
	for psize in 64 1024 1M; do
		name=w${W}s${S}p$psize
		EXACT_WORKER_SIZES=1000,4097,10,1 \
			launch "$name" 120 --worker "$TOOLS/exact_worker" \
			--set cluster.workers="$W" --set cluster.servers="$S" \
			--set scheduling.partition_size="$psize" \
			--set train.iterations=6 --set train.lr=1 \
			--set train.momentum=0 ||
			fail "$name: job exited $?"
		n=$(grep -c "^exact: .* 0 wrong$" "$WORK/$name.out.log")
		[ "$n" -eq "$W" ] || fail "$name: $n of $W workers exact"
		pass "$name"
	done
done
assert_no_leftovers
