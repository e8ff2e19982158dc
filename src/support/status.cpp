#include "mlbridge/status.h"

namespace mlbridge {

const char *errorCodeName(ErrorCode Code) {
  switch (Code) {
  case ErrorCode::Ok:
    return "ok";
  case ErrorCode::InvalidArgument:
    return "invalid-argument";
  case ErrorCode::TypeMismatch:
    return "type-mismatch";
  case ErrorCode::Malformed:
    return "malformed";
  case ErrorCode::TooLarge:
    return "too-large";
  case ErrorCode::Timeout:
    return "timeout";
  case ErrorCode::PeerClosed:
    return "peer-closed";
  case ErrorCode::NotFound:
    return "not-found";
  case ErrorCode::IOError:
    return "io-error";
  case ErrorCode::Unavailable:
    return "unavailable";
  case ErrorCode::Internal:
    return "internal";
  }
  return "unknown";
}

std::string Status::toString() const {
  if (isOk())
    return "ok";
  return std::string(errorCodeName(Code)) + ": " + Message;
}

} // namespace mlbridge
