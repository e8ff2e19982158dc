// The RL driver runs episodes of the toy phase-ordering environment
// (examples/rl) with TF-AOT agents: the same environment class that runs
// against Python agents over pipes and ONNX agents in-process.
#include "mlbridge_tf_model_rl_factor_agent.h"
#include "mlbridge_tf_model_rl_pass_agent.h"
#include "toy_phase_ordering.h"

#include "mlbridge/rl.h"
#include "mlbridge/tf_model_runner.h"

#ifdef MLBRIDGE_HAVE_ONNX
#include "mlbridge/onnx_model_runner.h"
#endif

#include <gtest/gtest.h>

#include <set>

using namespace mlbridge;

namespace {

int64_t argmax(const float *P, size_t N) {
  size_t Best = 0;
  for (size_t I = 1; I < N; ++I)
    if (P[I] > P[Best])
      Best = I;
  return int64_t(Best);
}

struct Episode {
  std::vector<toy::Decision> Trace;
  size_t Steps = 0;
};

Expected<Episode> runEpisode(ModelRunner &Pass, ModelRunner &Factor,
                             uint64_t Seed) {
  toy::PhaseOrderingEnv Env(toy::makeProgram(Seed));
  rl::Driver D(Env);
  if (Status S = D.addAgent("pass", Pass, rl::ActionRule::Argmax); !S.isOk())
    return S;
  if (Status S = D.addAgent("factor", Factor, rl::ActionRule::Argmax); !S.isOk())
    return S;
  Expected<rl::EpisodeResult> R = D.runEpisode();
  if (!R)
    return R.status();
  return Episode{Env.trace(), R->Steps};
}

/// An agent: the model's "scores" output is the advice.
Expected<std::unique_ptr<TfModelRunner>> agent(const EmbeddedModel &Model) {
  TfOptions O;
  O.AdviceOutput = "scores";
  return TfModelRunner::create(Model, O);
}

} // namespace

TEST(TfModelRunnerRl, DriverRunsEpisodesWithTFAOTAgents) {
  auto PassAgent = agent(tfmodels::RlPassAgentModel());
  auto FactorAgent = agent(tfmodels::RlFactorAgentModel());
  ASSERT_TRUE(PassAgent && FactorAgent);
  TfModelRunner &Pass = **PassAgent, &Factor = **FactorAgent;
  size_t Decisions = 0;
  std::set<std::pair<std::string, int64_t>> Distinct;
  for (uint64_t Seed = 0; Seed < 20; ++Seed) {
    toy::PhaseOrderingEnv Env(toy::makeProgram(Seed));
    rl::Driver D(Env);
    ASSERT_TRUE(D.addAgent("pass", Pass, rl::ActionRule::Argmax).isOk());
    ASSERT_TRUE(D.addAgent("factor", Factor, rl::ActionRule::Argmax).isOk());
    rl::EpisodeOptions Options;
    size_t Mismatches = 0;
    Options.OnDecision = [&](const rl::Action &A) {
      // Each decision is the argmax of the acting agent's TF-AOT output.
      ASSERT_NE(A.Output, nullptr);
      const size_t N = A.Agent == "pass" ? 6 : 3;
      ASSERT_EQ(A.Output->elementCount(), N);
      Mismatches += argmax(A.Output->dataAs<float>(), N) != A.Index;
    };
    Expected<rl::EpisodeResult> R = D.runEpisode(Options);
    ASSERT_TRUE(R) << R.status().toString();
    EXPECT_EQ(Mismatches, 0u);
    EXPECT_EQ(R->FallbackSteps, 0u);
    EXPECT_EQ(Env.trace().size(), R->Steps);
    Decisions += R->Steps;
    for (const toy::Decision &Dec : Env.trace())
      Distinct.insert({Dec.Agent, Dec.Action});
  }
  EXPECT_GE(Decisions, 20u);
  // Both agents act: the environment hands over to "factor" after unroll.
  bool FactorActed = false;
  for (const auto &P : Distinct)
    FactorActed |= P.first == "factor";
  EXPECT_TRUE(FactorActed);
  EXPECT_GE(Distinct.size(), 4u);
}

#ifdef MLBRIDGE_HAVE_ONNX
// Swap the runner, keep the pass: the TF-AOT agents (compiled from the ONNX
// agents' weights) take the same decisions as the ONNX Runtime agents.
TEST(TfModelRunnerRl, SameDecisionsAsTheOnnxAgents) {
  auto PassAgent = agent(tfmodels::RlPassAgentModel());
  auto FactorAgent = agent(tfmodels::RlFactorAgentModel());
  ASSERT_TRUE(PassAgent && FactorAgent);
  TfModelRunner &TfPass = **PassAgent, &TfFactor = **FactorAgent;
  auto OnnxPass = OnnxModelRunner::create(std::string(MLBRIDGE_MODELS_DIR) + "/rl_pass_agent.onnx");
  auto OnnxFactor = OnnxModelRunner::create(std::string(MLBRIDGE_MODELS_DIR) + "/rl_factor_agent.onnx");
  ASSERT_TRUE(OnnxPass) << OnnxPass.status().toString();
  ASSERT_TRUE(OnnxFactor) << OnnxFactor.status().toString();
  for (uint64_t Seed = 0; Seed < 20; ++Seed) {
    Expected<Episode> Tf = runEpisode(TfPass, TfFactor, Seed);
    Expected<Episode> Onnx = runEpisode(**OnnxPass, **OnnxFactor, Seed);
    ASSERT_TRUE(Tf) << Tf.status().toString();
    ASSERT_TRUE(Onnx) << Onnx.status().toString();
    ASSERT_EQ(Tf->Trace.size(), Onnx->Trace.size()) << "seed " << Seed;
    for (size_t I = 0; I < Tf->Trace.size(); ++I) {
      EXPECT_EQ(Tf->Trace[I].Agent, Onnx->Trace[I].Agent) << "seed " << Seed;
      EXPECT_EQ(Tf->Trace[I].Action, Onnx->Trace[I].Action) << "seed " << Seed;
    }
  }
}
#endif
