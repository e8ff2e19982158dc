# FindONNXRuntime
# ---------------
# Finds ONNX Runtime's C/C++ headers and shared library.
#
# Where it looks: ONNXRUNTIME_ROOT (a CMake or environment variable) -- the
# root of an official release archive (include/, lib/) or of the project's
# own copy (.deps/onnxruntime-<version>, made by scripts/deps/onnxruntime.sh)
# -- and then the system's default paths.
#
# Set ONNXRUNTIME_LIBRARY_ONLY to accept an installation without headers
# (code that only links against ONNX Runtime, e.g. an installed MLBridge).
#
# Result: ONNXRuntime_FOUND, ONNXRuntime_VERSION, ONNXRuntime_INCLUDE_DIR,
# ONNXRuntime_LIBRARY and the imported target ONNXRuntime::ONNXRuntime.

if(NOT ONNXRUNTIME_ROOT AND DEFINED ENV{ONNXRUNTIME_ROOT})
  set(ONNXRUNTIME_ROOT "$ENV{ONNXRUNTIME_ROOT}")
endif()

set(_ort_hint_args)
if(ONNXRUNTIME_ROOT)
  # An explicit root wins over anything on the system.
  set(_ort_hint_args PATHS "${ONNXRUNTIME_ROOT}" NO_DEFAULT_PATH)
endif()

find_path(ONNXRuntime_INCLUDE_DIR onnxruntime_c_api.h
  ${_ort_hint_args}
  PATH_SUFFIXES include include/onnxruntime include/onnxruntime/core/session)
find_library(ONNXRuntime_LIBRARY NAMES onnxruntime
  ${_ort_hint_args}
  PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)

set(ONNXRuntime_VERSION "")
if(ONNXRuntime_LIBRARY)
  get_filename_component(_ort_libdir "${ONNXRuntime_LIBRARY}" DIRECTORY)
  if(EXISTS "${_ort_libdir}/../VERSION_NUMBER")
    file(STRINGS "${_ort_libdir}/../VERSION_NUMBER" ONNXRuntime_VERSION LIMIT_COUNT 1)
  endif()
endif()
if(NOT ONNXRuntime_VERSION AND ONNXRuntime_INCLUDE_DIR
   AND EXISTS "${ONNXRuntime_INCLUDE_DIR}/onnxruntime_c_api.h")
  # ORT_API_VERSION N belongs to release 1.N.
  file(STRINGS "${ONNXRuntime_INCLUDE_DIR}/onnxruntime_c_api.h" _ort_api
       REGEX "^#define ORT_API_VERSION [0-9]+")
  if(_ort_api MATCHES "ORT_API_VERSION ([0-9]+)")
    set(ONNXRuntime_VERSION "1.${CMAKE_MATCH_1}")
  endif()
endif()

set(_ort_required ONNXRuntime_LIBRARY)
if(NOT ONNXRUNTIME_LIBRARY_ONLY)
  list(APPEND _ort_required ONNXRuntime_INCLUDE_DIR)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(ONNXRuntime
  REQUIRED_VARS ${_ort_required}
  VERSION_VAR ONNXRuntime_VERSION
  REASON_FAILURE_MESSAGE
    "run scripts/deps/onnxruntime.sh, or set ONNXRUNTIME_ROOT to an ONNX Runtime release")

if(ONNXRuntime_FOUND AND NOT TARGET ONNXRuntime::ONNXRuntime)
  add_library(ONNXRuntime::ONNXRuntime SHARED IMPORTED)
  set_target_properties(ONNXRuntime::ONNXRuntime PROPERTIES
    IMPORTED_LOCATION "${ONNXRuntime_LIBRARY}")
  if(ONNXRuntime_INCLUDE_DIR)
    set_target_properties(ONNXRuntime::ONNXRuntime PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${ONNXRuntime_INCLUDE_DIR}")
  endif()
endif()
mark_as_advanced(ONNXRuntime_INCLUDE_DIR ONNXRuntime_LIBRARY)
