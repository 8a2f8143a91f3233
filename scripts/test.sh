#!/usr/bin/env bash
# Installs the dependencies, builds ordo with ASan + UBSan, and runs the
# whole test suite (unit and integration) through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The demo's optimised build first: -O3 finds warnings (-Werror) that the
# sanitizer build does not.
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DPS_BUILD_TESTS=OFF >/dev/null
cmake --build build-release -j"$(nproc)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPS_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd build-asan
ctest --output-on-failure -j"$(nproc)" "$@"

# ThreadSanitizer over the tests that run our threads together: the client
# library's application and communication threads and ZeroMQ's I/O threads
# (payload release callbacks) in every job, the transport's wake-ups, the
# node's join, the threads that seal large payloads. A report makes its
# process exit 66 and the test fail.
cd ..
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPS_SANITIZE=thread \
	-DPS_BUILD_BENCH=OFF >/dev/null
cmake --build build-tsan -j"$(nproc)"
(cd build-tsan &&
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 report_signal_unsafe=0 suppressions=$PWD/../tests/tsan.supp" \
	ctest --output-on-failure -j"$(nproc)" -R \
	'^(test_node|transport_conformance_tcp|exact_w[124]|equivalence|async_mode|fuzz_running_job|worker_killed|idle_worker|interrupt|checkpoint|recovery|tune|replay|security|sealed|test_seal|limits|soak)$')

# The libFuzzer harnesses (tests/fuzz/README.md), built with clang, ASan and
# UBSan: each replays its regression inputs, then runs a fixed number of
# executions from its committed seed corpus (bench/fuzz_long.sh runs
# millions). Only the harnesses are built.
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPS_FUZZ=ON \
	-DPS_SANITIZE=ON -DPS_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz --target ordo_fuzz -j"$(nproc)"
(cd build-fuzz && ctest -L fuzz --output-on-failure -j"$(nproc)")

# The RDMA tests (tests/rdma/README.md): a build with PS_WITH_RDMA=ON and
# `ctest -L rdma`, whose rdma_vm test runs scripts/rdma-vm/rdma-vm.sh setup
# (as root on a fresh machine it installs QEMU and unpacks Debian's kernel,
# ~1 min once) and boots one Soft-RoCE VM for the in-VM tests (~20-40 s).
# Only the RDMA targets are built. ASan + UBSan work inside the VM (the
# guest runs the host's binaries and libraries), so this build uses them
# too. Where the VM cannot be had, rdma_vm is skipped and says why.
cmake -S . -B build-rdma -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPS_SANITIZE=ON \
	-DPS_WITH_RDMA=ON >/dev/null
cmake --build build-rdma --target ordo_rdma_tests -j"$(nproc)"
(cd build-rdma && ctest -L rdma --output-on-failure)

# The CUDA build (docs/cuda.md): PS_WITH_CUDA=ON with PS_WITH_RDMA=ON
# (GPUDirect RDMA), Release, no sanitizers (the CUDA runtime needs
# ASAN_OPTIONS=protect_shadow_gap=0 under ASan), then `ctest -L cuda`. Only
# ordo_cuda and its tests are built. The tests that need a CUDA device
# print "SKIP: no CUDA device: ..." without one (no GPU or no driver) and
# CTest counts them as skipped; the host emulation's tests run, one of them
# (cuda_gpudirect_vm) in a second boot of the Soft-RoCE VM. Without nvcc
# the stage is skipped, and says so.
nvcc=$(command -v nvcc || true)
[ -n "$nvcc" ] || { [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc; }
if [ -n "$nvcc" ]; then
	cmake -S . -B build-cuda -DCMAKE_BUILD_TYPE=Release -DPS_WITH_CUDA=ON \
		-DPS_WITH_RDMA=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
		-DPS_BUILD_BENCH=OFF >/dev/null
	cmake --build build-cuda --target ordo_cuda_tests -j"$(nproc)"
	(cd build-cuda && ctest -L cuda --output-on-failure -V)
else
	echo "CUDA build skipped: no nvcc on PATH or at /usr/local/cuda/bin/nvcc (install the CUDA toolkit to build ordo_cuda)"
fi
