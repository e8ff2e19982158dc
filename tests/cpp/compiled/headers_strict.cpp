// Compiled with -fno-exceptions -fno-rtti -Wall -Wextra -Werror by ctest:
// the compiled-model headers, and the templates a pass instantiates, build
// in LLVM-style code.
#include "mlbridge/compiled_model.h"
#include "mlbridge/compiled_model_runner.h"

#include <cstdint>
#include <vector>

int64_t useCompiledRunner(const mlbridge::EmbeddedModel &Info) {
  auto R = mlbridge::CompiledModelRunner::create(Info);
  if (!R)
    return -1;
  mlbridge::CompiledModelRunner &Runner = **R;
  (void)Runner.setFeature("obs", std::vector<float>(24, 0.5f));
  if (float *F = Runner.getTensor<float>(0))
    F[0] = 1.0f;
  (void)Runner.selectAdvice("action");
  const mlbridge::TensorValue *P = Runner.output("probs");
  (void)P;
  mlbridge::Expected<std::vector<float>> V =
      Runner.evaluate<std::vector<float>>();
  (void)V;
  return Runner.evaluateOr<int64_t>(-1);
}
