//===- mlbridge/grpc_model_runner.h - A model over gRPC ---------*- C++ -*-===//
//
// GrpcModelRunner reaches a model over gRPC (proto/mlbridge.proto), on one
// machine or across machines, in either direction of the paper:
//
//  * GrpcMode::Inference (default): the model hosts mlbridge.v1.ModelService
//    (Python: mlbridge.grpc.GrpcCompilerInterface) and this runner is a
//    client: each evaluate() is one Evaluate call.
//
//      auto R = GrpcModelRunner::create("127.0.0.1:50051");
//      (*R)->setFeature("callee_size", 42);
//      int64_t Decision = (*R)->evaluateOr<int64_t>(0);
//
//  * GrpcMode::Training: this runner hosts mlbridge.v1.CompilerService and
//    the Python trainer drives it (GetObservation, SendAction, EndEpisode).
//    The server starts in create() and stops in the destructor, both
//    without blocking on anything but bounded deadlines (no stdin).
//
// No user .proto is needed: features and advice travel as generic named
// tensors. A user-defined service can be called instead
// (GrpcOptions::UserMessages): features then fill the request message by
// field name through protobuf reflection.
//
// Time bounds (defaults in GrpcOptions): reaching an absent server retries
// with exponential backoff and jitter within ConnectTimeout; each call has
// the deadline CallTimeout. Every non-OK gRPC status becomes an error
// Status naming the code; a failed call never yields a stale or default
// reply. After a transport failure (server gone, deadline passed, garbage
// on the port) the runner is unavailable, as every ModelRunner is. A
// model-reported error, or advice of the wrong type, leaves it usable.
//
// This header needs no gRPC or protobuf headers and compiles with
// -fno-exceptions -fno-rtti. Link MLBridge::grpc.
//
// Threads: one thread at a time per runner; several runners (one per
// compiler thread or process) may talk to one model server concurrently.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_GRPC_MODEL_RUNNER_H
#define MLBRIDGE_GRPC_MODEL_RUNNER_H

#include "mlbridge/model_runner.h"
#include "mlbridge/runner_settings.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlbridge {

enum class GrpcMode {
  Inference, ///< The model serves, this runner calls (ModelService).
  Training,  ///< This runner serves, the trainer calls (CompilerService).
};

/// PEM files for TLS. Client (inference mode): RootCertFile verifies the
/// server; CertFile + KeyFile add a client certificate (mutual TLS).
/// Server (training mode): CertFile + KeyFile are required; RootCertFile
/// with RequireClientCert demands client certificates.
struct GrpcTlsFiles {
  std::string RootCertFile;
  std::string CertFile;
  std::string KeyFile;
  /// Server: require and verify a client certificate.
  bool RequireClientCert = false;
  /// Client: the name the server certificate must carry, when it differs
  /// from the host in the address (e.g. "localhost" for "127.0.0.1:5000").
  std::string ServerName;
};

/// A user-defined service (inference mode): the request message is filled
/// from the features by field name and the advice read from one field of
/// the reply, through protobuf reflection. Field paths use '.' for nested
/// messages and "[i]" for elements of repeated message fields, e.g.
/// "loop.trip_count" or "blocks[2].size". A vector feature fills a repeated
/// scalar field; an unknown name is an InvalidArgument error naming the
/// fields the message has.
struct UserMessageSchema {
  /// A .proto file loaded at run time; empty to use the descriptors of
  /// generated code linked into the program.
  std::string ProtoFile;
  /// Directories searched for ProtoFile and its imports (default: the
  /// directory of ProtoFile).
  std::vector<std::string> ImportPaths;
  /// The full gRPC method, "/package.Service/Method".
  std::string Method;
  /// Full names of the request and reply messages ("package.Request").
  std::string RequestType;
  std::string ReplyType;
  /// Path of the advice field in the reply.
  std::string AdviceField;
};

struct GrpcOptions : RunnerOptions {
  GrpcMode Mode = GrpcMode::Inference;
  /// Inference: the deadline of each call. Training: how long evaluate()
  /// waits for the trainer's action.
  std::chrono::milliseconds CallTimeout{30000};
  /// Inference: the total time spent reaching an absent or unreachable
  /// server (retries with exponential backoff from InitialBackoff up to
  /// MaxBackoff, each with random jitter) before the first call fails.
  std::chrono::milliseconds ConnectTimeout{5000};
  std::chrono::milliseconds InitialBackoff{20};
  std::chrono::milliseconds MaxBackoff{1000};
  /// Largest message either side sends or receives; the Python side uses
  /// the same default. At least 50,000 floats fit in the default.
  size_t MaxMessageBytes = size_t(64) << 20;
  /// TLS instead of plaintext (both sides must agree).
  bool UseTls = false;
  GrpcTlsFiles Tls;
  /// Training: listen on a non-loopback address. Off by default: a server
  /// reachable from the network should use TLS.
  bool AllowRemote = false;
  /// Training: at the end of the session (endSession() or destruction),
  /// how long to wait for the trainer to learn that the session ended (no
  /// wait when no trainer ever asked for an observation).
  std::chrono::milliseconds LingerTimeout{2000};
  /// Training: how long stopping the server may wait for calls in flight.
  std::chrono::milliseconds ShutdownTimeout{1000};
  /// Inference: call this user-defined service instead of ModelService.
  std::optional<UserMessageSchema> UserMessages;
  /// Names this compiler session for the model ("" = a random id).
  std::string SessionId;
};

class GrpcModelRunner final : public ModelRunner {
public:
  /// Inference: Address is the model server ("host:port", "unix:path",
  /// any gRPC target); nothing is sent before the first evaluate (or
  /// connect()). Training: Address is where to listen ("127.0.0.1:0"
  /// picks a free port, see port()); the server is running when create()
  /// returns. Errors: invalid arguments, unreadable TLS files, an address
  /// that cannot be bound (in use: two servers never share a port), a
  /// non-loopback address without AllowRemote, an unusable UserMessages.
  static Expected<std::unique_ptr<GrpcModelRunner>>
  create(std::string Address, std::vector<TensorSpec> FeatureSpecs = {},
         std::optional<TensorSpec> Advice = std::nullopt,
         GrpcOptions Options = GrpcOptions());
  ~GrpcModelRunner() override;

  /// Inference: waits (within ConnectTimeout) until the server is reached;
  /// otherwise done by the first evaluate. Training: Ok.
  Status connect();

  /// Ends this compiler session: inference mode tells the model
  /// (EndSession, bounded by CallTimeout); training mode lets the
  /// trainer's next GetObservation report the end and waits up to
  /// LingerTimeout for that. Later evaluations fail. Also done by the
  /// destructor.
  Status endSession();

  /// Training: the port the server listens on (0 in inference mode).
  int port() const;
  /// Inference: the server's address. Training: "host:port" to give the
  /// trainer.
  const std::string &address() const;
  const GrpcOptions &grpcOptions() const;
  /// The id sent with every observation.
  const std::string &sessionId() const;

  /// Training: true once the trainer called EndEpisode.
  bool episodeEnded() const;
  /// Training: waits up to Timeout for EndEpisode; Timeout error if it did
  /// not come.
  Status waitForEpisodeEnd(std::chrono::milliseconds Timeout);

  class Impl;

private:
  GrpcModelRunner(std::vector<TensorSpec> FeatureSpecs,
                  std::optional<TensorSpec> Advice, GrpcOptions Options);

  Status doEvaluate(const std::vector<const TensorValue *> &Features,
                    bool FeaturesChanged, const TensorSpec &Spec,
                    TensorValue &Out) override;
  Status doSwitchContext(std::string_view Name) override;

  std::unique_ptr<Impl> P;
};

/// The gRPC runner for makeRunner (mlbridge/runner_settings.h): inference
/// mode, calling the model server at RunnerSettings::Server with the
/// integration's features and advice; RunnerSettings::Timeout bounds
/// reaching the server and each call.
RunnerFactory grpcRunnerFactory();

} // namespace mlbridge

#endif // MLBRIDGE_GRPC_MODEL_RUNNER_H
