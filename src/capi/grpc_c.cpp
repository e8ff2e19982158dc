// C API of the gRPC runner (part of MLBridge::grpc): creation only; the
// runner is then used through the common C API (capi/mlbridge_c.cpp).
#include "capi/capi_internal.h"

#include "mlbridge/c/grpc.h"
#include "mlbridge/grpc_model_runner.h"
#include "mlbridge/protobuf_serdes.h"

using namespace mlbridge;
using capi::fail;
using capi::finish;

namespace {
GrpcModelRunner *asGrpc(const mlb_runner *R) {
  return R && R->Runner ? dynamic_cast<GrpcModelRunner *>(R->Runner.get())
                        : nullptr;
}
} // namespace

extern "C" {

void mlb_grpc_options_init(mlb_grpc_options *O) {
  if (!O)
    return;
  GrpcOptions D;
  O->mode = MLB_GRPC_INFERENCE;
  O->call_timeout_ms = static_cast<int>(D.CallTimeout.count());
  O->connect_timeout_ms = static_cast<int>(D.ConnectTimeout.count());
  O->max_message_bytes = D.MaxMessageBytes;
  O->use_tls = 0;
  O->root_cert_file = nullptr;
  O->cert_file = nullptr;
  O->key_file = nullptr;
  O->server_name = nullptr;
  O->diagnostics_to_stderr = 0;
}

mlb_status mlb_grpc_runner_create(const char *Address,
                                  const mlb_grpc_options *Opts,
                                  mlb_runner **Out) {
  MLB_CHECK_ARG(Out, "output handle");
  *Out = nullptr;
  MLB_CHECK_ARG(Address, "address");
  const mlb_grpc_options C = capi::optionsOrDefaults(Opts, mlb_grpc_options_init);
  if (C.mode != MLB_GRPC_INFERENCE && C.mode != MLB_GRPC_TRAINING)
    return fail(ErrorCode::InvalidArgument, "unknown gRPC mode");
  GrpcOptions O;
  O.Mode = C.mode == MLB_GRPC_TRAINING ? GrpcMode::Training
                                       : GrpcMode::Inference;
  O.CallTimeout = std::chrono::milliseconds(C.call_timeout_ms);
  O.ConnectTimeout = std::chrono::milliseconds(C.connect_timeout_ms);
  O.MaxMessageBytes = C.max_message_bytes;
  O.UseTls = C.use_tls != 0;
  auto Str = [](const char *S) { return S ? std::string(S) : std::string(); };
  O.Tls.RootCertFile = Str(C.root_cert_file);
  O.Tls.CertFile = Str(C.cert_file);
  O.Tls.KeyFile = Str(C.key_file);
  O.Tls.ServerName = Str(C.server_name);
  if (C.diagnostics_to_stderr)
    O.Diagnostics = stderrDiagnostics();
  return capi::giveRunner(
      GrpcModelRunner::create(Address, {}, std::nullopt, std::move(O)), Out);
}

mlb_status mlb_grpc_runner_port(const mlb_runner *R, int *Port) {
  MLB_CHECK_ARG(Port, "port pointer");
  GrpcModelRunner *G = asGrpc(R);
  if (!G)
    return fail(ErrorCode::InvalidArgument, "not a gRPC runner");
  *Port = G->port();
  return MLB_OK;
}

mlb_status mlb_grpc_runner_end_session(mlb_runner *R) {
  GrpcModelRunner *G = asGrpc(R);
  if (!G)
    return fail(ErrorCode::InvalidArgument, "not a gRPC runner");
  return finish(G->endSession());
}

mlb_status mlb_grpc_runner_from_settings(const mlb_runner_settings *S,
                                         mlb_runner **Out) {
  MLB_CHECK_ARG(S, "settings");
  mlb_grpc_options O;
  mlb_grpc_options_init(&O);
  O.call_timeout_ms = S->timeout_ms;
  O.connect_timeout_ms = S->timeout_ms;
  return mlb_grpc_runner_create(S->server, &O, Out);
}

const mlb_serdes_factory *mlb_protobuf_serdes(void) {
  static constexpr mlb_serdes_factory Protobuf{&createProtobufSerDes};
  return &Protobuf;
}

} // extern "C"
