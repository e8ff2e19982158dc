# `cmake --install` produces a CMake package (find_package(MLBridge CONFIG),
# target MLBridge::mlbridge) and a pkg-config file (mlbridge.pc).
include(CMakePackageConfigHelpers)

set(MLBRIDGE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/MLBridge)

install(TARGETS mlbridge EXPORT MLBridgeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/mlbridge DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT MLBridgeTargets NAMESPACE MLBridge::
        DESTINATION ${MLBRIDGE_CMAKE_DIR})

configure_package_config_file(cmake/MLBridgeConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/MLBridgeConfig.cmake
  INSTALL_DESTINATION ${MLBRIDGE_CMAKE_DIR})
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/MLBridgeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/MLBridgeConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/MLBridgeConfigVersion.cmake
        DESTINATION ${MLBRIDGE_CMAKE_DIR})

file(RELATIVE_PATH MLBRIDGE_PC_TO_PREFIX
     "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file(cmake/mlbridge.pc.in ${CMAKE_CURRENT_BINARY_DIR}/mlbridge.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/mlbridge.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
