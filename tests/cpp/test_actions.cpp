// ModelRunner::evaluateAction and decodeAction: the one rule for a decision
// among discrete actions (the RL API and the C API's mlb_evaluate_action use
// it too).
#include "fake_model_runner.h"
#include "mlbridge/c/mlbridge.h"
#include "mlbridge/c/rl.h"
#include "mlbridge/model_runner.h"

#include "capi/capi_internal.h"

#include <gtest/gtest.h>

#include <limits>

using namespace mlbridge;
using mlbridge::test::FakeModelRunner;

namespace {

std::unique_ptr<FakeModelRunner> scoring(std::vector<float> Scores) {
  auto R = std::make_unique<FakeModelRunner>(
      std::vector<TensorSpec>{TensorSpec::create<float>("x")},
      TensorSpec::create<float>("scores", {kDynamicDim}));
  R->answer<float>(std::move(Scores));
  return R;
}

} // namespace

TEST(EvaluateAction, ArgmaxOfScoresTheFirstOnTies) {
  auto R = scoring({0.5f, 3.f, -1.f, 3.f});
  Expected<int64_t> A = R->evaluateAction();
  ASSERT_TRUE(A) << A.status().toString();
  EXPECT_EQ(*A, 1);
  EXPECT_EQ(R->Calls, 1);
}

TEST(EvaluateAction, TheMaskChoosesAmongLegalActionsOnly) {
  auto R = scoring({0.5f, 3.f, -1.f, 3.f});
  Expected<int64_t> A = R->evaluateAction({true, false, true, true});
  ASSERT_TRUE(A) << A.status().toString();
  EXPECT_EQ(*A, 3) << "the best legal score, not the best score";
  A = R->evaluateAction({true, false, true, false});
  ASSERT_TRUE(A);
  EXPECT_EQ(*A, 0);
}

TEST(EvaluateAction, AllMaskedAndAWrongMaskAreCallerErrors) {
  auto R = scoring({1.f, 2.f});
  Expected<int64_t> A = R->evaluateAction({false, false});
  ASSERT_FALSE(A);
  EXPECT_EQ(A.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(A.status().message().find("no legal action"), std::string::npos);
  A = R->evaluateAction({true, true, true});
  ASSERT_FALSE(A);
  EXPECT_EQ(A.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(A.status().message().find("3 entries"), std::string::npos);
}

TEST(EvaluateAction, EmptyOrNaNScoresAreTheModelsFault) {
  auto Empty = scoring({});
  Expected<int64_t> A = Empty->evaluateAction();
  ASSERT_FALSE(A);
  EXPECT_EQ(A.status().code(), ErrorCode::TypeMismatch);
  EXPECT_NE(A.status().message().find("empty"), std::string::npos);
  auto NaN = scoring({1.f, std::numeric_limits<float>::quiet_NaN()});
  A = NaN->evaluateAction({true, false});
  ASSERT_FALSE(A) << "a NaN is a broken model even where the mask forbids";
  EXPECT_EQ(A.status().code(), ErrorCode::Malformed);
  EXPECT_NE(A.status().message().find("NaN at index 1"), std::string::npos);
}

TEST(EvaluateAction, AnIntegerAdviceIsTheActionAndMustBeLegal) {
  // No advice spec: int64 "action" [1] is declared (defaultActionSpec).
  FakeModelRunner R({TensorSpec::create<float>("x")});
  R.answer<int64_t>({2});
  Expected<int64_t> A = R.evaluateAction();
  ASSERT_TRUE(A) << A.status().toString();
  EXPECT_EQ(*A, 2);
  ASSERT_TRUE(R.adviceSpec());
  EXPECT_EQ(R.adviceSpec()->name(), "action");
  A = R.evaluateAction({true, true, true});
  ASSERT_TRUE(A);
  EXPECT_EQ(*A, 2);
  A = R.evaluateAction({true, true, false});
  ASSERT_FALSE(A);
  EXPECT_EQ(A.status().code(), ErrorCode::Malformed);
  A = R.evaluateAction({true, true});
  ASSERT_FALSE(A) << "action 2 of 2";
  EXPECT_EQ(A.status().code(), ErrorCode::Malformed);
}

TEST(EvaluateAction, ArgmaxRuleDeclaresScores) {
  FakeModelRunner R({TensorSpec::create<float>("x")});
  R.answer<float>({0.f, 1.f});
  Expected<int64_t> A = R.evaluateAction({}, ActionRule::Argmax);
  ASSERT_TRUE(A) << A.status().toString();
  EXPECT_EQ(*A, 1);
  EXPECT_EQ(R.adviceSpec()->name(), "scores");
}

TEST(EvaluateAction, AModelFailureIsReturned) {
  auto R = scoring({1.f});
  R->failWith(Status(ErrorCode::PeerClosed, "gone"));
  Expected<int64_t> A = R->evaluateAction();
  ASSERT_FALSE(A);
  EXPECT_EQ(A.status().code(), ErrorCode::PeerClosed);
}

TEST(EvaluateAction, TheCApiUsesTheSameRule) {
  auto *Fake = new FakeModelRunner({TensorSpec::create<float>("x")},
                                   TensorSpec::create<float>("scores", {kDynamicDim}));
  Fake->answer<float>({0.f, 3.f, 3.f});
  mlb_runner Handle{std::unique_ptr<ModelRunner>(Fake)};
  int64_t Action = -1;
  ASSERT_EQ(mlb_evaluate_action(&Handle, 3, &Action), MLB_OK) << mlb_last_error();
  EXPECT_EQ(Action, 1);
  Fake->answer<float>({1.f, std::numeric_limits<float>::quiet_NaN()});
  EXPECT_EQ(mlb_evaluate_action(&Handle, 2, &Action), MLB_ERR_MALFORMED)
      << "as mlbridge/c/rl.h documents";
}
