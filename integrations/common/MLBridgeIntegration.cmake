# What every compiler integration's build shares (included by
# integrations/{llvm,mlir,c}/CMakeLists.txt, also by the out-of-tree build
# of the LLVM plugins).
#
# mlbridge_integration_runners(<core library> <have compiled model: 0|1>)
# sets, in the caller's scope, for the runners this build can give an
# integration (pipe always; onnx and grpc when their components are built):
#   MLBRIDGE_INTEGRATION_LIBS         libraries to link (core + components)
#   MLBRIDGE_INTEGRATION_DEFINITIONS  MLBRIDGE_INTEGRATION_HAVE_{ONNX,GRPC,COMPILED}
#   MLBRIDGE_INTEGRATION_RUNNERS_JSON {"pipe": true, "onnx": ..., ...} for
#                                     the build manifest
# MLBRIDGE_INTEGRATION_COMMON_DIR is the folder of RunnerSettings.{h,cpp},
# the C++ unit the plugins compile in.
set(MLBRIDGE_INTEGRATION_COMMON_DIR ${CMAKE_CURRENT_LIST_DIR})

function(mlbridge_integration_runners core_lib have_compiled)
  set(_libs ${core_lib})
  set(_defs MLBRIDGE_INTEGRATION_HAVE_COMPILED=${have_compiled})
  set(_json "\"pipe\": true")
  foreach(_c onnx grpc)
    string(TOUPPER ${_c} _C)
    set(_have 0)
    if(TARGET mlbridge_${_c})
      list(APPEND _libs mlbridge_${_c})
      set(_have 1)
    elseif(TARGET MLBridge::${_c})
      list(APPEND _libs MLBridge::${_c})
      set(_have 1)
    endif()
    list(APPEND _defs MLBRIDGE_INTEGRATION_HAVE_${_C}=${_have})
    if(_have)
      string(APPEND _json ", \"${_c}\": true")
    else()
      string(APPEND _json ", \"${_c}\": false")
    endif()
  endforeach()
  if(have_compiled)
    string(APPEND _json ", \"compiled\": true")
  else()
    string(APPEND _json ", \"compiled\": false")
  endif()
  set(MLBRIDGE_INTEGRATION_LIBS ${_libs} PARENT_SCOPE)
  set(MLBRIDGE_INTEGRATION_DEFINITIONS ${_defs} PARENT_SCOPE)
  set(MLBRIDGE_INTEGRATION_RUNNERS_JSON "{${_json}}" PARENT_SCOPE)
endfunction()
