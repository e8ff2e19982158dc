# The build manifest: ONE file, <build>/mlbridge-components.json, says what
# this build has and where it is. Read by mlbridge.build_manifest (Python),
# which the tests, the Python package and the benchmarks use to find
# plugins, tools and generated models.
#
#   {"built": {"grpc": true, "onnx": true, ...},        every optional component
#    "not_applicable": {"<component>": "<why this configuration never has it>"},
#    "off_reasons": {"<component>": "<why the build left it out>"},
#    "sanitize": "<MLBRIDGE_SANITIZE>",
#    "cxx_compiler": "<CMAKE_CXX_COMPILER>",   whose sanitizer runtime a stock
#                            host tool preloads to load a sanitized plugin
#    "<component>": {...}}   a section per built component that has files:
#                            llvm_plugins, mlir_plugin, c_tool, tf_aot
#
# A component's CMakeLists.txt records its section with
# mlbridge_manifest(<component> <JSON object>) (generator expressions such
# as $<TARGET_FILE:...> allowed) or, when it switches itself off,
# mlbridge_manifest_off(<component> <reason>); cmake/MLBridgeComponents.cmake
# writes the file last (mlbridge_manifest_write).
function(mlbridge_manifest component json)
  set_property(GLOBAL APPEND_STRING PROPERTY MLBRIDGE_MANIFEST_SECTIONS
               ",\n \"${component}\": ${json}")
endfunction()

function(mlbridge_manifest_off component reason)
  get_property(_sep GLOBAL PROPERTY MLBRIDGE_MANIFEST_OFF SET)
  if(_sep)
    set(_sep ", ")
  else()
    set(_sep "")
  endif()
  set_property(GLOBAL APPEND_STRING PROPERTY MLBRIDGE_MANIFEST_OFF
               "${_sep}\"${component}\": \"${reason}\"")
endfunction()

# Writes <build>/mlbridge-components.json; built_json and na_json are the
# bodies of "built" and "not_applicable".
function(mlbridge_manifest_write built_json na_json)
  get_property(_sections GLOBAL PROPERTY MLBRIDGE_MANIFEST_SECTIONS)
  get_property(_off GLOBAL PROPERTY MLBRIDGE_MANIFEST_OFF)
  file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/mlbridge-components.json CONTENT
"{\"built\": {${built_json}},
 \"not_applicable\": {${na_json}},
 \"off_reasons\": {${_off}},
 \"sanitize\": \"${MLBRIDGE_SANITIZE}\",
 \"cxx_compiler\": \"${CMAKE_CXX_COMPILER}\"${_sections}}
")
endfunction()
