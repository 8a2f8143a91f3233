#!/usr/bin/env bash
# tests/rdma/vm.sh BUILD_DIR SOURCE_DIR EXPECTED [LABEL] - CTest `rdma_vm`:
# the in-VM RDMA tests, all in one boot of scripts/rdma-vm (each boot costs
# 10-25 s of TCG). LABEL (default rxe_guest) picks the guest tests:
# tests/cuda's cuda_gpudirect_vm runs the gd_guest ones the same way.
#
# 1. `rdma-vm.sh setup` (idempotent; installs QEMU and the kernel on a fresh
#    machine). Where the VM cannot be had (exit 3: no package registry, not
#    root with packages missing) the test is skipped (77) with the reason;
#    ORDO_RDMA_VM_REQUIRED=1 turns that skip into a failure.
# 2. `rdma-vm.sh run -- ctest -L LABEL` on this build directory inside
#    the VM. The build directory is not shared read-write (-w): the guest's
#    ctest writes its Testing/ into the guest's tmpfs, so it cannot clobber
#    the files of the host's ctest that is running this test.
# 3. Passes only when the guest's ctest passed exactly EXPECTED tests and
#    skipped none: a guest test that skips or is missing is a failure.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
expected=$3
label=${4:-rxe_guest}
vm=$src/scripts/rdma-vm/rdma-vm.sh

setup_log=$(mktemp)
trap 'rm -f "$setup_log"' EXIT
src_rc=0
bash "$vm" setup >"$setup_log" 2>&1 || src_rc=$?
cat "$setup_log"
if [ $src_rc -eq 3 ]; then
	reason=$(grep 'cannot set up the VM here' "$setup_log" | tail -n 1)
	if [ "${ORDO_RDMA_VM_REQUIRED:-0}" = 1 ]; then
		echo "FAIL: ORDO_RDMA_VM_REQUIRED=1 but the VM is unavailable: $reason"
		exit 1
	fi
	echo "SKIP: the Soft-RoCE VM is unavailable here: $reason"
	exit 77
elif [ $src_rc -ne 0 ]; then
	echo "FAIL: rdma-vm.sh setup failed (exit $src_rc)"
	exit 1
fi

out=$(mktemp)
trap 'rm -f "$setup_log" "$out"' EXIT
rc=0
(cd "$build" && bash "$vm" run -t 1200 -- \
	ctest --test-dir "$build" -L "$label" --output-on-failure) >"$out" 2>&1 || rc=$?
cat "$out"
if [ $rc -ne 0 ]; then
	case $rc in
	124) echo "FAIL: the guest tests ran past 1200 s" ;;
	125) echo "FAIL: the VM gave no result (console tail above)" ;;
	*) echo "FAIL: the guest's ctest exited $rc" ;;
	esac
	exit 1
fi
if ! grep -q "100% tests passed, 0 tests failed out of $expected\$" "$out"; then
	echo "FAIL: expected $expected guest tests, all passed"
	exit 1
fi
if grep -q "did not run" "$out"; then
	echo "FAIL: a guest test was skipped (see above)"
	exit 1
fi
echo "rdma_vm: $expected $label tests passed in the VM"
