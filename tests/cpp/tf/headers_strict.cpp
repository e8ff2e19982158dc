// The TF-AOT runner's public header needs neither TensorFlow nor exceptions
// or RTTI (checked with -fno-exceptions -fno-rtti -Wpedantic -Werror), and
// the calls a pass makes instantiate under those flags.
#include "../../headers/in_process_runner_use.h"
#include "mlbridge/tf_model_runner.h"

#include <cstdint>

int64_t useTfRunner(const mlbridge::EmbeddedModel &Model) {
  mlbridge::TfOptions O;
  O.AdviceOutput = "action";
  auto R = mlbridge::TfModelRunner::create(Model, O);
  if (!R)
    return -1;
  return useInProcessRunner(**R, "observation", 8, "logits", int64_t{-1});
}

int main() { return sizeof(mlbridge::EmbeddedModel) > 0 ? 0 : 1; }
