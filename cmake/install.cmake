# `cmake --install` then find_package(liveheap) gives liveheap::liveheap, and liveheap::json
# where nlohmann_json is installed (cmake/liveheapConfig.cmake.in).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS liveheap EXPORT liveheapTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The preload library loads the full one from its own directory (src/boot/full_library.hpp).
install(TARGETS liveheap_preload liveheap_preload_full LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# Next to the libraries: where a traced process looks for it (src/symbolize/symbolizer_process.hpp).
install(TARGETS liveheap-symbolizer RUNTIME DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/liveheap DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT liveheapTargets NAMESPACE liveheap::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/liveheap)
install(TARGETS liveheap_json EXPORT liveheapJsonTargets)
install(EXPORT liveheapJsonTargets NAMESPACE liveheap::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/liveheap)
configure_package_config_file(cmake/liveheapConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/liveheapConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/liveheap)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/liveheapConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/liveheapConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/liveheapConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/liveheap)
