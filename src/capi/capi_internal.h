//===- capi_internal.h - Shared pieces of the C API (internal) ------------===//
//
// Every C API translation unit (core, pipe, and optional runners such as
// gRPC or ONNX) wraps a ModelRunner in the same opaque handle and reports
// errors the same way.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SRC_CAPI_CAPI_INTERNAL_H
#define MLBRIDGE_SRC_CAPI_CAPI_INTERNAL_H

#include "mlbridge/c/mlbridge.h"
#include "mlbridge/model_runner.h"

#include <memory>

struct mlb_runner {
  std::unique_ptr<mlbridge::ModelRunner> Runner;
};

namespace mlbridge::capi {

/// Records S as this thread's last error; returns its mlb_status.
mlb_status fail(const Status &S);
mlb_status fail(ErrorCode Code, const char *Message);
/// MLB_OK for an Ok status, fail(S) otherwise.
inline mlb_status finish(const Status &S) {
  return S.isOk() ? MLB_OK : fail(S);
}

} // namespace mlbridge::capi

#define MLB_CHECK_RUNNER(R)                                                    \
  do {                                                                         \
    if (!(R) || !(R)->Runner)                                                  \
      return ::mlbridge::capi::fail(::mlbridge::ErrorCode::InvalidArgument,    \
                                    "null runner");                            \
  } while (0)

#define MLB_CHECK_ARG(X, What)                                                 \
  do {                                                                         \
    if (!(X))                                                                  \
      return ::mlbridge::capi::fail(::mlbridge::ErrorCode::InvalidArgument,    \
                                    "null " What);                             \
  } while (0)

#endif // MLBRIDGE_SRC_CAPI_CAPI_INTERNAL_H
