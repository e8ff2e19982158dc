# The 0.1 name of cmake/MLBridgeTfAot.cmake (acronyms are written Tf, Aot
# since then); removed in the release after 0.2.
message(DEPRECATION "cmake/MLBridgeTFAOT.cmake is deprecated; include "
                    "cmake/MLBridgeTfAot.cmake")
include(${CMAKE_CURRENT_LIST_DIR}/MLBridgeTfAot.cmake)
