// RL episodes with in-process ONNX agents: the driver (C++ and C API) takes
// the argmax of the exported agents' scores at every decision.
#include "onnx_test_util.h"

#include "../rl/c_env.h"
#include "mlbridge/c/onnx.h"
#include "mlbridge/onnx_model_runner.h"
#include "mlbridge/rl.h"
#include "toy_phase_ordering.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace mlbridge;

namespace {

int64_t argmaxOf(const std::vector<float> &V) {
  return std::max_element(V.begin(), V.end()) - V.begin();
}

std::vector<float> scoresOf(OnnxModelRunner &R, const std::vector<float> &Obs) {
  if (!R.setFeature("obs", Obs).isOk())
    return {};
  Expected<std::vector<float>> S = R.evaluate<std::vector<float>>();
  return S ? *S : std::vector<float>();
}

} // namespace

TEST(OnnxRl, ToyEpisodesDecideByTheAgentsArgmax) {
  auto Pass = OnnxModelRunner::create(onnxtest::model("rl_pass_agent.onnx"));
  auto Factor = OnnxModelRunner::create(onnxtest::model("rl_factor_agent.onnx"));
  auto Check = OnnxModelRunner::create(onnxtest::model("rl_pass_agent.onnx"));
  ASSERT_TRUE(Pass && Factor && Check);
  std::set<std::pair<std::string, int64_t>> Distinct;
  size_t Decisions = 0, Mismatches = 0;
  for (uint64_t Program = 0; Program < 8; ++Program) {
    toy::PhaseOrderingEnv Env(toy::makeProgram(Program));
    rl::Driver D(Env);
    ASSERT_TRUE(D.addAgent("pass", **Pass).isOk());
    ASSERT_TRUE(D.addAgent("factor", **Factor).isOk());
    rl::EpisodeOptions O;
    O.OnDecision = [&](const rl::Action &A) {
      ++Decisions;
      Distinct.emplace(std::string(A.Agent), A.Index);
      ASSERT_NE(A.Output, nullptr);
      const float *S = A.Output->dataAs<float>();
      std::vector<float> Scores(S, S + A.Output->elementCount());
      if (A.Index != argmaxOf(Scores))
        ++Mismatches;
      if (A.Agent == "pass") { // the same model, evaluated on its own
        const float *Obs = D.agent("pass")->runner().getTensor<float>(0);
        std::vector<float> Again = scoresOf(**Check, std::vector<float>(Obs, Obs + 8));
        EXPECT_EQ(Again, Scores);
      }
    };
    Expected<rl::EpisodeResult> R = D.runEpisode(O);
    ASSERT_TRUE(R) << R.status().toString();
    EXPECT_EQ(R->FallbackSteps, 0u);
    EXPECT_EQ(Env.trace().size(), R->Steps);
    EXPECT_EQ(Env.trace().back().Agent, "pass");
  }
  EXPECT_EQ(Mismatches, 0u);
  EXPECT_GE(Decisions, 16u);
  // The trained agents really decide: several passes and factors occur.
  EXPECT_GE(Distinct.size(), 5u);
}

TEST(OnnxRl, CApiEpisodeWithAnOnnxAgent) {
  mlb_runner *Agent = nullptr;
  ASSERT_EQ(mlb_onnx_runner_create(onnxtest::model("rl_pass_agent.onnx").c_str(),
                                   nullptr, &Agent),
            MLB_OK)
      << mlb_last_error();
  c_env_state S{};
  S.steps = 5;
  S.obs_size = 8;
  mlb_rl_env Env = c_env_make(&S);
  const char *Names[] = {"pass"};
  size_t Steps = 0;
  ASSERT_EQ(mlb_rl_run_episode(&Env, Names, &Agent, 1, 100, &Steps), MLB_OK)
      << mlb_last_error();
  EXPECT_EQ(Steps, 5u);
  auto Check = OnnxModelRunner::create(onnxtest::model("rl_pass_agent.onnx"));
  ASSERT_TRUE(Check);
  for (int K = 0; K < 5; ++K) {
    std::vector<float> Obs(8);
    for (int J = 0; J < 8; ++J)
      Obs[J] = static_cast<float>(K) + static_cast<float>(J) / 10.0f;
    std::vector<float> Scores = scoresOf(**Check, Obs);
    ASSERT_EQ(Scores.size(), 6u);
    EXPECT_EQ(S.actions[K], argmaxOf(Scores)) << "step " << K;
    EXPECT_STREQ(S.acted_by[K], "pass");
  }
  // A wrong observation size is the runner's error, through the C callback.
  S.obs_size = 7;
  EXPECT_EQ(mlb_rl_run_episode(&Env, Names, &Agent, 1, 100, &Steps),
            MLB_ERR_TYPE_MISMATCH);
  mlb_runner_destroy(Agent);
}
