//===- fake_runners.h - Scripted ModelRunners for the RL tests ------------===//
//
// FakeScoresRunner is a fake: no model, no transport. It records the
// features it is evaluated on and answers with a scripted output, so the
// tests can check which agent the driver asked, with which observation.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_TESTS_RL_FAKE_RUNNERS_H
#define MLBRIDGE_TESTS_RL_FAKE_RUNNERS_H

#include "mlbridge/model_runner.h"

#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace rltest {

class FakeScoresRunner final : public mlbridge::ModelRunner {
public:
  /// Features declared on first use (like a pipe runner); the advice is
  /// float scores (like an ONNX agent) unless given (std::nullopt: none, so
  /// the Agent chooses its default advice spec).
  explicit FakeScoresRunner(std::string Name,
                            std::optional<mlbridge::TensorSpec> Advice =
                                mlbridge::TensorSpec("scores",
                                                     mlbridge::DType::Float,
                                                     {mlbridge::kDynamicDim}))
      : ModelRunner({}, std::move(Advice), mlbridge::RunnerOptions()),
        Name(std::move(Name)) {}

  /// Fills Out from the features; default: the float scores in Script,
  /// cycling through them.
  std::function<mlbridge::Status(const std::vector<const mlbridge::TensorValue *> &,
                                 mlbridge::TensorValue &)>
      Answer;
  std::vector<std::vector<float>> Script;
  mlbridge::Status FailWith;  ///< non-Ok: every evaluation fails with it

  std::string Name;
  std::vector<std::vector<float>> SeenObs; ///< feature "obs" of each call
  std::vector<std::string> Contexts;
  size_t Calls = 0;

private:
  mlbridge::Status doEvaluate(const std::vector<const mlbridge::TensorValue *> &F,
                              bool, const mlbridge::TensorSpec &Spec,
                              mlbridge::TensorValue &Out) override {
    ++Calls;
    for (const mlbridge::TensorValue *V : F)
      if (V->spec().name() == "obs" && V->type() == mlbridge::DType::Float)
        SeenObs.emplace_back(V->dataAs<float>(),
                             V->dataAs<float>() + V->elementCount());
    if (!FailWith.isOk())
      return FailWith;
    if (Answer)
      return Answer(F, Out);
    if (Script.empty() || Spec.type() != mlbridge::DType::Float)
      return mlbridge::Status(mlbridge::ErrorCode::Internal, "no script");
    const std::vector<float> &S = Script[(Calls - 1) % Script.size()];
    Out.reshape({static_cast<int64_t>(S.size())});
    std::memcpy(Out.data(), S.data(), S.size() * sizeof(float));
    return mlbridge::Status::ok();
  }
  mlbridge::Status doSwitchContext(std::string_view C) override {
    Contexts.emplace_back(C);
    return mlbridge::Status::ok();
  }
};

} // namespace rltest

#endif // MLBRIDGE_TESTS_RL_FAKE_RUNNERS_H
