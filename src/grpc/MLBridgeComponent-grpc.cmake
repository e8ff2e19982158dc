# Component grpc of find_package(MLBridge): finds its dependencies, then
# defines MLBridge::grpc (and MLBridge::proto).
find_package(Protobuf QUIET)
find_package(gRPC CONFIG QUIET)
if(Protobuf_FOUND AND gRPC_FOUND)
  include("${CMAKE_CURRENT_LIST_DIR}/MLBridgeGrpcTargets.cmake")
  set(MLBridge_grpc_FOUND TRUE)
else()
  set(MLBridge_grpc_FOUND FALSE)
  set(MLBridge_grpc_NOT_FOUND_MESSAGE
      "gRPC or Protobuf not found (Debian: libgrpc++-dev, libprotobuf-dev)")
endif()
