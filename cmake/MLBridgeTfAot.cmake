# TensorFlow models compiled ahead of time by XLA into the program
# (docs/tf-aot.md). Needs a Python with TensorFlow 2.15 .. 2.19 (the project
# installs 2.19.0 into .venv-tf: scripts/deps/tensorflow.sh); TensorFlow is
# used at build time only.
#
#   mlbridge_tf_aot_find(<found-var> <reason-var>)
#     Locates the toolchain: MLBRIDGE_TF_PYTHON (cache; default
#     <source>/.venv-tf/bin/python) and sets MLBRIDGE_TF_DIR (the installed
#     tensorflow package). <found-var> is TRUE or FALSE, <reason-var> says
#     why not.
#
#   mlbridge_add_tf_model(<target>
#       SAVED_MODEL <dir>          # a TF2 SavedModel directory
#       NAME <[ns::]Class>         # the C++ class XLA generates
#       [SIGNATURE <key>]          # default serving_default
#       [TAG_SET <tags>]           # default serve
#       [TARGET_CPU <cpu>]         # LLVM CPU name; default: generic
#       [TARGET_TRIPLE <triple>]   # default: this machine's
#       [DEPENDS <files>...]       # files the SavedModel is made from
#       [FULL_RUNTIME])            # also link XLA's Eigen-based kernels
#
#     Adds the static library <target>: at build time it runs XLA's AOT
#     compiler on the signature (tools/tf-aot/tfaot_compile.py, the same call as
#     `saved_model_cli aot_compile_cpu`) and links the generated object with
#     the XLA runtime sources shipped in the TensorFlow wheel. Link <target>
#     and include "<target>.h", which declares
#         const mlbridge::EmbeddedModel &[ns::]<Class>Model();
#     to give to mlbridge::TfModelRunner::create. Every input and output must have a
#     static shape. FULL_RUNTIME is needed only by models that call XLA's
#     runtime kernels (large matrix products, convolutions, sorts, FFT);
#     the build says so when it is missing.

include_guard(GLOBAL)

# Cached: mlbridge_add_tf_model() is called from other directories too.
set(_MLBRIDGE_TF_AOT_DIR ${CMAKE_CURRENT_LIST_DIR} CACHE INTERNAL "")

function(mlbridge_tf_aot_find found_var reason_var)
  set(MLBRIDGE_TF_PYTHON "${PROJECT_SOURCE_DIR}/.venv-tf/bin/python" CACHE
      FILEPATH "Python with TensorFlow 2.15..2.19, for XLA AOT compilation")
  set(${found_var} FALSE PARENT_SCOPE)
  if(NOT EXISTS "${MLBRIDGE_TF_PYTHON}")
    set(${reason_var} "no TensorFlow Python at MLBRIDGE_TF_PYTHON=${MLBRIDGE_TF_PYTHON}; run scripts/install-deps.sh" PARENT_SCOPE)
    return()
  endif()
  # find_spec and metadata do not import TensorFlow (seconds) or print.
  execute_process(
    COMMAND "${MLBRIDGE_TF_PYTHON}" -c
      "import importlib.util as u, importlib.metadata as m, os\ns = u.find_spec('tensorflow')\nv = ''\nfor d in ('tensorflow-cpu', 'tensorflow', 'tf-nightly'):\n    try:\n        v = m.version(d); break\n    except m.PackageNotFoundError:\n        pass\nprint(os.path.dirname(s.origin) if s else '', v, sep=';', end='')"
    OUTPUT_VARIABLE _out RESULT_VARIABLE _rc ERROR_QUIET)
  list(LENGTH _out _n)
  if(NOT _rc EQUAL 0 OR NOT _n EQUAL 2)
    set(${reason_var} "${MLBRIDGE_TF_PYTHON} cannot find tensorflow" PARENT_SCOPE)
    return()
  endif()
  list(GET _out 0 _dir)
  list(GET _out 1 _version)
  if(_dir STREQUAL "")
    set(${reason_var} "${MLBRIDGE_TF_PYTHON} has no tensorflow package" PARENT_SCOPE)
    return()
  endif()
  if(_version VERSION_LESS 2.15 OR _version VERSION_GREATER_EQUAL 2.20)
    # From 2.20 on tfcompile emits thunk-mode code whose header needs
    # Abseil's compiled libraries, which the wheel does not ship.
    set(${reason_var} "TensorFlow ${_version} at ${_dir} is not supported for XLA AOT (use 2.15..2.19; the project pins 2.19.0)" PARENT_SCOPE)
    return()
  endif()
  foreach(_f xla_aot_runtime_src/tensorflow/compiler/tf2xla/xla_compiled_cpu_function.cc
             include/tensorflow/compiler/tf2xla/xla_compiled_cpu_function.h)
    if(NOT EXISTS "${_dir}/${_f}")
      set(${reason_var} "TensorFlow at ${_dir} lacks ${_f}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  file(GLOB _tfcompile "${_dir}/python/_pywrap_tfcompile*")
  if(NOT _tfcompile)
    set(${reason_var} "TensorFlow at ${_dir} has no XLA AOT compiler (_pywrap_tfcompile)" PARENT_SCOPE)
    return()
  endif()
  set(MLBRIDGE_TF_DIR "${_dir}" CACHE INTERNAL "")
  set(MLBRIDGE_TF_VERSION "${_version}" CACHE INTERNAL "")
  set(${found_var} TRUE PARENT_SCOPE)
  set(${reason_var} "TensorFlow ${_version}" PARENT_SCOPE)
endfunction()

# XLA's runtime, from the sources the wheel ships: the core (what a
# compiled function needs to run, under a minute to build) and the kernels
# (Eigen matrix products, convolutions, FFT, sort: many minutes), built only
# for models that use them.
function(_mlbridge_tf_xla_runtime_targets)
  if(TARGET mlbridge_tf_xla_runtime)
    return()
  endif()
  set(_src "${MLBRIDGE_TF_DIR}/xla_aot_runtime_src")
  file(GLOB_RECURSE _all "${_src}/*.cc")
  set(_kernels_re "(matmul|conv2d|conv3d|convolution|fft|contraction|topk|key_value_sort|runtime_pow|runtime_fp16|rng_state|dot_lib|sort_lib)")
  set(_core ${_all})
  list(FILTER _core EXCLUDE REGEX "${_kernels_re}")
  set(_kernels ${_all})
  list(FILTER _kernels INCLUDE REGEX "${_kernels_re}")

  find_package(Threads REQUIRED)
  foreach(_part core kernels)
    if(_part STREQUAL "core")
      set(_name mlbridge_tf_xla_runtime)
    else()
      set(_name mlbridge_tf_xla_runtime_kernels)
    endif()
    # EXCLUDE_FROM_ALL: built only when a model links it.
    add_library(${_name} STATIC EXCLUDE_FROM_ALL ${_${_part}})
    # PRIVATE: TensorFlow's include tree (its own Abseil, protobuf, Eigen)
    # must not leak into the targets that link a model.
    target_include_directories(${_name} SYSTEM PRIVATE "${MLBRIDGE_TF_DIR}/include")
    target_compile_features(${_name} PUBLIC cxx_std_17)
    # Third-party code: its warnings are not ours.
    target_compile_options(${_name} PRIVATE -w)
    target_link_libraries(${_name} PUBLIC Threads::Threads)
    set_target_properties(${_name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  endforeach()
  target_link_libraries(mlbridge_tf_xla_runtime_kernels PUBLIC mlbridge_tf_xla_runtime)
endfunction()

function(mlbridge_add_tf_model target)
  cmake_parse_arguments(PARSE_ARGV 1 A "FULL_RUNTIME"
    "SAVED_MODEL;NAME;SIGNATURE;TAG_SET;TARGET_CPU;TARGET_TRIPLE" "DEPENDS")
  if(NOT A_SAVED_MODEL OR NOT A_NAME)
    message(FATAL_ERROR "mlbridge_add_tf_model(${target}): SAVED_MODEL and NAME are required")
  endif()
  if(NOT A_NAME MATCHES "^([A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "mlbridge_add_tf_model(${target}): NAME '${A_NAME}' is not a C++ class name")
  endif()
  if(NOT MLBRIDGE_TF_DIR)
    mlbridge_tf_aot_find(_found _why)
    if(NOT _found)
      message(FATAL_ERROR "mlbridge_add_tf_model(${target}): ${_why}")
    endif()
  endif()
  if(NOT TARGET mlbridge_tf)
    message(FATAL_ERROR "mlbridge_add_tf_model(${target}): the TF-AOT runner (mlbridge_tf) is not built; set MLBRIDGE_ENABLE_TF_AOT=ON")
  endif()
  if(NOT A_SIGNATURE)
    set(A_SIGNATURE serving_default)
  endif()
  if(NOT A_TAG_SET)
    set(A_TAG_SET serve)
  endif()
  if(NOT A_TARGET_TRIPLE)
    if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
      set(A_TARGET_TRIPLE x86_64-pc-linux-gnu)
    elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
      set(A_TARGET_TRIPLE aarch64-unknown-linux-gnu)
    else()
      message(FATAL_ERROR "mlbridge_add_tf_model(${target}): give TARGET_TRIPLE for ${CMAKE_SYSTEM_PROCESSOR}")
    endif()
  endif()
  get_filename_component(_saved "${A_SAVED_MODEL}" ABSOLUTE)
  _mlbridge_tf_xla_runtime_targets()

  # Files of tfcompile's output are named <target>_xla* so that they never
  # shadow the public header <target>.h.
  string(MAKE_C_IDENTIFIER "${target}_xla" _prefix)
  set(_gen "${CMAKE_CURRENT_BINARY_DIR}/tfaot/${target}")
  set(_inc "${CMAKE_CURRENT_BINARY_DIR}/tfaot/include/${target}")
  set(_archive "${_gen}/lib${_prefix}.a")
  set(_adapter "${_gen}/${_prefix}_mlbridge.cpp")
  set(_class_header "${_gen}/${_prefix}.h")

  # Accessor: [ns::]<Class>Model().
  string(REGEX REPLACE "^(.*::)?([^:]+)$" "\\2" _class "${A_NAME}")
  string(REGEX REPLACE "^(.*)::[^:]+$" "\\1" _ns "${A_NAME}")
  if(_ns STREQUAL A_NAME)
    set(_ns "")
  endif()
  if(_ns)
    set(_accessor "${_ns}::${_class}Model")
    set(_decl "namespace ${_ns} {\nconst ::mlbridge::EmbeddedModel &${_class}Model();\n} // namespace ${_ns}")
  else()
    set(_accessor "${_class}Model")
    set(_decl "const ::mlbridge::EmbeddedModel &${_class}Model();")
  endif()
  string(MAKE_C_IDENTIFIER "MLBRIDGE_TF_MODEL_${target}_H" _guard)
  string(TOUPPER "${_guard}" _guard)
  file(GENERATE OUTPUT "${_inc}/${target}.h" CONTENT
"// Generated by mlbridge_add_tf_model(${target}). DO NOT EDIT.
// The TensorFlow model ${_saved}
// (signature '${A_SIGNATURE}'), compiled by XLA ahead of time.
#ifndef ${_guard}
#define ${_guard}
#include \"mlbridge/tf_model_runner.h\"
${_decl}
#endif
")

  set(_full "")
  if(A_FULL_RUNTIME)
    set(_full --full-runtime)
  endif()
  # The SavedModel's files, so that a new export recompiles. A SavedModel
  # made by the build itself does not exist yet: give its outputs as DEPENDS.
  set(_saved_files "")
  if(IS_DIRECTORY "${_saved}")
    file(GLOB_RECURSE _saved_files CONFIGURE_DEPENDS "${_saved}/*")
  endif()
  add_custom_command(
    OUTPUT "${_archive}" "${_adapter}" "${_class_header}"
    COMMAND "${MLBRIDGE_TF_PYTHON}" "${_MLBRIDGE_TF_AOT_DIR}/../tools/tf-aot/tfaot_compile.py"
            --saved-model "${_saved}" --tag-set "${A_TAG_SET}"
            --signature "${A_SIGNATURE}" --cpp-class "${A_NAME}"
            --accessor "${_accessor}" --model-name "${target}"
            --out-dir "${_gen}" --prefix "${_prefix}"
            --target-triple "${A_TARGET_TRIPLE}" --target-cpu "${A_TARGET_CPU}"
            --ar "${CMAKE_AR}" --nm "${CMAKE_NM}" ${_full}
    DEPENDS "${_MLBRIDGE_TF_AOT_DIR}/../tools/tf-aot/tfaot_compile.py" ${_saved_files}
            ${A_DEPENDS}
    COMMENT "XLA AOT: compiling TensorFlow model ${target} (${A_NAME})"
    VERBATIM)

  add_library(${target} STATIC "${_adapter}")
  # The generated code is TensorFlow's: its headers are system headers and
  # its C++ may throw (the adapter catches everything), whatever the
  # including project's flags (e.g. LLVM's -fno-exceptions).
  target_include_directories(${target} SYSTEM PRIVATE "${_gen}" "${MLBRIDGE_TF_DIR}/include")
  target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${_inc}>")
  set_source_files_properties("${_adapter}" PROPERTIES COMPILE_OPTIONS "-fexceptions;-w")
  target_link_libraries(${target} PUBLIC mlbridge_tf "${_archive}" mlbridge_tf_xla_runtime)
  if(A_FULL_RUNTIME)
    target_link_libraries(${target} PUBLIC mlbridge_tf_xla_runtime_kernels)
  endif()
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
