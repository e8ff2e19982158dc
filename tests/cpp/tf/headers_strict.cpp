// The TF-AOT runner's public header needs neither TensorFlow nor exceptions
// or RTTI (checked with -fno-exceptions -fno-rtti -Wpedantic -Werror), and
// the calls a pass makes instantiate under those flags.
#include "mlbridge/tf_model_runner.h"

#include <cstdint>
#include <vector>

int64_t useTfRunner(const mlbridge::EmbeddedModel &Model) {
  mlbridge::TfOptions O;
  O.AdviceOutput = "action";
  auto R = mlbridge::TfModelRunner::create(Model, O);
  if (!R)
    return -1;
  (void)(*R)->setFeature("observation", std::vector<float>(8, 0.5f));
  const mlbridge::TensorValue *Logits = (*R)->output("logits");
  (void)Logits;
  auto Clone = (*R)->clone();
  (void)Clone;
  return (*R)->evaluateOr<int64_t>(-1);
}

int main() { return sizeof(mlbridge::EmbeddedModel) > 0 ? 0 : 1; }
