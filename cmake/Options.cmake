# All build options of ordo, in one place.
option(PS_WITH_RDMA "Build the verbs RDMA transport (needs rdma-core: libibverbs, librdmacm)" OFF)
option(PS_WITH_CUDA "Build CUDA support (needs nvcc and the CUDA toolkit)" OFF)
set(PS_SANITIZE OFF CACHE STRING
  "Sanitizers: OFF, ON or address (ASan + UBSan), thread (TSan; run with TSAN_OPTIONS=suppressions=tests/tsan.supp)")
set_property(CACHE PS_SANITIZE PROPERTY STRINGS OFF ON address thread)
option(PS_BUILD_TESTS "Build the test suite (needs cmocka)" ON)
option(PS_BUILD_BENCH "Build the benchmarks under bench/" ON)
option(PS_FUZZ "Build the libFuzzer harnesses under tests/fuzz (needs clang: CC=clang)" OFF)
