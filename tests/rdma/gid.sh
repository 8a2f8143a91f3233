#!/usr/bin/env bash
# tests/rdma/gid.sh BUILD_DIR SOURCE_DIR - transport.rdma_gid_index over
# the verbs transport, inside scripts/rdma-vm (ORDO_RDMA_VM=1; skips
# elsewhere). rxe0 port 1 has GIDs [0] fe80::... (link-local) and [1]
# ::ffff:192.0.2.1, both RoCE v2. With an index transport/rdma.c sets up
# its queue pairs itself (source GID = that index) instead of rdma_cm:
#   1. index 1 (the GID rdma_cm would pick anyway): a real job, 2 workers x
#      2 servers, the exactness worker (as job.sh), partitions of 1 KiB
#      (copied) and 1 MiB (zero copy): both workers report 0 wrong values;
#   2. index 7, which rxe0 does not have: every node stops at start-up
#      with the listing error (the index, then the device/port/GID table);
#   3. index 0, the link-local GID: rxe refuses it when the queue pair
#      goes to RTR; the job ends (never hangs) with an error naming the
#      index and the GID, and the connecting side names the refusal.
# Timing is never asserted: `launch`'s limit only ends a hang (status 124).
source "$(dirname "$0")/guest_lib.sh" "$@"

# 1. index 1: exact values.
for psize in 1024 1M; do
	name=gid1_w2s2p$psize
	exact_job "$name" "$psize" --set transport.rdma_gid_index=1
	# the index was applied: each transport names the GID it uses
	n=$(grep -c 'rdma: queue pairs use GID index 1 (::ffff:192.0.2.1, RoCE v2) of rxe0 port 1' \
		"$WORK/$name.err.log")
	[ "$n" -ge 5 ] || fail "$name: only $n of 5 nodes name GID index 1"
	pass "$name: transport.rdma_gid_index = 1, both workers exact"
done

# 2. index 7: the listing error at start-up.
status=0
launch gid7 120 "${rdma[@]}" --set transport.rdma_gid_index=7 || status=$?
[ $status -ne 124 ] || fail "gid7: the job hung"
[ $status -ne 0 ] || fail "gid7: the job exited 0 with GID index 7"
log=$WORK/gid7.err.log
grep -q 'cannot listen on 192.0.2.1: RDMA device rxe0 has no valid GID at index 7 on an ACTIVE port (transport.rdma_gid_index = 7)' "$log" ||
	fail "gid7: no node named the missing GID index 7"
grep -Eq '^ +0 +fe80::[0-9a-f:]+ +RoCE v2 +rxenet0' "$log" ||
	fail "gid7: the listing lacks GID 0"
grep -Eq '^ +1 +::ffff:192\.0\.2\.1 +RoCE v2 +rxenet0' "$log" ||
	fail "gid7: the listing lacks GID 1"
pass "gid7: transport.rdma_gid_index = 7 stops the job (status $status) with the listing"

# 3. index 0: the link-local GID.
status=0
launch gid0 180 "${rdma[@]}" --set transport.rdma_gid_index=0 || status=$?
[ $status -ne 124 ] && [ $status -ne 137 ] || fail "gid0: the job hung"
[ $status -ne 0 ] || fail "gid0: the job exited 0 with GID index 0"
log=$WORK/gid0.err.log
grep -Eq 'moving its queue pair to RTR with GID index 0 \(fe80::[0-9a-f:]+, RoCE v2\) of rxe0 port 1 \(transport.rdma_gid_index\) failed' "$log" ||
	fail "gid0: no node named GID index 0 and its GID"
grep -q 'refused: it cannot set up a queue pair with its GID index 0' "$log" ||
	fail "gid0: no connecting node named the refusal"
why=$(grep -m1 -o 'moving its queue pair to RTR with GID index 0.*' "$log")
pass "gid0: transport.rdma_gid_index = 0 ends the job (status $status): $why"
assert_no_leftovers
