"""What CMake writes into ps-bench's package when it copies it
(bench/CMakeLists.txt, configure_file @ONLY): where the conf/ directory
lies, whose conf/bench/ holds the scenarios and conf/models/ the models.
In the build directory's copy it is the source directory, absolute; in an
installed copy it is relative to the directory holding the package
(PREFIX/share/ordo, where conf/ is installed beside ps_bench/); in the
source tree it stays unsubstituted and the tree itself is meant (bench/..).
"""

SOURCE_DIR = "@PS_BENCH_SOURCE_DIR@"
