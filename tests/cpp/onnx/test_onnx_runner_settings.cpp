// makeRunner (mlbridge/runner_settings.h) with the ONNX runner's factory.
#include "onnx_test_util.h"

#include "mlbridge/feature_binding.h"
#include "mlbridge/onnx_model_runner.h"
#include "mlbridge/runner_settings.h"

#include <gtest/gtest.h>

using namespace mlbridge;
using onnxtest::model;

namespace {
RunnerSettings onnxSettings(const std::string &File) {
  RunnerSettings S;
  S.Runners.push_back(onnxRunnerFactory());
  S.Model = File;
  return S;
}
} // namespace

TEST(OnnxRunnerSettings, AModelFileMakesAnOnnxRunnerLoadedOnce) {
  RunnerSettings S = onnxSettings(model("multi_io.onnx"));
  EXPECT_EQ(resolveRunnerKind(S), RunnerKind::Onnx);
  auto Best = makeRunner(S, {}, TensorSpec::create<int64_t>("best"));
  ASSERT_TRUE(Best) << Best.status().toString();
  ASSERT_NE(*Best, nullptr);
  ASSERT_TRUE((*Best)->adviceSpec());
  EXPECT_EQ((*Best)->adviceSpec()->name(), "best") << "the output named like the advice";
  auto Other = makeRunner(S, {}, TensorSpec::create<int64_t>("no_such_output"));
  ASSERT_TRUE(Other) << Other.status().toString();
  EXPECT_NE((*Other)->adviceSpec()->name(), "no_such_output") << "the model's own choice";
  auto *A = dynamic_cast<OnnxModelRunner *>(Best->get());
  auto *B = dynamic_cast<OnnxModelRunner *>(Other->get());
  ASSERT_TRUE(A && B);
  EXPECT_EQ(A->model().get(), B->model().get()) << "one session per file and process";
}

TEST(OnnxRunnerSettings, ScoresGiveAnAction) {
  RunnerSettings S = onnxSettings(model("mlp_300_64_15.onnx"));
  const std::vector<TensorSpec> Features = {TensorSpec::create<float>("x", {1, 300})};
  auto B = makeBoundRunner(S, Features, TensorSpec::create<float>("scores", {1, 15}),
                           "model", "the test pass");
  ASSERT_FALSE(B) << "a variable batch dimension is not bound";
  EXPECT_NE(B.status().message().find("the model does not fit the test pass"),
            std::string::npos);
  auto R = makeRunner(S, Features, TensorSpec::create<float>("scores", {1, 15}));
  ASSERT_TRUE(R) << R.status().toString();
  ASSERT_TRUE((*R)->setFeature("x", std::vector<float>(300, 0.25f)).isOk());
  std::vector<bool> Legal(15, false);
  Legal[7] = true;
  Expected<int64_t> Action = (*R)->evaluateAction(Legal);
  ASSERT_TRUE(Action) << Action.status().toString();
  EXPECT_EQ(*Action, 7) << "the only legal action";
  Expected<int64_t> Free = (*R)->evaluateAction();
  ASSERT_TRUE(Free);
  EXPECT_GE(*Free, 0);
  EXPECT_LT(*Free, 15);
}

TEST(OnnxRunnerSettings, AMissingModelIsAPreciseError) {
  auto R = makeRunner(onnxSettings("/nonexistent/p.onnx"), {},
                      TensorSpec::create<int64_t>("a"));
  ASSERT_FALSE(R);
  EXPECT_EQ(R.status().code(), ErrorCode::NotFound);
  EXPECT_EQ(R.status().message().rfind("onnx: loading '/nonexistent/p.onnx'", 0), 0u)
      << R.status().message();
  RunnerSettings NoFile = onnxSettings("");
  NoFile.Kind = RunnerKind::Onnx;
  auto N = makeRunner(NoFile, {}, TensorSpec::create<int64_t>("a"));
  ASSERT_FALSE(N);
  EXPECT_EQ(N.status().message(), "onnx: no model file given");
}
