# `cmake --install` produces a CMake package (find_package(MLBridge CONFIG),
# target MLBridge::mlbridge) and a pkg-config file (mlbridge.pc): the
# component core. The other components install their own parts (their
# CMakeLists.txt; MLBridgeConfig.cmake.in lists them). Last, installed
# binaries lose their debug information (MLBRIDGE_INSTALL_DEBUG_INFO).
include(CMakePackageConfigHelpers)

set(MLBRIDGE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/MLBridge)

install(TARGETS mlbridge EXPORT MLBridgeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# include/mlbridge/llvm/ belongs to the LLVM kit's components (llvm19, llvm22).
install(DIRECTORY include/mlbridge DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        PATTERN llvm EXCLUDE)
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

# Debug information names the build machine's paths (sources, build tree)
# and is most of the size of the plugins; an install is for users. Every
# ELF file installed so far (archives too: strip keeps their symbol tables)
# is stripped of it, whichever components are installed.
option(MLBRIDGE_INSTALL_DEBUG_INFO "Keep debug information in installed binaries" OFF)
if(NOT MLBRIDGE_INSTALL_DEBUG_INFO)
  if(NOT CMAKE_STRIP)
    message(FATAL_ERROR "MLBridge: no strip program (CMAKE_STRIP) to install without "
                        "debug information; set MLBRIDGE_INSTALL_DEBUG_INFO=ON")
  endif()
  install(CODE "
    foreach(_f IN LISTS CMAKE_INSTALL_MANIFEST_FILES)
      set(_f \"\$ENV{DESTDIR}\${_f}\") # the manifest has no DESTDIR
      if(IS_SYMLINK \"\${_f}\" OR NOT EXISTS \"\${_f}\")
        continue()
      endif()
      file(READ \"\${_f}\" _magic LIMIT 4 HEX)
      if(_magic STREQUAL \"7f454c46\" OR _magic STREQUAL \"213c6172\") # ELF, ar
        execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-debug \"\${_f}\"
                        RESULT_VARIABLE _rc ERROR_VARIABLE _err)
        if(NOT _rc EQUAL 0)
          message(FATAL_ERROR \"strip --strip-debug \${_f}: \${_err}\")
        endif()
      endif()
    endforeach()" ALL_COMPONENTS)
endif()
