# Which optional components this build has, recorded for the tests.
#
# Included at the end of the top-level CMakeLists.txt, when every component
# has decided whether it is built. Writes the build manifest,
# <build>/mlbridge-components.json (cmake/MLBridgeManifest.cmake), with the
# components' own sections. The tests read it (tests/build_components.py,
# through mlbridge.build_manifest): a test of a component is skipped only
# when the manifest says the component is off; when it says ON, anything of
# the component that is missing is a failure.
#
# MLBRIDGE_REQUIRE_ALL_COMPONENTS=ON (what scripts/test.sh configures) makes
# a component that switched itself off (a dependency not found) a
# configuration error, so the test command never passes with a component
# silently missing. Components a configuration never has by design (the
# LLVM plugins in a ThreadSanitizer build, the MLIR plugin in any sanitizer
# build) are listed as not applicable.
option(MLBRIDGE_REQUIRE_ALL_COMPONENTS
       "Fail the configuration when an optional component is not built" OFF)

set(_mlb_component_targets
    grpc mlbridge_grpc
    grpc_python_core mlbridge_grpc_native
    shm_python_fast_path mlbridge_shm_native
    onnx mlbridge_onnx
    tf_aot mlbridge_tf
    compiled_model mlbridge-model-compiler
    llvm_plugins MLBridgeInlineAdvisor
    llvm_plugins_llvm22 MLBridgeInlineAdvisor22
    ir2vec MLBridgeIR2Vec
    ir2vec_llvm22 MLBridgeIR2Vec22
    mlir_plugin MLBridgeMLIRUnroll
    mlir_plugin_mlir22 MLBridgeMLIRUnroll22
    c_tool mlb-loop-pragmas
    c_tool_llvm22 mlb-loop-pragmas-22
    fuzzers mlbridge-fuzzers)

if(MLBRIDGE_SANITIZE)
  set(_mlb_na_mlir_plugin "not built with sanitizers (integrations/mlir/CMakeLists.txt)")
  set(_mlb_na_mlir_plugin_mlir22 "${_mlb_na_mlir_plugin}")
  set(_mlb_na_fuzzers "built in unsanitized builds only (tests/CMakeLists.txt)")
  set(_mlb_na_grpc_python_core "a Python extension: built in unsanitized builds only (src/grpc/CMakeLists.txt)")
  set(_mlb_na_shm_python_fast_path "a Python extension: built in unsanitized builds only (src/python_ext/CMakeLists.txt)")
elseif(NOT MLBRIDGE_BUILD_TESTS)
  set(_mlb_na_fuzzers "MLBRIDGE_BUILD_TESTS is OFF")
endif()
if(MLBRIDGE_SANITIZE MATCHES "undefined" AND NOT TARGET MLBridgeInlineAdvisor
       AND LLVM_FOUND AND NOT LLVM_ENABLE_RTTI)
  set(_mlb_na_llvm_plugins "UBSan needs RTTI in the plugins; this LLVM has none")
endif()
if(DEFINED _mlb_na_llvm_plugins)  # the other LLVM plugins are built with them or not at all
  foreach(_c llvm_plugins_llvm22 ir2vec ir2vec_llvm22)
    set(_mlb_na_${_c} "${_mlb_na_llvm_plugins}")
  endforeach()
endif()

if(NOT MLBRIDGE_MLIR22_ROOT AND NOT DEFINED _mlb_na_mlir_plugin_mlir22)
  set(_mlb_na_mlir_plugin_mlir22
      "opt-in: MLBRIDGE_MLIR22_ROOT not set (scripts/deps/mlir22.sh; docs/mlir.md)")
endif()

set(_mlb_built_json "")
set(_mlb_na_json "")
set(_mlb_missing "")
list(LENGTH _mlb_component_targets _n)
math(EXPR _last "${_n} - 1")
foreach(_i RANGE 0 ${_last} 2)
  math(EXPR _j "${_i} + 1")
  list(GET _mlb_component_targets ${_i} _name)
  list(GET _mlb_component_targets ${_j} _target)
  if(TARGET ${_target})
    set(_on true)
  else()
    set(_on false)
    if(DEFINED _mlb_na_${_name})
      string(APPEND _mlb_na_json "${_mlb_na_sep}\"${_name}\": \"${_mlb_na_${_name}}\"")
      set(_mlb_na_sep ", ")
    else()
      list(APPEND _mlb_missing ${_name})
    endif()
  endif()
  string(APPEND _mlb_built_json "${_mlb_built_sep}\"${_name}\": ${_on}")
  set(_mlb_built_sep ", ")
endforeach()

mlbridge_manifest_write("${_mlb_built_json}" "${_mlb_na_json}")
if(_mlb_missing)
  string(REPLACE ";" ", " _mlb_missing_text "${_mlb_missing}")
  if(MLBRIDGE_REQUIRE_ALL_COMPONENTS)
    message(FATAL_ERROR
      "MLBRIDGE_REQUIRE_ALL_COMPONENTS is ON but these components are not built: "
      "${_mlb_missing_text}. The messages above say which dependency is missing; "
      "scripts/install-deps.sh installs them all.")
  endif()
  message(STATUS "MLBridge: components not built: ${_mlb_missing_text} "
                 "(their tests are skipped; mlbridge-components.json)")
endif()
