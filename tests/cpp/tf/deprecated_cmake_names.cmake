# cmake -DMLBRIDGE_SOURCE_DIR=<source> -P deprecated_cmake_names.cmake
# The 0.1 names of the TF-AOT build (cmake/MLBridgeTFAOT.cmake,
# mlbridge_add_tf_aot_model) still work, each with a deprecation message:
# the old function forwards to mlbridge_add_tf_model, whose own argument
# check then stops the script (ctest matches all three messages).
include(${MLBRIDGE_SOURCE_DIR}/cmake/MLBridgeTFAOT.cmake)
mlbridge_add_tf_aot_model(old_name)
