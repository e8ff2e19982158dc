# SerDes / tensor-spec / JSON unit tests (GoogleTest). Paths are relative to
# tests/ (tests/CMakeLists.txt prepends its directory). The tests include
# internal headers (support/json.h, ...), so the executable needs
# ${PROJECT_SOURCE_DIR}/src as an include directory; they also include
# cpp/serdes_test_util.h, found next to them.
set(MLBRIDGE_SERDES_TEST_SOURCES
  cpp/test_tensor_spec.cpp
  cpp/test_json_value.cpp
  cpp/test_bitstream_serdes.cpp
  cpp/test_json_serdes.cpp
  cpp/test_serdes_contract.cpp
)
