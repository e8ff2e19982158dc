// makeRunner (mlbridge/runner_settings.h) with a compiled-in model's
// factory: auto chooses it when nothing else is configured.
#include "compiled_test_models.h"
#include "mlbridge/compiled_model_runner.h"
#include "mlbridge/feature_binding.h"
#include "mlbridge/runner_settings.h"

#include <gtest/gtest.h>

using namespace mlbridge;
namespace ct = compiled_test;

TEST(CompiledRunnerSettings, AutoChoosesTheCompiledInModel) {
  RunnerSettings S;
  S.Runners.push_back(compiledRunnerFactory<ct::policy_head>());
  EXPECT_EQ(S.Runners.back().Name, ct::policy_head::info().Name);
  EXPECT_EQ(resolveRunnerKind(S), RunnerKind::Compiled);
  auto R = makeRunner(S, {}, TensorSpec::create<float>("value", {1}));
  ASSERT_TRUE(R) << R.status().toString();
  ASSERT_NE(*R, nullptr);
  EXPECT_EQ(*(*R)->adviceSpec(), TensorSpec::create<float>("value", {1}))
      << "the output named like the advice";
  auto D = makeRunner(S, {}, TensorSpec::create<int64_t>("decision"));
  ASSERT_TRUE(D);
  EXPECT_EQ((*D)->adviceSpec()->name(), "action") << "else the model's metadata";
  S.Channel = "/tmp/mlbridge-no-such-dir/ch";
  EXPECT_EQ(resolveRunnerKind(S), RunnerKind::Pipe) << "a channel set wins";
}

TEST(CompiledRunnerSettings, TheBindingTakesTheModelsInputsOnly) {
  RunnerSettings S;
  S.Runners.push_back(compiledRunnerFactory<ct::two_input>());
  auto B = makeBoundRunner(S,
                           {TensorSpec::create<float>("loop", {1, 6}),
                            TensorSpec::create<int64_t>("unused"),
                            TensorSpec::create<float>("ir", {1, 12})},
                           TensorSpec::create<float>("score", {1, 5}), "model", "the pass");
  ASSERT_TRUE(B) << B.status().toString();
  EXPECT_TRUE(B->Binding.has(0));
  EXPECT_FALSE(B->Binding.has(1));
  EXPECT_TRUE(B->Binding.has(2));
  Expected<int64_t> A = B->Runner->evaluateAction();
  ASSERT_TRUE(A) << A.status().toString();
  EXPECT_GE(*A, 0);
  EXPECT_LT(*A, 5);
  auto Misfit = makeBoundRunner(S, {TensorSpec::create<float>("loop", {1, 6})},
                                TensorSpec::create<float>("score", {1, 5}), "model",
                                "the pass");
  ASSERT_FALSE(Misfit);
  EXPECT_NE(Misfit.status().message().find("the model does not fit the pass: "),
            std::string::npos)
      << Misfit.status().message();
}
