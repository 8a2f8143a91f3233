# All build options of ordo, in one place.
option(PS_WITH_RDMA "Build the verbs RDMA transport (needs rdma-core: libibverbs, librdmacm)" OFF)
option(PS_WITH_CUDA "Build CUDA support (needs nvcc and the CUDA toolkit)" OFF)
option(PS_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(PS_BUILD_TESTS "Build the test suite (needs cmocka)" ON)
option(PS_BUILD_BENCH "Build the benchmarks under bench/" ON)
