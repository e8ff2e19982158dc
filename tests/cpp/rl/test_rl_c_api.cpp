// The RL C API: an episode of a C environment (c_env.c, compiled as C11)
// with C callbacks, against runners behind mlb_runner handles.
#include "c_env.h"
#include "fake_runners.h"

#include "capi/capi_internal.h"

#include <gtest/gtest.h>

#include <string>

using rltest::FakeScoresRunner;

namespace {

/// Wraps a fake in a C handle (as the C API's create functions do).
mlb_runner *handle(std::vector<std::vector<float>> Script, FakeScoresRunner **Out) {
  auto R = std::make_unique<FakeScoresRunner>("fake");
  R->Script = std::move(Script);
  *Out = R.get();
  return new mlb_runner{std::move(R)};
}

} // namespace

TEST(RlCApi, EpisodeFollowsTheCEnvironment) {
  c_env_state S{};
  S.steps = 6;
  const char *Schedule[] = {"a", nullptr, "b", "a", "b", nullptr};
  for (int K = 0; K < 6; ++K)
    S.schedule[K] = Schedule[K];
  S.obs_size = 3;
  mlb_rl_env Env = c_env_make(&S);
  FakeScoresRunner *A = nullptr, *B = nullptr;
  mlb_runner *HA = handle({{0.f, 5.f}}, &A);            // a picks 1
  mlb_runner *HB = handle({{3.f, 1.f, 0.f, 2.f}}, &B);  // b picks 0
  const char *Names[] = {"a", "b"};
  mlb_runner *Runners[] = {HA, HB};
  size_t Steps = 0;
  ASSERT_EQ(mlb_rl_run_episode(&Env, Names, Runners, 2, 100, &Steps), MLB_OK)
      << mlb_last_error();
  EXPECT_EQ(Steps, 6u);
  EXPECT_EQ(S.resets, 1);
  // NULL next agent keeps the current one: a a b a b b.
  const char *Want[] = {"a", "a", "b", "a", "b", "b"};
  for (int K = 0; K < 6; ++K) {
    EXPECT_STREQ(S.observed_by[K], Want[K]) << K;
    EXPECT_STREQ(S.acted_by[K], Want[K]) << K;
    EXPECT_EQ(S.actions[K], std::string(Want[K]) == "a" ? 1 : 0) << K;
  }
  ASSERT_EQ(A->SeenObs.size(), 3u);
  EXPECT_EQ(A->SeenObs[2], (std::vector<float>{3.f, 3.1f, 3.2f}));
  EXPECT_EQ(B->SeenObs.size(), 3u);
  mlb_runner_destroy(HA);
  mlb_runner_destroy(HB);
}

TEST(RlCApi, FirstAgentDefaultsToTheFirstName) {
  c_env_state S{};
  S.steps = 2;
  S.obs_size = 1; // schedule all NULL
  mlb_rl_env Env = c_env_make(&S);
  FakeScoresRunner *A = nullptr, *B = nullptr;
  mlb_runner *HA = handle({{1.f}}, &A), *HB = handle({{1.f}}, &B);
  const char *Names[] = {"first", "second"};
  mlb_runner *Runners[] = {HA, HB};
  ASSERT_EQ(mlb_rl_run_episode(&Env, Names, Runners, 2, 10, nullptr), MLB_OK)
      << mlb_last_error();
  EXPECT_STREQ(S.acted_by[0], "first");
  EXPECT_STREQ(S.acted_by[1], "first");
  EXPECT_EQ(B->Calls, 0u);
  mlb_runner_destroy(HA);
  mlb_runner_destroy(HB);
}

TEST(RlCApi, CallbackFailuresAndLimitsAreStatuses) {
  FakeScoresRunner *A = nullptr;
  mlb_runner *HA = handle({{1.f}}, &A);
  const char *Names[] = {"a"};
  mlb_runner *Runners[] = {HA};
  c_env_state S{};
  S.steps = 50;
  S.obs_size = 1;
  mlb_rl_env Env = c_env_make(&S);
  size_t Steps = 99;
  EXPECT_EQ(mlb_rl_run_episode(&Env, Names, Runners, 1, 5, &Steps), MLB_ERR_TIMEOUT);
  EXPECT_EQ(Steps, 5u);
  S.fail_step = MLB_ERR_IO;
  EXPECT_EQ(mlb_rl_run_episode(&Env, Names, Runners, 1, 100, &Steps), MLB_ERR_IO);
  EXPECT_NE(std::string(mlb_last_error()).find("'step'"), std::string::npos)
      << mlb_last_error();
  S.fail_step = MLB_OK;
  S.fail_observe = MLB_ERR_INVALID_ARGUMENT;
  EXPECT_EQ(mlb_rl_run_episode(&Env, Names, Runners, 1, 100, &Steps),
            MLB_ERR_INVALID_ARGUMENT);
  S.fail_observe = MLB_OK;
  S.fail_reset = static_cast<mlb_status>(1234); // not a status: internal
  EXPECT_EQ(mlb_rl_run_episode(&Env, Names, Runners, 1, 100, &Steps), MLB_ERR_INTERNAL);
  S.fail_reset = MLB_OK;
  // A failing model ends the C episode with the model's status.
  A->FailWith = mlbridge::Status(mlbridge::ErrorCode::PeerClosed, "gone");
  EXPECT_EQ(mlb_rl_run_episode(&Env, Names, Runners, 1, 100, &Steps),
            MLB_ERR_PEER_CLOSED);
  EXPECT_EQ(Steps, 0u);
  // Bad arguments.
  EXPECT_EQ(mlb_rl_run_episode(nullptr, Names, Runners, 1, 10, &Steps),
            MLB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlb_rl_run_episode(&Env, Names, Runners, 0, 10, &Steps),
            MLB_ERR_INVALID_ARGUMENT);
  mlb_rl_env NoStep = Env;
  NoStep.step = nullptr;
  EXPECT_EQ(mlb_rl_run_episode(&NoStep, Names, Runners, 1, 10, &Steps),
            MLB_ERR_INVALID_ARGUMENT);
  mlb_runner *NullRunners[] = {nullptr};
  EXPECT_EQ(mlb_rl_run_episode(&Env, Names, NullRunners, 1, 10, &Steps),
            MLB_ERR_INVALID_ARGUMENT);
  mlb_runner_destroy(HA);
}
