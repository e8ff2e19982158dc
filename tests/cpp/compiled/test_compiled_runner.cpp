// CompiledModelRunner: a generated model behind the ModelRunner feature API,
// and as an RL agent. The models are the test models compiled at build time
// (compiled_test_models.h).
#include "compiled_test_models.h"
#include "mlbridge/compiled_model_runner.h"
#include "mlbridge/rl.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace mlbridge;
namespace ct = compiled_test;

namespace {

std::vector<float> randomVector(size_t N, unsigned Seed) {
  std::mt19937 G(Seed);
  std::normal_distribution<float> D(0.0f, 1.5f);
  std::vector<float> V(N);
  for (float &X : V)
    X = D(G);
  return V;
}

std::unique_ptr<CompiledModelRunner>
mustCreate(Expected<std::unique_ptr<CompiledModelRunner>> R) {
  EXPECT_TRUE(R) << R.status().toString();
  return R ? std::move(*R) : nullptr;
}

// The generated classes' static interface.
static_assert(ct::policy_head::kNumInputs == 1);
static_assert(ct::policy_head::kNumOutputs == 4);
static_assert(ct::policy_head::kInputElements[0] == 24);
static_assert(ct::policy_head::kOutputElements[2] == 1);
static_assert(ct::two_input::kNumInputs == 2);
static_assert(sizeof(ct::mlp_300_64_15::Workspace) ==
              ct::mlp_300_64_15::kWorkspaceBytes);

} // namespace

TEST(CompiledModelRunner, FeaturesAreTheModelInputs) {
  auto R = mustCreate(CompiledModelRunner::create<ct::two_input>());
  ASSERT_TRUE(R);
  ASSERT_EQ(R->featureCount(), 2u);
  EXPECT_EQ(R->featureSpec(0), TensorSpec::create<float>("ir", {1, 12}));
  EXPECT_EQ(R->featureSpec(1), TensorSpec::create<float>("loop", {1, 6}));
  // The first output is the advice by default.
  ASSERT_TRUE(R->adviceSpec());
  EXPECT_EQ(*R->adviceSpec(), TensorSpec::create<float>("score", {1, 5}));
  EXPECT_EQ(R->outputCount(), 1u);
  EXPECT_STREQ(R->model().Name, "compiled_test::two_input");
  EXPECT_STREQ(R->model().SourceModel, "two_input.onnx");
  EXPECT_EQ(R->model().Opset, 14);
}

TEST(CompiledModelRunner, AdviceComesFromModelMetadata) {
  // policy_head.onnx names "action" in its "mlbridge.advice" metadata.
  auto R = mustCreate(CompiledModelRunner::create<ct::policy_head>());
  ASSERT_TRUE(R);
  EXPECT_EQ(*R->adviceSpec(), TensorSpec::create<int64_t>("action", {1}));
  EXPECT_STREQ(R->model().AdviceOutput, "action");
  // An explicit choice wins.
  auto V = mustCreate(CompiledModelRunner::create<ct::policy_head>("value"));
  ASSERT_TRUE(V);
  EXPECT_EQ(*V->adviceSpec(), TensorSpec::create<float>("value", {1}));
}

TEST(CompiledModelRunner, CloneKeepsTheAdviceChoiceAndHasItsOwnBuffers) {
  auto R = mustCreate(CompiledModelRunner::create<ct::policy_head>("value"));
  ASSERT_TRUE(R);
  auto C = mustCreate(R->clone());
  ASSERT_TRUE(C);
  EXPECT_EQ(*C->adviceSpec(), TensorSpec::create<float>("value", {1}));
  EXPECT_NE(C->getTensor<float>(0), R->getTensor<float>(0));
  const std::vector<float> X = randomVector(24, 5);
  ASSERT_TRUE(R->setFeature(R->featureSpec(0).name(), X).isOk());
  ASSERT_TRUE(C->setFeature(C->featureSpec(0).name(), X).isOk());
  Expected<float> A = R->evaluate<float>(), B = C->evaluate<float>();
  ASSERT_TRUE(A && B);
  EXPECT_EQ(*A, *B);
}

TEST(CompiledModelRunner, EvaluatesLikeTheGeneratedFunction) {
  auto R = mustCreate(CompiledModelRunner::create<ct::policy_head>());
  ASSERT_TRUE(R);
  EXPECT_EQ(R->output("probs"), nullptr); // nothing evaluated yet
  for (unsigned Seed = 1; Seed <= 50; ++Seed) {
    const std::vector<float> Obs = randomVector(24, Seed);
    ASSERT_TRUE(R->setFeature("obs", Obs).isOk());
    Expected<int64_t> Action = R->evaluate<int64_t>();
    ASSERT_TRUE(Action) << Action.status().toString();

    float Probs[10], LogProbs[10], Value[1];
    int64_t Want[1];
    ct::policy_head::run(Obs.data(), Probs, LogProbs, Want, Value);
    EXPECT_EQ(*Action, Want[0]);

    const TensorValue *P = R->output("probs");
    ASSERT_NE(P, nullptr);
    ASSERT_EQ(P->elementCount(), 10u);
    const float *PV = P->dataAs<float>();
    EXPECT_TRUE(std::equal(PV, PV + 10, Probs)); // bit for bit
    EXPECT_NEAR(std::accumulate(PV, PV + 10, 0.0), 1.0, 1e-5);
    EXPECT_EQ(std::max_element(PV, PV + 10) - PV, *Action);
    EXPECT_EQ(R->output(3)->dataAs<float>()[0], Value[0]);
    EXPECT_EQ(R->output(size_t(9)), nullptr);
    EXPECT_EQ(R->output("nope"), nullptr);
  }
}

TEST(CompiledModelRunner, WritesFeaturesInPlace) {
  auto A = mustCreate(CompiledModelRunner::create<ct::mlp_300_64_15>());
  auto B = mustCreate(CompiledModelRunner::create<ct::mlp_300_64_15>());
  ASSERT_TRUE(A && B);
  const std::vector<float> X = randomVector(300, 7);
  float *In = A->getTensor<float>(0);
  ASSERT_NE(In, nullptr);
  EXPECT_EQ(A->getTensor<double>(0), nullptr); // wrong type
  std::copy(X.begin(), X.end(), In);
  ASSERT_TRUE(B->setFeature("x", X).isOk());
  Expected<std::vector<float>> YA = A->evaluate<std::vector<float>>();
  Expected<std::vector<float>> YB = B->evaluate<std::vector<float>>();
  ASSERT_TRUE(YA && YB);
  EXPECT_EQ(*YA, *YB);
  EXPECT_EQ(YA->size(), 15u);
}

TEST(CompiledModelRunner, SeveralInputsByName) {
  auto R = mustCreate(CompiledModelRunner::create<ct::two_input>());
  ASSERT_TRUE(R);
  const std::vector<float> Ir = randomVector(12, 3), Loop = randomVector(6, 4);
  // Any order: features are matched by name.
  ASSERT_TRUE(R->populateFeatures(std::make_pair("loop", Loop),
                                  std::make_pair("ir", Ir))
                  .isOk());
  Expected<std::vector<float>> Y = R->evaluate<std::vector<float>>();
  ASSERT_TRUE(Y) << Y.status().toString();
  float Want[5];
  ct::two_input::run(Ir.data(), Loop.data(), Want);
  EXPECT_EQ(*Y, std::vector<float>(Want, Want + 5));
}

TEST(CompiledModelRunner, WrongFeaturesAreErrors) {
  auto R = mustCreate(CompiledModelRunner::create<ct::policy_head>());
  ASSERT_TRUE(R);
  Status S = R->setFeature("observation", std::vector<float>(24));
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(S.message().find("unknown feature 'observation' (declared: obs)"),
            std::string::npos)
      << S.message();
  // The failed setter also fails the next evaluation (then clears).
  EXPECT_FALSE(R->evaluate<int64_t>());
  EXPECT_EQ(R->setFeature("obs", std::vector<double>(24)).code(),
            ErrorCode::TypeMismatch);
  EXPECT_FALSE(R->evaluate<int64_t>());
  EXPECT_EQ(R->setFeature("obs", std::vector<float>(23)).code(),
            ErrorCode::TypeMismatch);
  EXPECT_EQ(R->evaluateOr<int64_t>(-7), -7);
  ASSERT_TRUE(R->setFeature("obs", std::vector<float>(24, 0.25f)).isOk());
  EXPECT_TRUE(R->evaluate<int64_t>());
  EXPECT_FALSE(R->isUnavailable()); // caller errors never break the runner
}

TEST(CompiledModelRunner, AdviceTypeIsChecked) {
  auto R = mustCreate(CompiledModelRunner::create<ct::policy_head>());
  ASSERT_TRUE(R);
  Expected<float> F = R->evaluate<float>(); // "action" is int64
  ASSERT_FALSE(F);
  EXPECT_EQ(F.status().code(), ErrorCode::TypeMismatch);
  Expected<int32_t> I = R->evaluate<int32_t>();
  EXPECT_FALSE(I);
  ASSERT_TRUE(R->selectAdvice("probs").isOk());
  EXPECT_FALSE(R->evaluate<float>()); // ten elements: ask for a vector
  Expected<std::vector<float>> P = R->evaluate<std::vector<float>>();
  ASSERT_TRUE(P);
  EXPECT_EQ(P->size(), 10u);
  Status S = R->selectAdvice("logits");
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  // A declared spec must name an output of the right type and size.
  ASSERT_TRUE(R->setAdviceSpec(TensorSpec::create<float>("value", {1, 1})).isOk());
  EXPECT_TRUE(R->evaluate<float>());
  ASSERT_TRUE(R->setAdviceSpec(TensorSpec::create<float>("value", {2})).isOk());
  EXPECT_EQ(R->evaluate<std::vector<float>>().status().code(),
            ErrorCode::TypeMismatch);
  ASSERT_TRUE(R->setAdviceSpec(TensorSpec::create<float>("other", {1})).isOk());
  EXPECT_EQ(R->evaluate<float>().status().code(), ErrorCode::InvalidArgument);
  // A variable-length spec takes the output's size.
  ASSERT_TRUE(
      R->setAdviceSpec(TensorSpec::create<float>("log_probs", {kDynamicDim}))
          .isOk());
  Expected<std::vector<float>> L = R->evaluate<std::vector<float>>();
  ASSERT_TRUE(L) << L.status().toString();
  EXPECT_EQ(L->size(), 10u);
}

TEST(CompiledModelRunner, BadConstructionIsReported) {
  Expected<std::unique_ptr<CompiledModelRunner>> R =
      CompiledModelRunner::create<ct::policy_head>("logits");
  ASSERT_FALSE(R);
  EXPECT_EQ(R.status().message(),
            "compiled model compiled_test::policy_head has no output 'logits' "
            "(outputs: 'probs', 'log_probs', 'action', 'value')");

  // A model generated for another ABI version is refused, not misread.
  EmbeddedModel Old = ct::policy_head::info();
  Old.AbiVersion = 999;
  Expected<std::unique_ptr<CompiledModelRunner>> O =
      CompiledModelRunner::create(Old);
  ASSERT_FALSE(O);
  EXPECT_NE(O.status().message().find("regenerate it"), std::string::npos);
}

TEST(CompiledModelRunner, ExtraFeaturesAreErrors) {
  auto R = mustCreate(CompiledModelRunner::create<ct::mlp_relu_d1>());
  ASSERT_TRUE(R);
  ASSERT_TRUE(R->addFeature(TensorSpec::create<float>("extra", {1})));
  Expected<std::vector<float>> Y = R->evaluate<std::vector<float>>();
  ASSERT_FALSE(Y);
  EXPECT_EQ(Y.status().message(), "feature 'extra' is not an input of "
                                  "compiled model compiled_test::mlp_relu_d1");
}

TEST(CompiledModelRunner, EveryTestModelRunsThroughTheRunner) {
  for (const CompiledTestModel &M : kCompiledTestModels) {
    SCOPED_TRACE(M.Name);
    auto R = mustCreate(CompiledModelRunner::create(M.Info()));
    ASSERT_TRUE(R);
    ASSERT_TRUE(R->evaluateRaw().isOk()); // zero inputs
    for (size_t I = 0; I < R->outputCount(); ++I) {
      const TensorValue *V = R->output(I);
      ASSERT_NE(V, nullptr);
      EXPECT_EQ(V->spec(), R->outputSpec(I));
    }
  }
}

// ---- as an RL agent ----------------------------------------------------------

namespace {

/// A toy pass: a state of 24 numbers; each decision adds the chosen action
/// to one slot. Two agents alternate ("even" and "odd" steps) for 12 steps.
class ToyEnv : public rl::Environment {
public:
  explicit ToyEnv(bool TwoAgents) : TwoAgents(TwoAgents) {}
  Status reset() override {
    State = randomVector(24, 11);
    Decisions.clear();
    Agents.clear();
    if (TwoAgents)
      setNextAgent("even");
    return Status::ok();
  }
  Status observe(ModelRunner &R) override {
    if (R.featureIndex("obs"))
      return R.setFeature("obs", State);
    // The argmax agent (mlp_relu_d1) sees the first eight slots.
    return R.setFeature("x", std::vector<float>(State.begin(), State.begin() + 8));
  }
  Status step(const rl::Action &A) override {
    Decisions.push_back(A.Index);
    Agents.emplace_back(A.Agent);
    State[A.Step % 24] += 0.5f * static_cast<float>(A.Index) - 1.0f;
    if (TwoAgents)
      setNextAgent(A.Step % 2 ? "even" : "odd");
    if (A.Step + 1 == 12)
      setDone();
    return Status::ok();
  }

  bool TwoAgents;
  std::vector<float> State;
  std::vector<int64_t> Decisions;
  std::vector<std::string> Agents;
};

} // namespace

TEST(CompiledModelRunner, ActsAsAnRLAgent) {
  // Single agent: the policy head's "action" output is the action.
  ToyEnv Env(false);
  auto R = mustCreate(CompiledModelRunner::create<ct::policy_head>());
  ASSERT_TRUE(R);
  rl::Driver D(Env);
  ASSERT_TRUE(D.addAgent("policy", *R).isOk());
  Expected<rl::EpisodeResult> E = D.runEpisode();
  ASSERT_TRUE(E) << E.status().toString();
  EXPECT_EQ(E->Steps, 12u);
  EXPECT_EQ(E->FallbackSteps, 0u);

  // Replay the episode with the generated function directly.
  std::vector<float> State = randomVector(24, 11);
  for (size_t Step = 0; Step < 12; ++Step) {
    float Probs[10], LogProbs[10], Value[1];
    int64_t Action[1];
    ct::policy_head::run(State.data(), Probs, LogProbs, Action, Value);
    EXPECT_EQ(Env.Decisions[Step], Action[0]) << "step " << Step;
    State[Step % 24] += 0.5f * static_cast<float>(Action[0]) - 1.0f;
  }
}

TEST(CompiledModelRunner, TwoCompiledAgentsTakeTurns) {
  ToyEnv Env(true);
  rl::Driver D(Env);
  // "even": the action output (ActionRule::Value); "odd": argmax over the
  // scores of another compiled model.
  ASSERT_TRUE(D.addAgent("even",
                         mustCreate(CompiledModelRunner::create<ct::policy_head>()),
                         rl::ActionRule::Value)
                  .isOk());
  ASSERT_TRUE(D.addAgent("odd",
                         mustCreate(CompiledModelRunner::create<ct::mlp_relu_d1>()),
                         rl::ActionRule::Argmax)
                  .isOk());
  Expected<rl::EpisodeResult> E = D.runEpisode();
  ASSERT_TRUE(E) << E.status().toString();
  ASSERT_EQ(Env.Agents.size(), 12u);
  for (size_t I = 0; I < 12; ++I) {
    EXPECT_EQ(Env.Agents[I], I % 2 ? "odd" : "even");
    EXPECT_GE(Env.Decisions[I], 0);
    EXPECT_LT(Env.Decisions[I], I % 2 ? 4 : 10);
  }
}
