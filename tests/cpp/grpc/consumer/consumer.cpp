// Uses the installed MLBridge::grpc: a training-mode runner listens, an
// inference-mode runner fails cleanly against an absent server, and a pipe
// runner takes the Protobuf SerDes through its options.
#include "mlbridge/grpc_model_runner.h"
#include "mlbridge/pipe_model_runner.h"
#include "mlbridge/protobuf_serdes.h"

#include <cstdio>

int main() {
  using namespace mlbridge;
  GrpcOptions T;
  T.Mode = GrpcMode::Training;
  T.LingerTimeout = std::chrono::milliseconds(0);
  auto Server = GrpcModelRunner::create("127.0.0.1:0", {}, std::nullopt, T);
  if (!Server || (*Server)->port() <= 0)
    return 1;
  GrpcOptions I;
  I.ConnectTimeout = std::chrono::milliseconds(200);
  auto Client = GrpcModelRunner::create("127.0.0.1:1", {}, std::nullopt, I);
  if (!Client)
    return 2;
  (*Client)->setFeature("x", 1);
  if ((*Client)->evaluateOr<int>(-7) != -7)
    return 3;
  PipeOptions P;
  P.Format = SerDesKind::Protobuf;
  P.ProtobufSerDes = createProtobufSerDes;
  if (!PipeModelRunner::create("/nonexistent/mlb-channel", {}, std::nullopt, P))
    return 4;
  std::printf("grpc consumer ok\n");
  return 0;
}
