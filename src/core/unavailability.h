//===- core/unavailability.h - When a remote runner gives up ---*- C++ -*-===//
//
// Internal to the library. The one rule every remote runner (pipe, shared
// memory, gRPC) applies after a request failed: may the runner send the
// next request over the same transport, or is it unavailable from now on
// (ModelRunner::markUnavailable)?
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_CORE_UNAVAILABILITY_H
#define MLBRIDGE_CORE_UNAVAILABILITY_H

#include "mlbridge/status.h"

namespace mlbridge::remote {

/// How the transport delimits replies.
enum class Framing {
  ByteStream, ///< FIFOs, shared-memory rings: a reply is bytes in a stream
  Messages,   ///< gRPC: every reply is a message of its own
};

/// Where a request failed.
enum class Failure {
  PeerLost,      ///< no peer: connecting failed, the session or episode ended
  Exchange,      ///< sending the request or receiving and parsing the reply
  AdviceContent, ///< the reply parsed, but its advice tensor is unusable
};

/// True when a request that failed with Code leaves the transport
/// untrustworthy, so the runner refuses further calls. Always after losing
/// the peer. Otherwise when the peer is gone or silent (Timeout, PeerClosed,
/// IOError), speaks something else (Malformed) or lacks the endpoint
/// (NotFound); on a byte stream also after an oversized reply (TooLarge:
/// its rest is still in the stream, so the next reply could not be found).
/// A reply that is a message of its own cannot desynchronise anything, so
/// there an unusable advice tensor fails that request only. A rejected
/// request (InvalidArgument, TypeMismatch) or the model's own error
/// (Unavailable) leaves the runner usable.
inline bool makesUnavailable(ErrorCode Code, Failure Where, Framing F) {
  if (Where == Failure::PeerLost)
    return true;
  if (Where == Failure::AdviceContent && F == Framing::Messages)
    return false;
  switch (Code) {
  case ErrorCode::Timeout:
  case ErrorCode::PeerClosed:
  case ErrorCode::IOError:
  case ErrorCode::Malformed:
  case ErrorCode::NotFound:
    return true;
  case ErrorCode::TooLarge:
    return F == Framing::ByteStream;
  default:
    return false;
  }
}

} // namespace mlbridge::remote

#endif // MLBRIDGE_CORE_UNAVAILABILITY_H
