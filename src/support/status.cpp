#include "mlbridge/status.h"

#include "support/enum_names.h"

namespace mlbridge {

const char *errorCodeName(ErrorCode Code) {
  // In ErrorCode's order.
  static constexpr const char *Names[] = {
      "ok",        "invalid-argument", "type-mismatch", "malformed",
      "too-large", "timeout",          "peer-closed",   "not-found",
      "io-error",  "unavailable",      "internal"};
  return support::enumName<ErrorCode::Internal>(Code, Names);
}

std::string Status::toString() const {
  if (isOk())
    return "ok";
  return std::string(errorCodeName(Code)) + ": " + Message;
}

} // namespace mlbridge
