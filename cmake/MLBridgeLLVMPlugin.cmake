# mlbridge_add_llvm_pass_plugin(<target> LLVM <19|22> SOURCES <files...>
#                               [OUTPUT_NAME <file name without .so>]
#                               [MODEL <file.onnx> [MODEL_CLASS <Class>]
#                                      [MODEL_NAMESPACE <ns>] [MODEL_DIMS <n>=<size>...]]
#                               [LIBS <libraries...>])
#
# An LLVM pass plugin (a shared module for opt -load-pass-plugin, clang
# -fpass-plugin, lld --load-pass-plugin) for LLVM <19|22>, the way every
# MLBridge plugin is built:
#  * LLVM's headers and -D flags of that version (from llvm-config-<V>, or
#    MLBRIDGE_LLVM<V>_CONFIG), no exceptions, no RTTI (MLBRIDGE_LLVM_PLUGIN_RTTI
#    overrides: -frtti for UBSan builds), hidden visibility;
#  * the plugin entry of the kit (MLBridge::llvm<V>: mlbridge/llvm/PluginEntry.h,
#    the plugin defines mlbridge::plugins::passPluginInfo()), which refuses
#    a host of the other LLVM version with one clear message;
#  * that version's libLLVM.so as DT_NEEDED (the one opt/clang has loaded;
#    it versions the plugin's LLVM references, PluginEntry.h says why);
#  * the shipped version script: llvmGetPassPluginInfo is the only symbol
#    exported, so the plugin's copy of mlbridge never binds to another's;
#  * MODEL: the ONNX model compiled to C++ (mlbridge_add_compiled_model, no
#    runtime dependency) as class <ns>::<Class> in "<Class>.h" (defaults:
#    <target>Model, namespace mlbridge_model) and MLBRIDGE_PLUGIN_HAS_MODEL=1;
#  * LIBS: more libraries, e.g. MLBridge::onnx for the ONNX Runtime runner
#    (a plugin links and loads only the runners it names).
# In the MLBridge build the kit is the target mlbridge_llvm<V>; installed,
# find_package(MLBridge COMPONENTS llvm19 llvm22) provides it and this function.
#
#   find_package(MLBridge CONFIG REQUIRED COMPONENTS llvm19)
#   mlbridge_add_llvm_pass_plugin(MyPass LLVM 19 SOURCES MyPass.cpp)
include_guard(GLOBAL)

# mlbridge_llvm_config(<V>): the settings of LLVM <V> in the global
# properties MLBRIDGE_LLVM<V>_{INCLUDE_DIRS,DEFINITIONS,LIBRARY,BINDIR,VERSION}
# (a build that has them already, e.g. from find_package(LLVM), sets them
# first). Sets MLBRIDGE_LLVM<V>_FOUND in the caller's scope.
function(mlbridge_llvm_config v)
  get_property(_have GLOBAL PROPERTY MLBRIDGE_LLVM${v}_LIBRARY SET)
  if(_have)
    set(MLBRIDGE_LLVM${v}_FOUND TRUE PARENT_SCOPE)
    return()
  endif()
  find_program(MLBRIDGE_LLVM${v}_CONFIG NAMES llvm-config-${v}
               HINTS /usr/lib/llvm-${v}/bin DOC "llvm-config of LLVM ${v}")
  if(NOT MLBRIDGE_LLVM${v}_CONFIG)
    set(MLBRIDGE_LLVM${v}_FOUND FALSE PARENT_SCOPE)
    return()
  endif()
  foreach(_q version includedir libdir bindir cppflags)
    execute_process(COMMAND ${MLBRIDGE_LLVM${v}_CONFIG} --${_q}
                    OUTPUT_VARIABLE _${_q} OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0)
      set(MLBRIDGE_LLVM${v}_FOUND FALSE PARENT_SCOPE)
      return()
    endif()
  endforeach()
  if(NOT _version MATCHES "^${v}\\.")
    message(WARNING "MLBridge: ${MLBRIDGE_LLVM${v}_CONFIG} reports LLVM ${_version}, not ${v}")
    set(MLBRIDGE_LLVM${v}_FOUND FALSE PARENT_SCOPE)
    return()
  endif()
  separate_arguments(_defs UNIX_COMMAND "${_cppflags}")
  list(FILTER _defs INCLUDE REGEX "^-D")
  list(TRANSFORM _defs REPLACE "^-D" "")
  set_property(GLOBAL PROPERTY MLBRIDGE_LLVM${v}_INCLUDE_DIRS "${_includedir}")
  set_property(GLOBAL PROPERTY MLBRIDGE_LLVM${v}_DEFINITIONS "${_defs}")
  set_property(GLOBAL PROPERTY MLBRIDGE_LLVM${v}_LIBRARY "${_libdir}/libLLVM.so")
  set_property(GLOBAL PROPERTY MLBRIDGE_LLVM${v}_BINDIR "${_bindir}")
  set_property(GLOBAL PROPERTY MLBRIDGE_LLVM${v}_VERSION "${_version}")
  set(MLBRIDGE_LLVM${v}_FOUND TRUE PARENT_SCOPE)
endfunction()

# mlbridge_llvm_compile_settings(<target> <V>): the compile settings of any
# code built into a plugin of LLVM <V> (the kit itself, a plugin's own
# static libraries).
function(mlbridge_llvm_compile_settings target v)
  mlbridge_llvm_config(${v})
  if(NOT MLBRIDGE_LLVM${v}_FOUND)
    message(FATAL_ERROR "${target}: LLVM ${v} not found (llvm-config-${v}; Debian: "
                        "llvm-${v}-dev); set MLBRIDGE_LLVM${v}_CONFIG")
  endif()
  get_property(_inc GLOBAL PROPERTY MLBRIDGE_LLVM${v}_INCLUDE_DIRS)
  get_property(_defs GLOBAL PROPERTY MLBRIDGE_LLVM${v}_DEFINITIONS)
  target_include_directories(${target} SYSTEM PRIVATE ${_inc})
  # libLLVM is a release build: the same view of its headers in every build type.
  target_compile_definitions(${target} PRIVATE ${_defs} NDEBUG)
  if(NOT DEFINED MLBRIDGE_LLVM_PLUGIN_RTTI)
    set(MLBRIDGE_LLVM_PLUGIN_RTTI -fno-rtti)
  endif()
  target_compile_options(${target} PRIVATE -fno-exceptions ${MLBRIDGE_LLVM_PLUGIN_RTTI}
                         -fvisibility=hidden -fvisibility-inlines-hidden)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

function(mlbridge_add_llvm_pass_plugin target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG ""
    "LLVM;OUTPUT_NAME;MODEL;MODEL_CLASS;MODEL_NAMESPACE" "SOURCES;LIBS;MODEL_DIMS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "mlbridge_add_llvm_pass_plugin(${target}): unknown arguments "
                        "${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_LLVM MATCHES "^(19|22)$" OR NOT ARG_SOURCES)
    message(FATAL_ERROR "mlbridge_add_llvm_pass_plugin(${target}): LLVM 19|22 and "
                        "SOURCES are required")
  endif()
  set(v ${ARG_LLVM})
  if(TARGET mlbridge_llvm${v})
    set(_kit mlbridge_llvm${v})
  elseif(TARGET MLBridge::llvm${v})
    set(_kit MLBridge::llvm${v})
  else()
    message(FATAL_ERROR "mlbridge_add_llvm_pass_plugin(${target}): no LLVM ${v} kit; "
                        "find_package(MLBridge CONFIG REQUIRED COMPONENTS llvm${v})")
  endif()

  add_library(${target} MODULE ${ARG_SOURCES})
  mlbridge_llvm_compile_settings(${target} ${v})
  if(ARG_MODEL)
    if(NOT COMMAND mlbridge_add_compiled_model)
      include(${CMAKE_CURRENT_FUNCTION_LIST_DIR}/MLBridgeCompiledModel.cmake)
    endif()
    if(NOT ARG_MODEL_CLASS)
      set(ARG_MODEL_CLASS ${target}Model)
    endif()
    if(NOT ARG_MODEL_NAMESPACE)
      set(ARG_MODEL_NAMESPACE mlbridge_model)
    endif()
    set(_dims)
    if(ARG_MODEL_DIMS)
      set(_dims DIMS ${ARG_MODEL_DIMS})
    endif()
    mlbridge_add_compiled_model(${target}_model MODEL ${ARG_MODEL}
      NAME ${ARG_MODEL_CLASS} NAMESPACE ${ARG_MODEL_NAMESPACE} ${_dims})
    target_link_libraries(${target} PRIVATE ${target}_model)
    target_compile_definitions(${target} PRIVATE MLBRIDGE_PLUGIN_HAS_MODEL=1)
  endif()
  # LIBS before libLLVM.so: after it, an archive's copies of libstdc++
  # templates that libLLVM also has would land in the dynamic symbol table.
  get_property(_libllvm GLOBAL PROPERTY MLBRIDGE_LLVM${v}_LIBRARY)
  target_link_libraries(${target} PRIVATE ${ARG_LIBS} ${_kit} ${_libllvm})
  # Only the entry exported; --exclude-libs also hides what the version
  # script leaves visible (archive copies of libstdc++ templates that
  # libLLVM.so refers to).
  set(_exports ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/MLBridgePlugin.exports)
  target_link_options(${target} PRIVATE -Wl,--version-script=${_exports}
                      -Wl,--exclude-libs,ALL)
  set_target_properties(${target} PROPERTIES PREFIX "" LINK_DEPENDS ${_exports})
  if(ARG_OUTPUT_NAME)
    set_target_properties(${target} PROPERTIES OUTPUT_NAME ${ARG_OUTPUT_NAME})
  endif()
endfunction()
