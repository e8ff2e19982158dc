// makeRunner (mlbridge/runner_settings.h) with a TF-AOT model's factory.
#include "mlbridge_tf_model_policy.h"

#include "mlbridge/runner_settings.h"
#include "mlbridge/tf_model_runner.h"

#include <gtest/gtest.h>

using namespace mlbridge;

TEST(TfRunnerSettings, AutoChoosesTheCompiledInModel) {
  RunnerSettings S;
  S.Runners.push_back(tfRunnerFactory(tfmodels::PolicyModel()));
  EXPECT_EQ(S.Runners.back().Name, "mlbridge_tf_model_policy");
  EXPECT_EQ(resolveRunnerKind(S), RunnerKind::Tf);
  auto R = makeRunner(S, {}, TensorSpec::create<float>("logits", {1, 4}));
  ASSERT_TRUE(R) << R.status().toString();
  ASSERT_NE(*R, nullptr);
  EXPECT_EQ((*R)->adviceSpec()->name(), "logits");
  std::vector<bool> Legal = {false, false, true, false};
  Expected<int64_t> A = (*R)->evaluateAction(Legal);
  ASSERT_TRUE(A) << A.status().toString();
  EXPECT_EQ(*A, 2);
}
