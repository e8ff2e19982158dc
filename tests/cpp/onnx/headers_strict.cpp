// Compiled with -std=c++17 -fno-exceptions -fno-rtti -Wall -Wextra
// -Wpedantic -Werror by ctest: the ONNX runner's public header (free of
// ONNX Runtime's headers) and the templates a pass instantiates build in
// LLVM-style code.
#include "../../headers/in_process_runner_use.h"
#include "mlbridge/onnx_model_runner.h"

float useOnnxRunner() {
  mlbridge::OnnxOptions O;
  O.Model.DimValues = {{"batch", 1}};
  O.AdviceOutput = "scores";
  auto Created = mlbridge::OnnxModelRunner::create("model.onnx", O);
  if (!Created)
    return -1.f;
  auto Model = mlbridge::OnnxModel::load("model.onnx");
  if (Model) {
    auto PerThread = mlbridge::OnnxModelRunner::create(*Model);
    (void)PerThread;
  }
  return useInProcessRunner(**Created, "x", 300, "scores", 0.f);
}
