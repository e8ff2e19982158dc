//===- mlbridge/feature_binding.h - A pass's features, a model's inputs -*- C++ -*-===//
//
// A pass declares all the features it can compute; an in-process model
// (ONNX, compiled, TF-AOT) has inputs of its own, usually some of them.
// FeatureBinding maps the one onto the other once, and then writes each
// feature the model takes into its buffer in place (converting dtypes),
// skipping those it does not take:
//
//   auto B = mlbridge::makeBoundRunner(Settings, Features, Advice,
//                                      "model", "the unroller");
//   if (!B) ... B.status() ...          // "the model does not fit ...: ..."
//   B->Binding.write(*B->Runner, 0, &TripCount); // feature 0, if taken
//   auto Action = B->Runner->evaluateAction();
//
// The pipe, shm and gRPC runners are made with exactly the pass's features:
// for them the binding is the identity.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_FEATURE_BINDING_H
#define MLBRIDGE_FEATURE_BINDING_H

#include "mlbridge/model_runner.h"
#include "mlbridge/runner_settings.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"

#include <cstring>
#include <memory>
#include <string_view>
#include <type_traits>
#include <vector>

namespace mlbridge {

/// Binds an integration's features to those of a runner. The pipe and gRPC
/// runners are created with exactly the integration's features; an
/// in-process model has its own inputs, each of which must be one of the
/// integration's features (same name, same element count). Its dtype may
/// differ: values are converted (e.g. int64 features into a float model
/// input). Features the model does not take are simply not sent.
class FeatureBinding {
public:
  Status bind(const ModelRunner &R, const std::vector<TensorSpec> &Ours);
  /// True if the runner takes our feature I.
  bool has(size_t I) const { return I < Slot.size() && Slot[I] >= 0; }
  /// Writes our feature I (its element count of values) into the runner's
  /// buffer, converting to the runner's dtype.
  template <typename T> void write(ModelRunner &R, size_t I, const T *V) const;

private:
  template <typename U, typename T>
  static void convert(ModelRunner &R, size_t J, const T *V, size_t N) {
    U *Dst = R.getTensor<U>(J);
    if (!Dst)
      return;
    if constexpr (std::is_same_v<U, T>) {
      if (N) // (memcpy from an empty vector's null data() is undefined)
        std::memcpy(Dst, V, N * sizeof(T)); // the common case, per decision
    } else
      for (size_t K = 0; K < N; ++K)
        Dst[K] = static_cast<U>(V[K]);
  }
  std::vector<int> Slot;      // our index -> runner index, -1 if absent
  std::vector<size_t> Counts; // our index -> element count
};

template <typename T>
void FeatureBinding::write(ModelRunner &R, size_t I, const T *V) const {
  if (!has(I))
    return;
  const size_t J = static_cast<size_t>(Slot[I]);
  const size_t N = Counts[I];
  switch (R.featureSpec(J).type()) {
#define MLBRIDGE_CASE(E, Ty, Name)                                              \
  case DType::E:                                                               \
    return convert<Ty>(R, J, V, N);
    MLBRIDGE_NUMERIC_DTYPES(MLBRIDGE_CASE)
#undef MLBRIDGE_CASE
  case DType::Bool:
    if (auto *Dst = R.getTensor<bool>(J))
      for (size_t K = 0; K < N; ++K)
        Dst[K] = V[K] != T(0);
    return;
  case DType::String:
    return; // refused by bind()
  }
}

/// A runner and the binding of the integration's features to it (Runner
/// is null for RunnerKind::Default).
struct BoundRunner {
  std::unique_ptr<ModelRunner> Runner;
  FeatureBinding Binding;
};

/// makeRunner, then binds Features. The error says which step failed, in
/// the integration's words: "cannot use the <Model>: ..." or "the <Model>
/// does not fit <Pass>: ..." (Model: "model", "agent"; Pass: "the inliner").
Expected<BoundRunner> makeBoundRunner(const RunnerSettings &S,
                                      const std::vector<TensorSpec> &Features,
                                      const TensorSpec &Advice,
                                      std::string_view Model,
                                      std::string_view Pass);

} // namespace mlbridge

#endif // MLBRIDGE_FEATURE_BINDING_H
