//===- tests/headers/in_process_runner_use.h - What a pass calls ---------===//
//
// The calls a compiler pass makes on an in-process runner (ONNX, compiled,
// TF-AOT), as a template the components' headers_strict.cpp instantiate
// under -fno-exceptions -fno-rtti -Werror.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_TESTS_IN_PROCESS_RUNNER_USE_H
#define MLBRIDGE_TESTS_IN_PROCESS_RUNNER_USE_H

#include "mlbridge/in_process_model_runner.h"

#include <cstddef>
#include <vector>

template <typename Runner, typename AdviceT>
AdviceT useInProcessRunner(Runner &R, const char *Feature, size_t Elements,
                           const char *Output, AdviceT Fallback) {
  (void)R.setFeature(Feature, std::vector<float>(Elements, 0.5f));
  if (float *F = R.template getTensor<float>(0))
    F[0] = 1.0f;
  (void)R.selectAdvice(Output);
  const mlbridge::TensorValue *Out = R.output(Output);
  (void)Out;
  mlbridge::Expected<std::vector<float>> V =
      R.template evaluate<std::vector<float>>();
  (void)V;
  auto Clone = R.clone();
  (void)Clone;
  return R.template evaluateOr<AdviceT>(Fallback);
}

#endif // MLBRIDGE_TESTS_IN_PROCESS_RUNNER_USE_H
