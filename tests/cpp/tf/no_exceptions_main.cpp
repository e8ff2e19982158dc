// A "compiler" built like LLVM (-fno-exceptions -fno-rtti) that links a
// TF-AOT model and evaluates it: the generated header and the runner work
// under those flags. Exit status 0 when the advice is the only legal action.
#include "mlbridge_tf_model_policy.h"

#include <cstdio>
#include <vector>

int main() {
  auto Runner = mlbridge::TfModelRunner::create(mlbridge::tfmodels::PolicyModel());
  if (!Runner) {
    std::fprintf(stderr, "%s\n", Runner.status().toString().c_str());
    return 1;
  }
  (*Runner)->setFeature("observation", std::vector<float>(8, 0.5f));
  (*Runner)->setFeature("action_mask", std::vector<float>{0, 0, 0, 1});
  (*Runner)->setFeature("step", int64_t(1));
  int64_t Action = (*Runner)->evaluateOr<int64_t>(-1);
  if (Action != 3) {
    std::fprintf(stderr, "expected action 3, got %lld\n", (long long)Action);
    return 1;
  }
  return 0;
}
