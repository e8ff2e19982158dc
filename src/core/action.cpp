//===- core/action.cpp - A discrete action from a model's output ----------===//
//
// The one rule every decision among actions uses (ModelRunner::
// evaluateAction, rl::Agent, mlb_evaluate_action): the integer the model
// sent, or the argmax of its scores, within a legality mask.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/model_runner.h"

#include "support/checked_cast.h"

#include <cmath>
#include <cstring>
#include <type_traits>

namespace mlbridge {

namespace {

template <typename T>
Expected<int64_t> argmaxOf(const TensorValue &Out, size_t N,
                           const std::vector<bool> &Legal) {
  const T *P = Out.dataAs<T>();
  std::optional<size_t> Best;
  for (size_t K = 0; K < N; ++K) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(P[K]))
        return Status(ErrorCode::Malformed,
                      "model output '" + Out.spec().name() +
                          "' has NaN at index " + std::to_string(K));
    }
    if (!Legal.empty() && !Legal[K])
      continue;
    if (!Best || P[K] > P[*Best])
      Best = K;
  }
  if (!Best)
    return Status(ErrorCode::InvalidArgument,
                  "no legal action: the mask forbids all " + std::to_string(N));
  return static_cast<int64_t>(*Best);
}

/// The single element of an integer output as an action.
template <typename T> Expected<int64_t> valueOf(const TensorValue &Out) {
  if constexpr (!std::is_integral_v<T>) {
    return Status(ErrorCode::TypeMismatch,
                  "model output " + Out.spec().describe() +
                      " is not a single integer action");
  } else {
    T V;
    std::memcpy(&V, Out.data(), sizeof(T));
    if (std::optional<int64_t> Action = support::checkedCast<int64_t>(V))
      return *Action;
    return Status(ErrorCode::TypeMismatch,
                  "action " + std::to_string(V) + " does not fit int64");
  }
}

Expected<int64_t> argmax(const TensorValue &Out, const std::vector<bool> &Legal) {
  const size_t N = Out.elementCount();
  if (N == 0)
    return Status(ErrorCode::TypeMismatch,
                  "model output '" + Out.spec().name() +
                      "' is empty; there is no action to pick");
  if (!Legal.empty() && Legal.size() != N)
    return Status(ErrorCode::InvalidArgument,
                  "the legality mask has " + std::to_string(Legal.size()) +
                      " entries, model output '" + Out.spec().name() +
                      "' has " + std::to_string(N) + " scores");
  switch (Out.type()) {
#define MLBRIDGE_CASE(E, Ty, Name)                                              \
  case DType::E:                                                               \
    return argmaxOf<Ty>(Out, N, Legal);
    MLBRIDGE_NUMERIC_DTYPES(MLBRIDGE_CASE)
#undef MLBRIDGE_CASE
  case DType::Bool:
    return argmaxOf<unsigned char>(Out, N, Legal); // the first true
  case DType::String:
    break;
  }
  return Status(ErrorCode::TypeMismatch,
                "model output '" + Out.spec().name() +
                    "' is a string; argmax needs numbers");
}

Expected<int64_t> value(const TensorValue &Out) {
  if (Out.elementCount() != 1 ||
      !(isIntegral(Out.type()) || Out.type() == DType::Bool))
    return Status(ErrorCode::TypeMismatch,
                  "model output " + Out.spec().describe() +
                      " is not a single integer action");
  switch (Out.type()) {
#define MLBRIDGE_CASE(E, Ty, Name)                                              \
  case DType::E:                                                               \
    return valueOf<Ty>(Out);
    MLBRIDGE_NUMERIC_DTYPES(MLBRIDGE_CASE)
#undef MLBRIDGE_CASE
  case DType::Bool:
    return valueOf<uint8_t>(Out);
  case DType::String:
    break;
  }
  return Status(ErrorCode::Internal, "unreachable action dtype");
}

Expected<int64_t> legalValue(const TensorValue &Out,
                             const std::vector<bool> &Legal) {
  Expected<int64_t> A = value(Out);
  if (!A || Legal.empty())
    return A;
  if (*A < 0 || static_cast<uint64_t>(*A) >= Legal.size() ||
      !Legal[static_cast<size_t>(*A)])
    return Status(ErrorCode::Malformed,
                  "the model chose action " + std::to_string(*A) +
                      ", which the legality mask (" +
                      std::to_string(Legal.size()) + " actions) forbids");
  return A;
}

bool isSingleInteger(const TensorValue &Out) {
  return Out.elementCount() == 1 &&
         (isIntegral(Out.type()) || Out.type() == DType::Bool);
}

} // namespace

Expected<int64_t> decodeAction(const TensorValue &Output, ActionRule Rule,
                               const std::vector<bool> &Legal) {
  switch (Rule) {
  case ActionRule::Argmax:
    return argmax(Output, Legal);
  case ActionRule::Value:
    return legalValue(Output, Legal);
  case ActionRule::Auto:
    if (isSingleInteger(Output))
      return legalValue(Output, Legal);
    return argmax(Output, Legal);
  }
  return Status(ErrorCode::InvalidArgument, "unknown ActionRule");
}

TensorSpec defaultActionSpec(ActionRule Rule) {
  return Rule == ActionRule::Argmax
             ? TensorSpec::create<float>("scores", {kDynamicDim})
             : TensorSpec::create<int64_t>("action");
}

} // namespace mlbridge
