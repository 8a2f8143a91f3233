#!/usr/bin/env bash
# tests/rdma/cli.sh BUILD_DIR host|guest - ps-rdma-devices' command line.
#   host:  on a machine without RDMA devices (skip where there are some):
#          the listing says none; --addr fails (exit 1) with the message
#          that names the keys; bad usage exits 2.
#   guest: inside scripts/rdma-vm (skip elsewhere): the table shows rxe0;
#          --addr 192.0.2.1 chooses rxe0 port 1 GID index 1; a wrong GID
#          index fails with the listing.
set -u
bin=$1/tests/rdma/ps-rdma-devices
mode=$2
fail=0
check() { # check DESCRIPTION EXPECTED_RC PATTERN -- CMD...
	local what=$1 want_rc=$2 pat=$3 out rc
	shift 4
	out=$("$@" 2>&1)
	rc=$?
	if [ $rc -ne "$want_rc" ] || ! grep -qF -- "$pat" <<<"$out"; then
		echo "FAIL: $what: exit $rc (want $want_rc), output:"
		echo "$out"
		echo "(wanted: $pat)"
		fail=1
	else
		echo "ok: $what"
	fi
}
case $mode in
host)
	if ! "$bin" | grep -q "RDMA devices found: none"; then
		echo "SKIP: this machine has RDMA devices"
		exit 77
	fi
	check "listing" 0 "RDMA devices found: none" -- "$bin"
	check "--addr" 1 "no RDMA device was found" -- "$bin" --addr 10.0.0.1
	check "--addr names the keys" 1 "transport.rdma_gid_index = INDEX" -- "$bin" --addr 10.0.0.1
	check "bad address" 1 "is not an IPv4 address" -- "$bin" --addr nowhere
	check "bad --gid-index" 2 "not a number" -- "$bin" --gid-index x
	check "unknown option" 2 "usage:" -- "$bin" --frobnicate
	check "--help" 0 "usage:" -- "$bin" --help
	;;
guest)
	if [ "${ORDO_RDMA_VM:-}" != 1 ]; then
		echo "SKIP: runs only inside scripts/rdma-vm (the CTest test rdma_vm runs it there)"
		exit 77
	fi
	check "listing" 0 "rxe0 port 1: state ACTIVE" -- "$bin"
	check "automatic" 0 "rxe0 port 1 GID index 1 ::ffff:192.0.2.1 (RoCE v2, netdev rxenet0" -- \
		"$bin" --addr 192.0.2.1
	check "explicit" 0 "rxe0 port 1 GID index 1" -- "$bin" --addr 192.0.2.1 --device rxe0 --gid-index 1
	check "wrong GID index" 1 "RDMA device rxe0 has no valid GID at index 9" -- \
		"$bin" --addr 192.0.2.1 --device rxe0 --gid-index 9
	"$bin" --addr 192.0.2.1 --device rxe0 --gid-index 9 || true
	;;
*)
	echo "usage: cli.sh BUILD_DIR host|guest" >&2
	exit 2
	;;
esac
exit $fail
