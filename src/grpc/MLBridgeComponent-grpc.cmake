# Loaded by MLBridgeConfig.cmake when the gRPC component was installed:
# finds its dependencies, then defines MLBridge::grpc.
include(CMakeFindDependencyMacro)
find_dependency(Protobuf)
find_dependency(gRPC CONFIG)
include("${CMAKE_CURRENT_LIST_DIR}/MLBridgeGrpcTargets.cmake")
set(MLBridge_grpc_FOUND TRUE)
