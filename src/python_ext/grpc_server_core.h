//===- python_ext/grpc_server_core.h - gRPC server core for Python -*- C++ -*-===//
//
// The serving half of Python's GrpcCompilerInterface (inference mode) in
// C++: a gRPC callback server on gRPC's own threads queues each incoming
// call; the Python thread takes them one at a time (next) and answers each
// (answer / fail). No Python here: the CPython module
// (grpc_server_module.cpp) wraps it, and C++ tests drive it directly.
//
// Guarantees: every wait is bounded; a call is answered at most once and
// only by the reply given for its own id (replies never cross between
// concurrent compilers); a call nobody answers ends with DEADLINE_EXCEEDED
// at min(the client's deadline, arrival + AnswerTimeout); a port that is in
// use is an error (SO_REUSEPORT off); messages beyond MaxMessageBytes are
// refused by gRPC before they reach this code.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_PYTHON_EXT_GRPC_SERVER_CORE_H
#define MLBRIDGE_PYTHON_EXT_GRPC_SERVER_CORE_H

#include <grpcpp/support/slice.h>
#include <grpcpp/support/status.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge::pyserver {

using Clock = std::chrono::steady_clock;

/// What the server does with a call to a method it serves.
enum class MethodKind {
  Request,    ///< queued for next(); answered by answer() / fail()
  SessionEnd, ///< answered at once with an empty message; next() reports it
};

struct ServerConfig {
  /// gRPC address to listen on ("127.0.0.1:0" picks a free port).
  std::string Address;
  /// Largest message in either direction.
  int MaxMessageBytes = 64 << 20;
  /// Longest a queued call waits for its answer (the client's deadline,
  /// when earlier, ends it first).
  std::chrono::milliseconds AnswerTimeout{60000};
  /// Calls queued or taken but not answered, at most; more are refused
  /// with RESOURCE_EXHAUSTED.
  size_t MaxPendingCalls = 64;
  /// Full method name ("/pkg.Service/Method") -> kind. Others are
  /// UNIMPLEMENTED.
  std::map<std::string, MethodKind> Methods;
  /// TLS: both PEMs set; RootPem with RequireClientCert demands client
  /// certificates signed by it.
  bool UseTls = false;
  std::string KeyPem, CertPem, RootPem;
  bool RequireClientCert = false;
};

/// One item next() hands out.
struct Incoming {
  MethodKind Kind = MethodKind::Request;
  uint64_t Id = 0;     ///< for answer() / fail(); 0 for a session end
  std::string Method;
  /// The request message, as received (gRPC's reference-counted slices:
  /// no copy until the caller reads them).
  std::vector<grpc::Slice> Payload;
  size_t size() const;
  void copyTo(char *Out) const;
};

enum class NextResult { Got, TimedOut, Closed };

enum class AnswerResult {
  Sent,     ///< the compiler gets it
  Gone,     ///< the compiler no longer waits (cancelled, deadline passed)
  TooLarge, ///< the reply exceeds MaxMessageBytes; the call ends with
            ///< RESOURCE_EXHAUSTED
};

class ServerCore {
public:
  /// Starts serving; null with Error set when it cannot listen.
  static std::unique_ptr<ServerCore> start(const ServerConfig &Config,
                                           std::string &Error);
  /// shutdown(), then waits for gRPC's last callbacks. In a process forked
  /// after start() (which has none of gRPC's threads), shutdown() and the
  /// destructor do nothing: the parent keeps serving.
  ~ServerCore();

  ServerCore(const ServerCore &) = delete;
  ServerCore &operator=(const ServerCore &) = delete;

  int port() const;
  /// Waits until Until for the next live call or session end. Calls whose
  /// compiler gave up meanwhile are dropped, never handed out.
  NextResult next(Clock::time_point Until, Incoming &Out);
  /// Answers call Id (taken by next()) with a serialized reply.
  AnswerResult answer(uint64_t Id, std::string_view Reply);
  /// Ends call Id with an error status. False when it no longer waits.
  bool fail(uint64_t Id, grpc::StatusCode Code, const std::string &Message);
  /// Stops accepting calls, ends the waiting ones with UNAVAILABLE, wakes
  /// next(). Idempotent; bounded (gRPC's shutdown gets 1 s).
  void shutdown();

  class Impl;

private:
  explicit ServerCore(std::unique_ptr<Impl> I);
  std::unique_ptr<Impl> I;
};

} // namespace mlbridge::pyserver

#endif
