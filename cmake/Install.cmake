# What `cmake --install` puts under the prefix, and `cpack -G DEB`
# packages: the binaries, libordo.so (SONAME libordo.so.0, only the public
# API exported: cmake/ordo.map), the headers, a pkg-config file, a CMake
# package (find_package(ordo) -> ordo::ordo) and man pages made by
# help2man from every binary's --help (when help2man is installed); with
# the benchmarks, ps-bench and its package, scenarios and models
# (bench/CMakeLists.txt).
# tests/integration/install.sh installs into a temporary prefix and builds
# and runs a program against it both ways.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The shared client library: the static client library whole, what it
# needs from the others, every symbol but the public API hidden.
add_library(ordo_shared SHARED ${CMAKE_CURRENT_SOURCE_DIR}/common/error.c)
target_link_libraries(ordo_shared PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,ordo>"
  ordo_net)
target_link_options(ordo_shared PRIVATE
  "-Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/cmake/ordo.map")
# Every symbol resolved at link time, except under clang's sanitizers or
# libFuzzer's coverage (PS_SANITIZE, PS_FUZZ): clang links their runtime
# into executables only, never into a shared library, so the __asan_*,
# __ubsan_* and __sanitizer_cov_* the instrumented code calls are left for
# the program that loads libordo.so (gcc's sanitizers link libasan.so
# into it, and keep the check).
if(NOT (CMAKE_C_COMPILER_ID MATCHES "Clang" AND (PS_SANITIZE OR PS_FUZZ)))
  target_link_options(ordo_shared PRIVATE "-Wl,--no-undefined")
endif()
set_target_properties(ordo_shared PROPERTIES
  OUTPUT_NAME ordo
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  EXPORT_NAME ordo
  LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cmake/ordo.map)
target_include_directories(ordo_shared INTERFACE
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

install(TARGETS ordo_shared EXPORT ordoTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/ordo/ordo.h include/ordo/error.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ordo)
install(EXPORT ordoTargets NAMESPACE ordo::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ordo)
configure_package_config_file(cmake/ordoConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ordoConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ordo)
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/ordoConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ordoConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/ordoConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ordo)
file(RELATIVE_PATH PC_PREFIX_REL /x/${CMAKE_INSTALL_LIBDIR}/pkgconfig /x)
configure_file(cmake/ordo.pc.in ${CMAKE_CURRENT_BINARY_DIR}/ordo.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ordo.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The Python package (python/ordo: ctypes over libordo.so.0), told where
# the library was installed (_libpath.py, written at install time so that
# `cmake --install --prefix P` and DESTDIR staging both point at P). Under
# lib/python3/dist-packages even where the library goes to a multiarch
# lib/<triplet> (CMAKE_INSTALL_PREFIX=/usr): Debian's python3 looks only
# in /usr/lib/python3/dist-packages.
set(ORDO_PYTHON_DIR lib/python3/dist-packages)
install(FILES python/ordo/__init__.py python/ordo/torch.py
  DESTINATION ${ORDO_PYTHON_DIR}/ordo)
install(CODE "
  file(WRITE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${ORDO_PYTHON_DIR}/ordo/_libpath.py\"
    \"LIBORDO = '\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/libordo.so.${PROJECT_VERSION_MAJOR}'\\n\")
")

# Man pages from --help (help2man calls --help and --version).
set(ordo_programs ps-scheduler ps-server ps-worker ps-launch ps-model
  ps-ckpt ps-sim ps-tune ps-keygen)
find_program(HELP2MAN help2man)
if(HELP2MAN)
  set(man_pages)
  foreach(prog ${ordo_programs})
    set(page ${CMAKE_CURRENT_BINARY_DIR}/man/${prog}.1)
    add_custom_command(OUTPUT ${page}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/man
      COMMAND ${HELP2MAN} --no-info --no-discard-stderr
              --name "part of ordo, a parameter server with ordered transfers"
              --output ${page} $<TARGET_FILE:${prog}>
      DEPENDS ${prog} VERBATIM)
    list(APPEND man_pages ${page})
  endforeach()
  add_custom_target(ordo_man ALL DEPENDS ${man_pages})
  install(FILES ${man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "help2man not found: no man pages (apt-get install help2man)")
endif()

# cpack -G DEB
set(CPACK_PACKAGE_NAME ordo)
set(CPACK_PACKAGE_VENDOR "ordo")
set(CPACK_PACKAGE_CONTACT "ordo maintainers <ordo@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "parameter server for distributed DNN training with ordered transfers")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# Depends comes from dpkg-shlibdeps (dpkg-dev), which CPack skips without
# a word when it is missing: cmake/CPackProject.cmake stops cpack -G DEB
# then instead of making a package with no Depends. python3 is only for
# the Python package. scripts/check-deb.sh installs the package in a clean
# Debian 12 chroot and runs a job with it.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS python3)
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_CURRENT_SOURCE_DIR}/cmake/CPackProject.cmake)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
include(CPack)
