// A fault-injecting ModelRunner for the unit tests (no transport involved).
#ifndef MLBRIDGE_TESTS_FAKE_MODEL_RUNNER_H
#define MLBRIDGE_TESTS_FAKE_MODEL_RUNNER_H

#include "mlbridge/model_runner.h"

#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge::test {

/// Fault-injection double: records what it was sent and answers with a
/// programmed advice tensor or error.
class FakeModelRunner : public ModelRunner {
public:
  FakeModelRunner(std::vector<TensorSpec> Specs = {},
                  std::optional<TensorSpec> Advice = std::nullopt,
                  RunnerOptions Options = RunnerOptions())
      : ModelRunner(std::move(Specs), std::move(Advice), std::move(Options)) {}

  template <typename T> void answer(std::vector<T> Values) {
    Reply = TensorValue(TensorSpec::create<T>(
        "advice", {static_cast<int64_t>(Values.size())}));
    if (!Values.empty()) // memcpy's pointers must not be null, even for 0 bytes
      std::memcpy(Reply.data(), Values.data(), Values.size() * sizeof(T));
    Fail = Status::ok();
  }
  void failWith(Status S) { Fail = std::move(S); }
  /// As a transport does after an I/O failure.
  void breakNow(const Status &S) { markUnavailable(S); }

  using ModelRunner::useFeatureBuffer;
  int Calls = 0;
  bool LastChanged = false;
  std::vector<const void *> SentData;
  std::vector<TensorSpec> SentSpecs;
  std::vector<std::string> Contexts;
  using ModelRunner::constructionStatus;

private:
  Status doEvaluate(const std::vector<const TensorValue *> &Features,
                    bool Changed, const TensorSpec &Spec,
                    TensorValue &Out) override {
    ++Calls;
    LastChanged = Changed;
    SentSpecs.clear();
    SentData.clear();
    for (const TensorValue *F : Features) {
      SentSpecs.push_back(F->spec());
      SentData.push_back(F->data());
    }
    if (!Fail.isOk())
      return Fail;
    if (Reply.type() != Spec.type())
      return Status(ErrorCode::TypeMismatch, "fake: reply dtype differs");
    Out = Reply;
    return Status::ok();
  }
  Status doSwitchContext(std::string_view Name) override {
    Contexts.emplace_back(Name);
    return Status::ok();
  }

  TensorValue Reply;
  Status Fail;
};


} // namespace mlbridge::test

#endif // MLBRIDGE_TESTS_FAKE_MODEL_RUNNER_H
