# Read by cpack for each generator (CPACK_PROJECT_CONFIG_FILE in
# cmake/Install.cmake). CPack makes a .deb with no shared-library Depends
# when dpkg-shlibdeps is not installed ("Using only user-provided
# dependencies"), a package that installs and then fails to start: stop
# instead.
if(CPACK_GENERATOR STREQUAL "DEB")
  find_program(ORDO_DPKG_SHLIBDEPS dpkg-shlibdeps)
  if(NOT ORDO_DPKG_SHLIBDEPS)
    message(FATAL_ERROR "cpack -G DEB: dpkg-shlibdeps not found, the package "
      "would have no Depends (apt-get install dpkg-dev)")
  endif()
endif()
