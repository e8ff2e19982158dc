// Compiled with -fno-exceptions -fno-rtti -Wall -Wextra -Werror by ctest:
// the gRPC component's public headers must build in LLVM-style code, and
// need no gRPC or protobuf headers.
#include "mlbridge/c/grpc.h"
#include "mlbridge/grpc_model_runner.h"
#include "mlbridge/protobuf_serdes.h"

#include <memory>

int64_t useGrpc() {
  mlbridge::GrpcOptions O;
  O.Mode = mlbridge::GrpcMode::Training;
  O.UseTls = true;
  O.Tls.CertFile = "cert.pem";
  O.UserMessages = mlbridge::UserMessageSchema();
  auto R = mlbridge::GrpcModelRunner::create("127.0.0.1:0", {}, std::nullopt, O);
  if (!R)
    return -1;
  (*R)->setFeature("x", 1.0f);
  (void)(*R)->port();
  (void)(*R)->endSession();
  std::unique_ptr<mlbridge::SerDes> S = mlbridge::createProtobufSerDes();
  (void)S;
  return (*R)->evaluateOr<int64_t>(0);
}
