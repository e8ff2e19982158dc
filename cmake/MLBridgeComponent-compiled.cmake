# Component compiled of find_package(MLBridge): mlbridge_add_compiled_model()
# (MLBridgeCompiledModel.cmake) with the mlbridge-model-compiler installed in
# <prefix>/bin.
include("${CMAKE_CURRENT_LIST_DIR}/MLBridgeCompiledModel.cmake")
get_property(_mlbridge_bin GLOBAL PROPERTY MLBRIDGE_COMPILED_MODEL_BIN_HINT)
find_program(MLBRIDGE_MODEL_COMPILER mlbridge-model-compiler HINTS "${_mlbridge_bin}" NO_DEFAULT_PATH)
if(MLBRIDGE_MODEL_COMPILER)
  set(MLBridge_compiled_FOUND TRUE)
else()
  set(MLBridge_compiled_FOUND FALSE)
  set(MLBridge_compiled_NOT_FOUND_MESSAGE
      "no mlbridge-model-compiler in ${_mlbridge_bin} (cmake --install ... --component compiled)")
endif()
unset(_mlbridge_bin)
