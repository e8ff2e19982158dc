# mlbridge_add_compiled_model(<target> MODEL <file.onnx> NAME <Class>
#                             [NAMESPACE <ns>] [DIMS <name>=<size>...]
#                             [OUTPUT_DIR <dir>] [BASENAME <base>]
#                             [EXCLUDE_FROM_ALL])
#
# Compiles an ONNX model into C++ at build time and builds it as the static
# library <target>: <BASENAME>.h / <BASENAME>.cpp (BASENAME defaults to
# <Class>) are written to OUTPUT_DIR (default: <binary dir>/<target>), which
# becomes a public include directory of <target>. The code needs only the
# C++ standard library and mlbridge/compiled_model.h (header-only; its
# include directory is added too), so linking <target> adds no runtime
# dependency. The model is regenerated when the .onnx file or the compiler
# changes.
#
#   mlbridge_add_compiled_model(inline_policy MODEL models/inline.onnx
#                               NAME InlinePolicy NAMESPACE mypass)
#   target_link_libraries(my_pass PRIVATE inline_policy mlbridge)
#   // #include "InlinePolicy.h"
#   // auto R = mlbridge::CompiledModelRunner::create<mypass::InlinePolicy>();
#
# DIMS gives sizes to symbolic input dimensions (e.g. DIMS batch=1).
# EXCLUDE_FROM_ALL builds <target> only when something needs it.
# The generator is the in-tree target mlbridge-model-compiler, or the
# program in MLBRIDGE_MODEL_COMPILER (found next to an installed MLBridge).

# Where mlbridge/compiled_model.h is: the source tree (cmake/../include) or
# an installed package (lib/cmake/MLBridge/../../../include).
if(EXISTS "${CMAKE_CURRENT_LIST_DIR}/../include/mlbridge/compiled_model.h")
  get_filename_component(_mlbridge_cm_include "${CMAKE_CURRENT_LIST_DIR}/../include" ABSOLUTE)
else()
  get_filename_component(_mlbridge_cm_include "${CMAKE_CURRENT_LIST_DIR}/../../../include" ABSOLUTE)
endif()
set_property(GLOBAL PROPERTY MLBRIDGE_COMPILED_MODEL_INCLUDE_DIR "${_mlbridge_cm_include}")
get_filename_component(_mlbridge_cm_bin "${CMAKE_CURRENT_LIST_DIR}/../../../bin" ABSOLUTE)
set_property(GLOBAL PROPERTY MLBRIDGE_COMPILED_MODEL_BIN_HINT "${_mlbridge_cm_bin}")
unset(_mlbridge_cm_include)
unset(_mlbridge_cm_bin)

function(mlbridge_add_compiled_model target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "EXCLUDE_FROM_ALL"
    "MODEL;NAME;NAMESPACE;OUTPUT_DIR;BASENAME" "DIMS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "mlbridge_add_compiled_model(${target}): unknown "
                        "arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_MODEL OR NOT ARG_NAME)
    message(FATAL_ERROR "mlbridge_add_compiled_model(${target}): MODEL and "
                        "NAME are required")
  endif()
  get_filename_component(model "${ARG_MODEL}" ABSOLUTE
                         BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${model}")
    message(FATAL_ERROR "mlbridge_add_compiled_model(${target}): no model "
                        "file ${model}")
  endif()
  set(outdir "${ARG_OUTPUT_DIR}")
  if(NOT outdir)
    set(outdir "${CMAKE_CURRENT_BINARY_DIR}/${target}")
  endif()
  set(base "${ARG_BASENAME}")
  if(NOT base)
    set(base "${ARG_NAME}")
  endif()

  if(TARGET mlbridge-model-compiler)
    set(tool "$<TARGET_FILE:mlbridge-model-compiler>")
    set(tool_dep mlbridge-model-compiler)
  else()
    get_property(hint GLOBAL PROPERTY MLBRIDGE_COMPILED_MODEL_BIN_HINT)
    find_program(MLBRIDGE_MODEL_COMPILER mlbridge-model-compiler HINTS "${hint}")
    if(NOT MLBRIDGE_MODEL_COMPILER)
      message(FATAL_ERROR "mlbridge_add_compiled_model(${target}): "
                          "mlbridge-model-compiler not found; set "
                          "MLBRIDGE_MODEL_COMPILER to its path")
    endif()
    set(tool "${MLBRIDGE_MODEL_COMPILER}")
    set(tool_dep "${MLBRIDGE_MODEL_COMPILER}")
  endif()

  set(args "${model}" --name "${ARG_NAME}" --output-dir "${outdir}"
           --basename "${base}" --quiet)
  if(ARG_NAMESPACE)
    list(APPEND args --namespace "${ARG_NAMESPACE}")
  endif()
  foreach(dim IN LISTS ARG_DIMS)
    list(APPEND args --dim "${dim}")
  endforeach()

  add_custom_command(
    OUTPUT "${outdir}/${base}.h" "${outdir}/${base}.cpp"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${outdir}"
    COMMAND ${tool} ${args}
    DEPENDS "${model}" ${tool_dep}
    COMMENT "Compiling ONNX model ${ARG_MODEL} into C++ class ${ARG_NAME}"
    VERBATIM)

  get_property(include_dir GLOBAL PROPERTY MLBRIDGE_COMPILED_MODEL_INCLUDE_DIR)
  set(exclude "")
  if(ARG_EXCLUDE_FROM_ALL)
    set(exclude EXCLUDE_FROM_ALL)
  endif()
  add_library(${target} STATIC ${exclude} "${outdir}/${base}.cpp" "${outdir}/${base}.h")
  target_include_directories(${target} PUBLIC
    "$<BUILD_INTERFACE:${outdir}>" "$<BUILD_INTERFACE:${include_dir}>")
  target_compile_features(${target} PUBLIC cxx_std_17)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
