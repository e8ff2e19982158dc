// Compiled with -std=c++17 -fno-exceptions -fno-rtti -Wall -Wextra
// -Wpedantic -Werror by ctest: the ONNX runner's public header (free of
// ONNX Runtime's headers) and the templates a pass instantiates build in
// LLVM-style code.
#include "mlbridge/onnx_model_runner.h"

#include <string>
#include <vector>

float useOnnxRunner() {
  mlbridge::OnnxOptions O;
  O.Model.DimValues = {{"batch", 1}};
  O.AdviceOutput = "scores";
  auto Created = mlbridge::OnnxModelRunner::create("model.onnx", O);
  if (!Created)
    return -1.f;
  mlbridge::OnnxModelRunner &Runner = **Created;
  (void)Runner.setFeature("x", std::vector<float>(300, 0.f));
  if (float *X = Runner.getTensor<float>(0))
    X[0] = 1.f;
  mlbridge::Expected<std::vector<float>> V = Runner.evaluate<std::vector<float>>();
  (void)V;
  (void)Runner.selectAdvice("scores");
  const mlbridge::TensorValue *T = Runner.output("scores");
  (void)T;
  auto Model = mlbridge::OnnxModel::load("model.onnx");
  if (Model) {
    auto PerThread = mlbridge::OnnxModelRunner::create(*Model);
    (void)PerThread;
  }
  return Runner.evaluateOr<float>(0.f);
}
