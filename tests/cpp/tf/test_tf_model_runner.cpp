// The TF-AOT runner against TensorFlow's own outputs, and its error values.
#include "mlbridge_tf_model_policy.h"
#ifdef MLBRIDGE_TF_HAVE_mlp_300_64_15
#include "mlbridge_tf_model_mlp_300_64_15.h"
#endif
#ifdef MLBRIDGE_TF_HAVE_rl_pass_agent
#include "mlbridge_tf_model_rl_pass_agent.h"
#endif
#ifdef MLBRIDGE_TF_HAVE_rl_factor_agent
#include "mlbridge_tf_model_rl_factor_agent.h"
#endif
#include "tf_reference.h"

#include "mlbridge/tf_model_runner.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlbridge;

namespace {

const EmbeddedModel &policy() { return tfmodels::PolicyModel(); }

std::string ref(const std::string &Model) {
  return std::string(MLBRIDGE_TF_MODELS_DIR) + "/" + Model + ".ref";
}

void expectNear(const std::vector<double> &Got, const tftest::Tensor &Want,
                const std::string &What) {
  ASSERT_EQ(Got.size(), Want.Values.size()) << What;
  for (size_t I = 0; I < Got.size(); ++I)
    EXPECT_NEAR(Got[I], Want.Values[I], 1e-5) << What << " element " << I;
}

/// A runner over Model whose advice is the output called Advice (empty: the
/// default), or nullptr and a test failure.
std::unique_ptr<TfModelRunner> runner(const EmbeddedModel &Model,
                                      std::string Advice = "") {
  TfOptions O;
  O.AdviceOutput = std::move(Advice);
  auto R = TfModelRunner::create(Model, std::move(O));
  EXPECT_TRUE(R) << R.status().toString();
  return R ? std::move(*R) : nullptr;
}

} // namespace

TEST(TfModelRunner, FeaturesAndOutputsComeFromTheSignature) {
  auto R = TfModelRunner::create(policy());
  ASSERT_TRUE(R) << R.status().toString();
  TfModelRunner &Runner = **R;
  ASSERT_EQ(Runner.featureCount(), 3u);
  // Signature order is name order.
  EXPECT_EQ(Runner.featureSpec(0), TensorSpec::create<float>("action_mask", {1, 4}));
  EXPECT_EQ(Runner.featureSpec(1), TensorSpec::create<float>("observation", {1, 8}));
  EXPECT_EQ(Runner.featureSpec(2), TensorSpec::create<int64_t>("step", {1}));
  ASSERT_EQ(Runner.outputCount(), 3u);
  EXPECT_EQ(Runner.outputSpec(0), TensorSpec::create<int64_t>("action", {1}));
  EXPECT_EQ(Runner.outputSpec(1), TensorSpec::create<float>("logits", {1, 4}));
  EXPECT_EQ(Runner.outputSpec(2), TensorSpec::create<float>("value", {1, 1}));
  ASSERT_TRUE(Runner.adviceSpec());
  EXPECT_EQ(Runner.adviceSpec()->name(), "action"); // the first output
  EXPECT_EQ(std::string(Runner.model().Name), "mlbridge_tf_model_policy");
}

TEST(TfModelRunner, PolicyMatchesTensorFlow) {
  std::vector<tftest::Case> Cases = tftest::readReference(ref("policy"));
  ASSERT_GE(Cases.size(), 4u);
  auto RunnerOwned = runner(policy());
  ASSERT_TRUE(RunnerOwned);
  TfModelRunner &Runner = *RunnerOwned;
  for (size_t K = 0; K < Cases.size(); ++K) {
    const tftest::Case &C = Cases[K];
    ASSERT_TRUE(tftest::setInputs(Runner, C).isOk());
    Expected<int64_t> Action = Runner.evaluate<int64_t>();
    ASSERT_TRUE(Action) << Action.status().toString();
    EXPECT_EQ(*Action, int64_t(C.Outputs.at("action").Values[0])) << "case " << K;
    for (const char *Out : {"logits", "value", "action"}) {
      const TensorValue *V = Runner.output(Out);
      ASSERT_NE(V, nullptr) << Out;
      expectNear(tftest::valuesOf(*V), C.Outputs.at(Out),
                 "case " + std::to_string(K) + " " + Out);
    }
  }
}

TEST(TfModelRunner, NpzModelsMatchTensorFlow) {
  // The paper's MLP and the RL agents, built from the ONNX models' weights.
  for (const char *Name : {"mlp_300_64_15", "rl_pass_agent", "rl_factor_agent"}) {
    const EmbeddedModel *M = nullptr;
#ifdef MLBRIDGE_TF_HAVE_mlp_300_64_15
    if (std::string(Name) == "mlp_300_64_15")
      M = &tfmodels::Mlp3006415Model();
#endif
#ifdef MLBRIDGE_TF_HAVE_rl_pass_agent
    if (std::string(Name) == "rl_pass_agent")
      M = &tfmodels::RlPassAgentModel();
#endif
#ifdef MLBRIDGE_TF_HAVE_rl_factor_agent
    if (std::string(Name) == "rl_factor_agent")
      M = &tfmodels::RlFactorAgentModel();
#endif
    if (!M)
      continue; // the .npz is not in models/
    SCOPED_TRACE(Name);
    std::vector<tftest::Case> Cases = tftest::readReference(ref(Name));
    ASSERT_GE(Cases.size(), 4u);
    auto RunnerOwned = runner(*M, "scores");
    ASSERT_TRUE(RunnerOwned);
    TfModelRunner &Runner = *RunnerOwned;
    for (const tftest::Case &C : Cases) {
      ASSERT_TRUE(tftest::setInputs(Runner, C).isOk());
      Expected<std::vector<float>> Scores = Runner.evaluate<std::vector<float>>();
      ASSERT_TRUE(Scores) << Scores.status().toString();
      expectNear(std::vector<double>(Scores->begin(), Scores->end()),
                 C.Outputs.at("scores"), "scores");
    }
  }
}

TEST(TfModelRunner, InPlaceFeaturesAndRawEvaluation) {
  std::vector<tftest::Case> Cases = tftest::readReference(ref("policy"));
  ASSERT_FALSE(Cases.empty());
  const tftest::Case &C = Cases[0];
  auto RunnerOwned = runner(policy(), "logits");
  ASSERT_TRUE(RunnerOwned);
  TfModelRunner &Runner = *RunnerOwned;
  std::optional<size_t> Obs = Runner.featureIndex("observation");
  std::optional<size_t> Mask = Runner.featureIndex("action_mask");
  std::optional<size_t> Step = Runner.featureIndex("step");
  ASSERT_TRUE(Obs && Mask && Step);
  ASSERT_EQ(Runner.getTensor<double>(*Obs), nullptr); // wrong type
  float *O = Runner.getTensor<float>(*Obs);
  float *M = Runner.getTensor<float>(*Mask);
  int64_t *S = Runner.getTensor<int64_t>(*Step);
  ASSERT_TRUE(O && M && S);
  for (int I = 0; I < 8; ++I)
    O[I] = float(C.Inputs.at("observation").Values[I]);
  for (int I = 0; I < 4; ++I)
    M[I] = float(C.Inputs.at("action_mask").Values[I]);
  *S = int64_t(C.Inputs.at("step").Values[0]);
  ASSERT_TRUE(Runner.evaluateRaw().isOk());
  expectNear(tftest::valuesOf(Runner.advice()), C.Outputs.at("logits"), "logits");
  EXPECT_EQ(Runner.advice().spec(), TensorSpec::create<float>("logits", {1, 4}));
}

TEST(TfModelRunner, WrongFeatureNameIsAClearError) {
  auto RunnerOwned = runner(policy());
  ASSERT_TRUE(RunnerOwned);
  TfModelRunner &Runner = *RunnerOwned;
  Status S = Runner.setFeature("obs", std::vector<float>(8, 0.f));
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(S.message().find("unknown feature 'obs'"), std::string::npos) << S.message();
  EXPECT_NE(S.message().find("observation"), std::string::npos) << S.message();
  // The failed setter also fails the next evaluation; the fallback is used.
  Expected<int64_t> A = Runner.evaluate<int64_t>();
  ASSERT_FALSE(A);
  EXPECT_EQ(A.status().code(), ErrorCode::InvalidArgument);
  // evaluateOr: the fallback, never a guess.
  (void)Runner.setFeature("obs", std::vector<float>(8, 0.f));
  EXPECT_EQ(Runner.evaluateOr<int64_t>(-1), -1);
}

TEST(TfModelRunner, AFeatureTheModelDoesNotHaveIsAClearError) {
  auto RunnerOwned = runner(policy());
  ASSERT_TRUE(RunnerOwned);
  TfModelRunner &Runner = *RunnerOwned;
  ASSERT_TRUE(Runner.addFeature(TensorSpec::create<float>("extra", {1})));
  Status S = Runner.evaluateRaw();
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(S.message().find("feature 'extra' is not an input of TF-AOT model"),
            std::string::npos)
      << S.message();
}

TEST(TfModelRunner, WrongShapeOrDtypeIsAClearError) {
  auto RunnerOwned = runner(policy());
  ASSERT_TRUE(RunnerOwned);
  TfModelRunner &Runner = *RunnerOwned;
  Status S = Runner.setFeature("observation", std::vector<float>(7, 0.f));
  EXPECT_EQ(S.code(), ErrorCode::TypeMismatch);
  EXPECT_NE(S.message().find("observation"), std::string::npos) << S.message();
  EXPECT_NE(S.message().find("8 elements"), std::string::npos) << S.message();
  EXPECT_FALSE(Runner.evaluate<int64_t>());

  S = Runner.setFeature("observation", std::vector<double>(8, 0.0));
  EXPECT_EQ(S.code(), ErrorCode::TypeMismatch);
  EXPECT_NE(S.message().find("float"), std::string::npos) << S.message();
  EXPECT_FALSE(Runner.evaluate<int64_t>());

  S = Runner.setFeature("step", int32_t(3)); // the model wants int64
  EXPECT_EQ(S.code(), ErrorCode::TypeMismatch);
  EXPECT_FALSE(Runner.evaluate<int64_t>());

  // After the errors were reported, correct features evaluate again.
  ASSERT_TRUE(Runner.setFeature("step", int64_t(3)).isOk());
  ASSERT_TRUE(Runner.setFeature("action_mask", std::vector<float>{0, 0, 1, 0}).isOk());
  Expected<int64_t> A = Runner.evaluate<int64_t>();
  ASSERT_TRUE(A) << A.status().toString();
  EXPECT_EQ(*A, 2); // the only legal action
}

TEST(TfModelRunner, AdviceIsAnOutputChosenByName) {
  TfOptions BadAdvice;
  BadAdvice.AdviceOutput = "probabilities";
  auto Bad = TfModelRunner::create(policy(), BadAdvice);
  ASSERT_FALSE(Bad);
  EXPECT_EQ(Bad.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(Bad.status().message().find("no output 'probabilities' (outputs: 'action', 'logits', 'value')"),
            std::string::npos)
      << Bad.status().message();

  auto RunnerOwned = runner(policy());

  ASSERT_TRUE(RunnerOwned);

  TfModelRunner &Runner = *RunnerOwned;
  ASSERT_TRUE(Runner.setFeature("action_mask", std::vector<float>{1, 1, 1, 1}).isOk());
  ASSERT_TRUE(Runner.selectAdvice("logits").isOk());
  Expected<std::vector<float>> Logits = Runner.evaluate<std::vector<float>>();
  ASSERT_TRUE(Logits) << Logits.status().toString();
  EXPECT_EQ(Logits->size(), 4u);
  // Typed evaluation checks the output's dtype and size.
  EXPECT_EQ(Runner.evaluate<float>().status().code(), ErrorCode::TypeMismatch);
  EXPECT_EQ(Runner.evaluate<int64_t>().status().code(), ErrorCode::TypeMismatch);
  EXPECT_EQ(Runner.evaluate<std::vector<double>>().status().code(), ErrorCode::TypeMismatch);
  ASSERT_TRUE(Runner.selectAdvice("value").isOk());
  Expected<float> Value = Runner.evaluate<float>();
  ASSERT_TRUE(Value) << Value.status().toString();
  EXPECT_EQ(Runner.selectAdvice("nope").code(), ErrorCode::InvalidArgument);

  // An advice spec set directly selects the output by its name.
  ASSERT_TRUE(Runner.setAdviceSpec(TensorSpec::create<float>("nope", {1})).isOk());
  Status S = Runner.evaluateRaw();
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(S.message().find("no output 'nope'"), std::string::npos) << S.message();
  ASSERT_TRUE(Runner.setAdviceSpec(TensorSpec::create<float>("logits", {2})).isOk());
  EXPECT_EQ(Runner.evaluateRaw().code(), ErrorCode::TypeMismatch);
  ASSERT_TRUE(Runner.setAdviceSpec(TensorSpec::create<float>("logits", {4})).isOk());
  ASSERT_TRUE(Runner.evaluateRaw().isOk());
  EXPECT_EQ(Runner.advice().elementCount(), 4u);
}

TEST(TfModelRunner, OutputsByNameAfterAnEvaluation) {
  auto RunnerOwned = runner(policy());
  ASSERT_TRUE(RunnerOwned);
  TfModelRunner &Runner = *RunnerOwned;
  EXPECT_EQ(Runner.output("logits"), nullptr); // nothing evaluated yet
  ASSERT_TRUE(Runner.setFeature("action_mask", std::vector<float>{0, 1, 0, 0}).isOk());
  Expected<int64_t> A = Runner.evaluate<int64_t>();
  ASSERT_TRUE(A && *A == 1);
  const TensorValue *Logits = Runner.output("logits");
  ASSERT_NE(Logits, nullptr);
  EXPECT_EQ(Logits->spec(), TensorSpec::create<float>("logits", {1, 4}));
  EXPECT_EQ(Runner.output(1), Logits);
  const TensorValue *Action = Runner.output("action");
  ASSERT_NE(Action, nullptr);
  EXPECT_EQ(Action->dataAs<int64_t>()[0], 1);
  EXPECT_EQ(Runner.output("nope"), nullptr);
  EXPECT_EQ(Runner.output(3), nullptr);
}

TEST(TfModelRunner, CloneComputesTheSameAndIsIndependent) {
  std::vector<tftest::Case> Cases = tftest::readReference(ref("policy"));
  ASSERT_GE(Cases.size(), 2u);
  auto AOwned = runner(policy(), "logits");
  ASSERT_TRUE(AOwned);
  TfModelRunner &A = *AOwned;
  auto B = A.clone();
  ASSERT_TRUE(B) << B.status().toString();
  EXPECT_EQ((*B)->adviceSpec()->name(), "logits");
  ASSERT_TRUE(tftest::setInputs(A, Cases[0]).isOk());
  ASSERT_TRUE(tftest::setInputs(**B, Cases[1]).isOk());
  auto LA = A.evaluate<std::vector<float>>();
  auto LB = (*B)->evaluate<std::vector<float>>();
  ASSERT_TRUE(LA && LB);
  expectNear(std::vector<double>(LA->begin(), LA->end()), Cases[0].Outputs.at("logits"), "A");
  expectNear(std::vector<double>(LB->begin(), LB->end()), Cases[1].Outputs.at("logits"), "B");
}

TEST(TfModelRunner, RepeatedEvaluationsAreDeterministic) {
  auto RunnerOwned = runner(policy(), "logits");
  ASSERT_TRUE(RunnerOwned);
  TfModelRunner &Runner = *RunnerOwned;
  ASSERT_TRUE(Runner.setFeature("observation", std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}).isOk());
  auto First = Runner.evaluate<std::vector<float>>();
  ASSERT_TRUE(First);
  for (int I = 0; I < 100; ++I) {
    auto Again = Runner.evaluate<std::vector<float>>();
    ASSERT_TRUE(Again);
    ASSERT_EQ(*Again, *First);
  }
}

