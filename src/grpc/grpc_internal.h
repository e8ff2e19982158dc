//===- grpc/grpc_internal.h - Pieces shared by the gRPC runners -*- C++ -*-===//
//
// Internal to MLBridge::grpc: credentials, channel arguments, status
// mapping, and the two halves of GrpcModelRunner (inference client and
// training server) behind one interface.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_GRPC_GRPC_INTERNAL_H
#define MLBRIDGE_GRPC_GRPC_INTERNAL_H

#include "mlbridge/grpc_model_runner.h"

#include "proto_tensor.h"
#include "core/unavailability.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <unordered_map>

namespace mlbridge {

/// One of the two modes; GrpcModelRunner forwards to it.
class GrpcModelRunner::Impl {
public:
  Impl(std::string Address, GrpcOptions Opts, std::string SessionId)
      : Address(std::move(Address)), Opts(std::move(Opts)),
        SessionId(std::move(SessionId)) {}
  virtual ~Impl();

  virtual Status connect() = 0;
  /// One decision. On failure Where says where it failed (it starts as
  /// Exchange); GrpcModelRunner applies remote::makesUnavailable to it.
  virtual Status evaluate(const std::vector<const TensorValue *> &Features,
                          const TensorSpec &Spec, TensorValue &Out,
                          remote::Failure &Where) = 0;
  virtual Status endSession() = 0;
  virtual int port() const { return 0; }
  virtual bool episodeEnded() const { return false; }
  virtual Status waitForEpisodeEnd(std::chrono::milliseconds) {
    return Status(ErrorCode::InvalidArgument,
                  "waitForEpisodeEnd: only a training-mode runner has episodes");
  }

  void switchContext(std::string_view Name) { Context = std::string(Name); }
  /// The index of the next observation in the current context.
  int64_t &counter() { return NextIndex[Context]; }

  std::string Address;
  GrpcOptions Opts;
  std::string SessionId;
  std::string Context;
  std::unordered_map<std::string, int64_t> NextIndex;
};

namespace grpc_detail {

using Deadline = std::chrono::steady_clock::time_point;

/// Reads a whole (small) file: NotFound / IOError naming What and Path.
Status readFile(const std::string &Path, const char *What, std::string &Out);

Expected<std::shared_ptr<grpc::ChannelCredentials>>
clientCredentials(const GrpcOptions &Opts);
Expected<std::shared_ptr<grpc::ServerCredentials>>
serverCredentials(const GrpcOptions &Opts);
/// Message sizes, reconnect backoff, no retries, a private connection.
grpc::ChannelArguments channelArguments(const GrpcOptions &Opts);

/// "deadline-exceeded" ... for messages.
const char *grpcCodeName(grpc::StatusCode Code);
/// Maps a failed call to a Status (whether it makes the runner unavailable
/// follows from its code: remote::makesUnavailable).
Status fromGrpc(const grpc::Status &G, const std::string &What);

/// True for "127.x.x.x:P", "localhost:P", "[::1]:P" and "unix:" addresses.
bool isLoopbackAddress(const std::string &Address);

/// A client of "localhost:P" may reach 127.0.0.1:P or [::1]:P, so a server
/// on one of them must also own the other: claim() refuses when another
/// server listens on the sibling address, and otherwise holds it (a bound,
/// non-listening socket) until destroyed, so no later server can bind it.
class LoopbackSiblingClaim {
public:
  LoopbackSiblingClaim() = default;
  LoopbackSiblingClaim(const LoopbackSiblingClaim &) = delete;
  LoopbackSiblingClaim &operator=(const LoopbackSiblingClaim &) = delete;
  ~LoopbackSiblingClaim() { release(); }
  /// Address is the one the server bound; Port its bound port.
  Status claim(const std::string &Address, int Port);
  void release();

private:
  int Fd = -1;
};
std::string randomSessionId();

std::chrono::system_clock::time_point toSystem(Deadline D);

/// The implementations.
Expected<std::unique_ptr<GrpcModelRunner::Impl>>
createInferenceClient(std::string Address, GrpcOptions Opts,
                      std::string SessionId);
Expected<std::unique_ptr<GrpcModelRunner::Impl>>
createTrainingServer(std::string Address, GrpcOptions Opts,
                     std::string SessionId);

} // namespace grpc_detail
} // namespace mlbridge

#endif // MLBRIDGE_GRPC_GRPC_INTERNAL_H
