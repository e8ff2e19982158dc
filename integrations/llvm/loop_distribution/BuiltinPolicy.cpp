//===- BuiltinPolicy.cpp - The loop-distribution policy without a model ---===//
//
// The runner MLBridgeLoopDistribution.so uses when no model is given (runner
// 'default') or, with runner 'auto', when none is compiled in
// (LoopDistribution.h). It answers through the same protocol and code path
// as a model, so the pass has one way of deciding.
//
//===----------------------------------------------------------------------===//

#include "LoopDistribution.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

namespace mlb = mlbridge;
namespace ld = mlbridge::loopdist;

namespace {

/// The policy used when no model is given or compiled in, answering through
/// the protocol like any model (it reads only the features): LLVM-like, it
/// separates nodes that carry a dependence cycle blocking vectorization
/// (node_features "cyclic") from the others, so that the others can be
/// vectorized. It distributes a loop only if it has both kinds; then it
/// keeps placing nodes of the current loop's kind while any is eligible
/// (lowest index first) and starts a new loop when the kind changes.
class BuiltinPolicyRunner final : public mlb::ModelRunner {
public:
  static mlb::Expected<std::unique_ptr<mlb::ModelRunner>>
  create(std::vector<mlb::TensorSpec> Features, mlb::TensorSpec Advice) {
    auto R = created(std::unique_ptr<BuiltinPolicyRunner>(new BuiltinPolicyRunner(
        std::move(Features), std::move(Advice), CreateTag())));
    if (!R)
      return R.takeStatus();
    return std::unique_ptr<mlb::ModelRunner>(std::move(*R));
  }

private:
  BuiltinPolicyRunner(std::vector<mlb::TensorSpec> Features,
                      mlb::TensorSpec Advice, CreateTag)
      : ModelRunner(std::move(Features), std::move(Advice), mlb::RunnerOptions()) {}

  mlb::Status doEvaluate(const std::vector<const mlb::TensorValue *> &F, bool,
                         const mlb::TensorSpec &Spec,
                         mlb::TensorValue &Out) override {
    if (F.size() < ld::NumFeatures)
      return mlb::Status(mlb::ErrorCode::Internal, "built-in policy: features missing");
    const float *Nodes = F[ld::FNodeFeatures]->dataAs<float>();
    const float *Eligible = F[ld::FEligible]->dataAs<float>();
    const float *Current = F[ld::FCurrent]->dataAs<float>();
    const float *Candidate = F[ld::FCandidate]->dataAs<float>();
    const float *Loop = F[ld::FLoopFeatures]->dataAs<float>();
    const int64_t *Agent = F[ld::FAgent]->dataAs<int64_t>();
    if (!Nodes || !Eligible || !Current || !Candidate || !Loop || !Agent)
      return mlb::Status(mlb::ErrorCode::Internal, "built-in policy: feature types");
    auto Cyclic = [&](int64_t N) {
      return Nodes[N * ld::NumNodeFeatures + ld::NFCyclic] > 0.5f;
    };
    const bool Mixed = Loop[ld::LFCyclicNodes] > 0.5f &&
                       Loop[ld::LFCyclicNodes] < Loop[ld::LFNodes] - 0.5f;
    int CurrentKind = -1; // -1: no current loop; else 1 cyclic, 0 not
    for (int64_t N = 0; N < ld::MaxNodes; ++N)
      if (Current[N] > 0.5f)
        CurrentKind = std::max(CurrentKind, Cyclic(N) ? 1 : 0);
    Out = mlb::TensorValue(Spec);
    float *Scores = Out.dataAs<float>();
    if (!Scores || Out.elementCount() < static_cast<size_t>(ld::MaxNodes))
      return mlb::Status(mlb::ErrorCode::Internal, "built-in policy: advice type");
    std::fill(Scores, Scores + ld::MaxNodes, 0.0f);
    if (*Agent == ld::MergeAgent) {
      int64_t C = 0;
      while (C < ld::MaxNodes && Candidate[C] < 0.5f)
        ++C;
      const bool Split = Mixed && C < ld::MaxNodes && CurrentKind >= 0 &&
                         (Cyclic(C) ? 1 : 0) != CurrentKind;
      Scores[Split ? ld::StartNewLoop : ld::MergeIntoCurrent] = 1.0f;
      return mlb::Status::ok();
    }
    // select: prefer the current loop's kind, then the lowest index.
    for (int64_t N = 0; N < ld::MaxNodes; ++N)
      if (Eligible[N] > 0.5f)
        Scores[N] = 1.0f - static_cast<float>(N) / 64.0f +
                    ((Mixed && CurrentKind >= 0 &&
                      (Cyclic(N) ? 1 : 0) == CurrentKind)
                         ? 1.0f
                         : 0.0f);
    return mlb::Status::ok();
  }
};

} // namespace

mlb::Expected<std::unique_ptr<mlb::ModelRunner>>
ld::makeBuiltinPolicy(std::vector<mlb::TensorSpec> Features, mlb::TensorSpec Advice) {
  return BuiltinPolicyRunner::create(std::move(Features), std::move(Advice));
}
