// The RL API: action rules, agents, and episodes driven by the environment
// (single and multi-agent), with fake runners that record what they saw.
#include "fake_runners.h"

#include "mlbridge/rl.h"
#include "toy_phase_ordering.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace mlbridge;
using rltest::FakeScoresRunner;

namespace {

TensorValue floats(std::vector<float> V) {
  TensorValue T(TensorSpec("scores", DType::Float, {static_cast<int64_t>(V.size())}));
  if (!V.empty())
    std::memcpy(T.data(), V.data(), V.size() * sizeof(float));
  return T;
}
template <typename T> TensorValue scalar(T V) {
  TensorValue Out(TensorSpec::create<T>("action"));
  std::memcpy(Out.data(), &V, sizeof(T));
  return Out;
}

/// Agents act in the order of Schedule (one name per step; "" = the only
/// agent); observation "obs" = {step, 0.5}. Records every action.
class ScheduleEnv : public rl::Environment {
public:
  explicit ScheduleEnv(std::vector<std::string> Schedule)
      : Schedule(std::move(Schedule)) {}
  Status reset() override {
    ++Resets;
    Step = 0;
    Actions.clear();
    if (!ResetError.isOk())
      return ResetError;
    if (Schedule.empty())
      setDone();
    else
      setNextAgent(Schedule[0]);
    return Status::ok();
  }
  Status observe(ModelRunner &R) override {
    return R.setFeature("obs", std::vector<float>{float(Step), 0.5f});
  }
  Status step(const rl::Action &A) override {
    if (!StepError.isOk())
      return StepError;
    Actions.push_back(A);
    Agents.emplace_back(A.Agent);
    if (A.Output)
      Outputs.push_back(A.Output->elementCount());
    if (++Step >= Schedule.size())
      setDone();
    else
      setNextAgent(Schedule[Step]);
    return Status::ok();
  }
  std::optional<int64_t> fallbackAction() override { return Fallback; }

  std::vector<std::string> Schedule;
  size_t Step = 0;
  int Resets = 0;
  std::vector<rl::Action> Actions;
  std::vector<std::string> Agents;
  std::vector<size_t> Outputs;
  std::optional<int64_t> Fallback;
  Status ResetError, StepError;
};

std::vector<float> stepsSeen(const FakeScoresRunner &R) {
  std::vector<float> S;
  for (const auto &O : R.SeenObs)
    S.push_back(O.at(0));
  return S;
}

} // namespace

// ---- action rules ----------------------------------------------------------

TEST(RlAction, ArgmaxPicksTheFirstLargest) {
  EXPECT_EQ(*rl::decodeAction(floats({0.1f, 3.f, -2.f, 3.f}), rl::ActionRule::Argmax), 1);
  EXPECT_EQ(*rl::decodeAction(floats({-5.f, -4.f}), rl::ActionRule::Auto), 1);
  TensorValue D(TensorSpec("d", DType::Double, {2, 2})); // any shape: flat index
  double DV[] = {1, 2, 9, 4};
  std::memcpy(D.data(), DV, sizeof DV);
  EXPECT_EQ(*rl::decodeAction(D, rl::ActionRule::Argmax), 2);
  TensorValue I(TensorSpec("i", DType::Int32, {3}));
  int32_t IV[] = {-1, 7, 7};
  std::memcpy(I.data(), IV, sizeof IV);
  EXPECT_EQ(*rl::decodeAction(I, rl::ActionRule::Auto), 1); // 3 ints: argmax
}

TEST(RlAction, NaNEmptyAndStringsAreErrors) {
  auto NaN = rl::decodeAction(floats({1.f, std::numeric_limits<float>::quiet_NaN()}),
                              rl::ActionRule::Argmax);
  ASSERT_FALSE(NaN);
  EXPECT_NE(NaN.status().message().find("NaN at index 1"), std::string::npos);
  auto Empty = rl::decodeAction(floats({}), rl::ActionRule::Argmax);
  ASSERT_FALSE(Empty);
  EXPECT_EQ(Empty.status().code(), ErrorCode::TypeMismatch);
  TensorValue S(TensorSpec("s", DType::String, {3}));
  EXPECT_FALSE(rl::decodeAction(S, rl::ActionRule::Argmax));
}

TEST(RlAction, ValueReadsTheIntegerTheModelSent) {
  EXPECT_EQ(*rl::decodeAction(scalar<int64_t>(4), rl::ActionRule::Value), 4);
  EXPECT_EQ(*rl::decodeAction(scalar<int64_t>(4), rl::ActionRule::Auto), 4);
  EXPECT_EQ(*rl::decodeAction(scalar<uint8_t>(200), rl::ActionRule::Auto), 200);
  EXPECT_EQ(*rl::decodeAction(scalar<int32_t>(-3), rl::ActionRule::Value), -3);
  // One float is a score, not an action: Auto takes the argmax (0).
  EXPECT_EQ(*rl::decodeAction(floats({7.5f}), rl::ActionRule::Auto), 0);
  auto NotInt = rl::decodeAction(floats({7.f}), rl::ActionRule::Value);
  ASSERT_FALSE(NotInt);
  EXPECT_EQ(NotInt.status().code(), ErrorCode::TypeMismatch);
  EXPECT_FALSE(rl::decodeAction(scalar<uint64_t>(~0ull), rl::ActionRule::Value));
}

// ---- agents ----------------------------------------------------------------

TEST(RlAgent, GivesARunnerWithoutAdviceSpecADefaultOne) {
  FakeScoresRunner R("a", std::nullopt);
  R.Answer = [](const auto &, TensorValue &Out) {
    int64_t V = 3;
    std::memcpy(Out.data(), &V, 8);
    return Status::ok();
  };
  rl::Agent A(R); // Auto: expects the action itself
  ASSERT_TRUE(R.setFeature("obs", std::vector<float>{1.f}).isOk());
  Expected<int64_t> X = A.act();
  ASSERT_TRUE(X) << X.status().toString();
  EXPECT_EQ(*X, 3);
  EXPECT_EQ(*R.adviceSpec(), TensorSpec::create<int64_t>("action"));
  EXPECT_EQ(A.output().dataAs<int64_t>()[0], 3);

  FakeScoresRunner S("s", std::nullopt);
  S.Script = {{0.f, 2.f, 1.f}};
  rl::Agent B(S, rl::ActionRule::Argmax);
  ASSERT_TRUE(S.setFeature("obs", std::vector<float>{1.f}).isOk());
  Expected<int64_t> Y = B.act();
  ASSERT_TRUE(Y) << Y.status().toString();
  EXPECT_EQ(*Y, 1);
  EXPECT_EQ(*S.adviceSpec(), TensorSpec("scores", DType::Float, {kDynamicDim}));
  EXPECT_EQ(B.output().elementCount(), 3u); // raw output access
}

TEST(RlAgent, CustomPolicySeesTheRawOutput) {
  auto R = std::make_unique<FakeScoresRunner>("p");
  R->Script = {{0.9f, 0.05f, 0.05f}};
  std::vector<size_t> Seen;
  rl::Agent A(std::move(R), [&](const TensorValue &Out) -> Expected<int64_t> {
    Seen.push_back(Out.elementCount());
    return int64_t(2); // e.g. "never the first action"
  });
  ASSERT_TRUE(A.runner().setFeature("obs", std::vector<float>{0.f}).isOk());
  Expected<int64_t> X = A.act();
  ASSERT_TRUE(X) << X.status().toString();
  EXPECT_EQ(*X, 2);
  EXPECT_EQ(Seen, std::vector<size_t>{3});
}

// ---- episodes --------------------------------------------------------------

TEST(RlDriver, SingleAgentEpisodeRunsUntilDone) {
  ScheduleEnv Env({"", "", "", "", ""});
  FakeScoresRunner R("only");
  R.Script = {{0.f, 1.f, 0.f}, {5.f, 1.f, 0.f}, {0.f, 0.f, 2.f}};
  rl::Driver D(Env);
  ASSERT_TRUE(D.addAgent("only", R, rl::ActionRule::Argmax).isOk());
  std::vector<int64_t> Decided;
  rl::EpisodeOptions O;
  O.OnDecision = [&](const rl::Action &A) { Decided.push_back(A.Index); };
  Expected<rl::EpisodeResult> Res = D.runEpisode(O);
  ASSERT_TRUE(Res) << Res.status().toString();
  EXPECT_EQ(Res->Steps, 5u);
  EXPECT_EQ(Res->FallbackSteps, 0u);
  EXPECT_EQ(Decided, (std::vector<int64_t>{1, 0, 2, 1, 0}));
  EXPECT_EQ(stepsSeen(R), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ(Env.Agents, std::vector<std::string>(5, "only"));
  EXPECT_EQ(Env.Outputs, std::vector<size_t>(5, 3u));
  // A second episode starts from reset again.
  ASSERT_TRUE(D.runEpisode());
  EXPECT_EQ(Env.Resets, 2);
  EXPECT_EQ(R.Calls, 10u);
}

TEST(RlDriver, TwoAgentEpisodeSelectsAgentsAsTheEnvironmentSays) {
  const std::vector<std::string> Schedule = {"a", "a", "b", "a", "b", "b", "a"};
  ScheduleEnv Env(Schedule);
  FakeScoresRunner A("a"), B("b");
  A.Script = {{1.f, 0.f}};      // a always picks 0
  B.Script = {{0.f, 0.f, 9.f}}; // b always picks 2
  rl::Driver D(Env);
  ASSERT_TRUE(D.addAgent("a", A).isOk());
  ASSERT_TRUE(D.addAgent("b", B).isOk());
  EXPECT_EQ(D.agentCount(), 2u);
  Expected<rl::EpisodeResult> Res = D.runEpisode();
  ASSERT_TRUE(Res) << Res.status().toString();
  EXPECT_EQ(Res->Steps, Schedule.size());
  EXPECT_EQ(Env.Agents, Schedule);
  EXPECT_EQ(stepsSeen(A), (std::vector<float>{0, 1, 3, 6}));
  EXPECT_EQ(stepsSeen(B), (std::vector<float>{2, 4, 5}));
  for (const rl::Action &X : Env.Actions)
    EXPECT_EQ(X.Index, X.Agent == "a" ? 0 : 2) << X.Step;
}

TEST(RlDriver, TheEnvironmentHandsOverOnItsOwnLogic) {
  // The toy phase-ordering environment of examples/rl: "pass" chooses
  // unroll (4), so "factor" acts next, then "pass" again, which stops (5).
  toy::PhaseOrderingEnv Env(toy::makeProgram(3));
  FakeScoresRunner Pass("pass"), Factor("factor");
  Pass.Script = {{0, 0, 0, 0, 1, 0}, {0, 0, 0, 0, 0, 1}};
  Factor.Script = {{0, 1, 0}};
  rl::Driver D(Env);
  ASSERT_TRUE(D.addAgent("pass", Pass).isOk());
  ASSERT_TRUE(D.addAgent("factor", Factor).isOk());
  Expected<rl::EpisodeResult> Res = D.runEpisode();
  ASSERT_TRUE(Res) << Res.status().toString();
  ASSERT_EQ(Env.trace().size(), 3u);
  EXPECT_EQ(Env.trace()[0].Agent, "pass");
  EXPECT_EQ(Env.trace()[0].Action, toy::Unroll);
  EXPECT_EQ(Env.trace()[1].Agent, "factor");
  EXPECT_EQ(Env.trace()[1].Action, 1);
  EXPECT_EQ(Env.trace()[2].Agent, "pass");
  EXPECT_EQ(Env.trace()[2].Action, toy::Stop);
  EXPECT_EQ(Pass.Calls, 2u);
  EXPECT_EQ(Factor.Calls, 1u);
  EXPECT_EQ(Env.state()[toy::Loops], 0); // unrolled
  ASSERT_EQ(Pass.SeenObs.at(0).size(), 8u);
}

TEST(RlDriver, UnknownOrMissingAgentIsAnError) {
  ScheduleEnv Env({"a", "c"});
  FakeScoresRunner A("a"), B("b");
  A.Script = B.Script = {{1.f}};
  rl::Driver D(Env);
  ASSERT_TRUE(D.addAgent("a", A).isOk());
  ASSERT_TRUE(D.addAgent("b", B).isOk());
  Expected<rl::EpisodeResult> Res = D.runEpisode();
  ASSERT_FALSE(Res);
  EXPECT_EQ(Res.status().code(), ErrorCode::InvalidArgument);
  const std::string &M = Res.status().message();
  EXPECT_NE(M.find("step 1"), std::string::npos) << M;
  EXPECT_NE(M.find("'c'"), std::string::npos) << M;
  EXPECT_NE(M.find("'a', 'b'"), std::string::npos) << M;

  ScheduleEnv NoChoice({"", ""}); // two agents, none chosen
  rl::Driver D2(NoChoice);
  ASSERT_TRUE(D2.addAgent("a", A).isOk());
  ASSERT_TRUE(D2.addAgent("b", B).isOk());
  Expected<rl::EpisodeResult> R2 = D2.runEpisode();
  ASSERT_FALSE(R2);
  EXPECT_NE(R2.status().message().find("did not choose"), std::string::npos);

  rl::Driver Empty(Env);
  EXPECT_EQ(Empty.runEpisode().status().code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(D.addAgent("a", B).code(), ErrorCode::InvalidArgument); // taken
  EXPECT_EQ(D.agent("a")->runner().featureCount(), A.featureCount());
  EXPECT_EQ(D.agent("zzz"), nullptr);
}

TEST(RlDriver, EndlessEpisodesStopAtMaxSteps) {
  ScheduleEnv Env(std::vector<std::string>(1000, "a"));
  FakeScoresRunner A("a");
  A.Script = {{1.f}};
  rl::Driver D(Env);
  ASSERT_TRUE(D.addAgent("a", A).isOk());
  rl::EpisodeOptions O;
  O.MaxSteps = 10;
  Expected<rl::EpisodeResult> Res = D.runEpisode(O);
  ASSERT_FALSE(Res);
  EXPECT_EQ(Res.status().code(), ErrorCode::Timeout);
  EXPECT_EQ(A.Calls, 10u);
}

TEST(RlDriver, AFailingModelUsesTheEnvironmentsFallback) {
  ScheduleEnv Env({"a", "a", "a"});
  FakeScoresRunner A("a");
  A.FailWith = Status(ErrorCode::PeerClosed, "the model process died");
  rl::Driver D(Env);
  ASSERT_TRUE(D.addAgent("a", A).isOk());
  // Without a fallback: the model's error, saying where.
  Expected<rl::EpisodeResult> Res = D.runEpisode();
  ASSERT_FALSE(Res);
  EXPECT_EQ(Res.status().code(), ErrorCode::PeerClosed);
  EXPECT_NE(Res.status().message().find("step 0, agent 'a'"), std::string::npos);
  EXPECT_NE(Res.status().message().find("died"), std::string::npos);
  // With one: the episode completes on the fallback.
  Env.Fallback = 7;
  Res = D.runEpisode();
  ASSERT_TRUE(Res) << Res.status().toString();
  EXPECT_EQ(Res->Steps, 3u);
  EXPECT_EQ(Res->FallbackSteps, 3u);
  for (const rl::Action &X : Env.Actions) {
    EXPECT_EQ(X.Index, 7);
    EXPECT_TRUE(X.FromFallback);
    EXPECT_EQ(X.Output, nullptr);
  }
}

TEST(RlDriver, EnvironmentErrorsEndTheEpisodeWithContext) {
  ScheduleEnv Env({"a", "a"});
  FakeScoresRunner A("a");
  A.Script = {{1.f}};
  rl::Driver D(Env);
  ASSERT_TRUE(D.addAgent("a", A).isOk());
  Env.ResetError = Status(ErrorCode::InvalidArgument, "no function");
  Expected<rl::EpisodeResult> Res = D.runEpisode();
  ASSERT_FALSE(Res);
  EXPECT_EQ(Res.status().message(), "environment reset: no function");
  Env.ResetError = Status::ok();
  Env.StepError = Status(ErrorCode::Internal, "bad state");
  Res = D.runEpisode();
  ASSERT_FALSE(Res);
  EXPECT_NE(Res.status().message().find("step 0, agent 'a': environment step"),
            std::string::npos)
      << Res.status().message();
}

TEST(RlDriver, EmptyEpisodeTakesNoDecision) {
  ScheduleEnv Env({});
  FakeScoresRunner A("a");
  rl::Driver D(Env);
  ASSERT_TRUE(D.addAgent("a", A).isOk());
  Expected<rl::EpisodeResult> Res = D.runEpisode();
  ASSERT_TRUE(Res);
  EXPECT_EQ(Res->Steps, 0u);
  EXPECT_EQ(A.Calls, 0u);
}

TEST(RlDriver, ContextGoesOnceToEachRunner) {
  ScheduleEnv Env({"a", "b", "c"});
  FakeScoresRunner Shared("shared"), Other("other");
  Shared.Script = Other.Script = {{1.f, 2.f}};
  rl::Driver D(Env);
  ASSERT_TRUE(D.addAgent("a", Shared).isOk());
  ASSERT_TRUE(D.addAgent("b", Shared).isOk()); // two names, one runner
  ASSERT_TRUE(D.addAgent("c", Other).isOk());
  rl::EpisodeOptions O;
  O.Context = "main";
  ASSERT_TRUE(D.runEpisode(O));
  EXPECT_EQ(Shared.Contexts, std::vector<std::string>{"main"});
  EXPECT_EQ(Other.Contexts, std::vector<std::string>{"main"});
  EXPECT_EQ(Shared.Calls, 2u);
  EXPECT_EQ(Other.Calls, 1u);
}
