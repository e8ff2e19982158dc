# cmake -DMLBRIDGE_SOURCE_DIR=<source> -P support_layering.cmake
#
# support/ is the library's bottom layer: its files include only each other,
# the standard library and the public headers that belong to it (status.h,
# json_escape.h). Fails naming every other include.
file(GLOB _files ${MLBRIDGE_SOURCE_DIR}/src/support/*)
set(_allowed "^support/" "^mlbridge/status\\.h$" "^mlbridge/json_escape\\.h$")
set(_bad "")
foreach(f IN LISTS _files)
  file(STRINGS ${f} _includes REGEX "^#include \"")
  foreach(line IN LISTS _includes)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" _inc "${line}")
    set(_ok FALSE)
    foreach(pattern IN LISTS _allowed)
      if(_inc MATCHES "${pattern}")
        set(_ok TRUE)
      endif()
    endforeach()
    if(NOT _ok)
      file(RELATIVE_PATH _rel ${MLBRIDGE_SOURCE_DIR} ${f})
      list(APPEND _bad "${_rel} includes ${_inc}")
    endif()
  endforeach()
endforeach()
if(_bad)
  list(JOIN _bad "\n  " _text)
  message(FATAL_ERROR "support/ must not include layers above it:\n  ${_text}")
endif()
message(STATUS "support/ includes only itself, status.h and json_escape.h")
