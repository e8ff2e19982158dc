//===- core/feature_binding.cpp - A pass's features, a model's inputs -----===//

#include "mlbridge/feature_binding.h"

#include <string>

namespace mlbridge {

Status FeatureBinding::bind(const ModelRunner &R,
                            const std::vector<TensorSpec> &Ours) {
  Slot.assign(Ours.size(), -1);
  Counts.resize(Ours.size());
  for (size_t I = 0; I < Ours.size(); ++I)
    Counts[I] = Ours[I].elementCount();
  for (size_t J = 0; J < R.featureCount(); ++J) {
    const TensorSpec &Theirs = R.featureSpec(J);
    size_t I = 0;
    while (I < Ours.size() && Ours[I].name() != Theirs.name())
      ++I;
    if (I == Ours.size()) {
      std::string Known;
      for (const TensorSpec &S : Ours)
        Known += (Known.empty() ? "" : ", ") + S.name();
      return Status(ErrorCode::InvalidArgument,
                    "model input '" + Theirs.name() +
                        "' is not a feature of this pass (features: " + Known +
                        ")");
    }
    if (Theirs.type() == DType::String)
      return Status(ErrorCode::TypeMismatch,
                    "model input " + Theirs.describe() +
                        " is a string; the pass's features are numbers");
    if (Theirs.isDynamic() || Theirs.elementCount() != Counts[I])
      return Status(ErrorCode::TypeMismatch,
                    "model input " + Theirs.describe() + " does not fit " +
                        Ours[I].describe() + " (element counts differ)");
    Slot[I] = static_cast<int>(J);
  }
  return Status::ok();
}


Expected<BoundRunner> makeBoundRunner(const RunnerSettings &S,
                                      const std::vector<TensorSpec> &Features,
                                      const TensorSpec &Advice,
                                      std::string_view Model,
                                      std::string_view Pass) {
  auto Runner = makeRunner(S, Features, Advice);
  if (!Runner)
    return Status(Runner.status().code(), "cannot use the " + std::string(Model) +
                                              ": " + Runner.status().toString());
  BoundRunner B{std::move(*Runner), FeatureBinding()};
  if (!B.Runner)
    return B;
  if (Status Bad = B.Binding.bind(*B.Runner, Features); !Bad.isOk())
    return Status(Bad.code(), "the " + std::string(Model) + " does not fit " +
                                  std::string(Pass) + ": " + Bad.toString());
  return B;
}

} // namespace mlbridge
