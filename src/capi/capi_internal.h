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
#include "mlbridge/serdes.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

struct mlb_runner {
  std::unique_ptr<mlbridge::ModelRunner> Runner;
};

/// What a component's C API hands out for a SerDes the core lacks.
struct mlb_serdes_factory {
  mlbridge::SerDesFactory Make;
};

namespace mlbridge::capi {

/// Records S as this thread's last error; returns its mlb_status.
mlb_status fail(const Status &S);
mlb_status fail(ErrorCode Code, const char *Message);
/// MLB_OK for an Ok status, fail(S) otherwise.
inline mlb_status finish(const Status &S) {
  return S.isOk() ? MLB_OK : fail(S);
}

/// Hands a runner just created to the C caller (*Out owns it), or reports
/// why it could not be created (*Out stays as it is: set it to NULL first).
template <typename R>
mlb_status giveRunner(Expected<std::unique_ptr<R>> Made, mlb_runner **Out) {
  if (!Made)
    return fail(Made.status());
  *Out = new mlb_runner{std::move(*Made)};
  return MLB_OK;
}

/// Copies a vector advice into the caller's buffer: *Count receives its
/// size, also when it does not fit (TooLarge).
template <typename T>
mlb_status copyAdvice(const std::vector<T> &V, T *Out, size_t Capacity,
                      size_t *Count) {
  *Count = V.size();
  if (V.size() > Capacity)
    return fail(Status(ErrorCode::TooLarge,
                       "advice has " + std::to_string(V.size()) +
                           " elements, output capacity is " +
                           std::to_string(Capacity)));
  if (!V.empty())
    std::memcpy(Out, V.data(), V.size() * sizeof(T));
  return MLB_OK;
}

/// The options a C caller gave, or the defaults Init fills in for NULL.
template <typename Options>
Options optionsOrDefaults(const Options *Given, void (*Init)(Options *)) {
  Options O;
  Init(&O);
  if (Given)
    O = *Given;
  return O;
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
