// Uses a model compiled by an installed MLBridge: the generated class alone,
// then behind CompiledModelRunner. Exit status 0 when both agree.
#include "Policy.h"
#include "mlbridge/compiled_model_runner.h"

#include <cstdio>
#include <vector>

int main() {
  std::vector<float> Obs(24);
  for (size_t I = 0; I < Obs.size(); ++I)
    Obs[I] = 0.1f * static_cast<float>(I) - 1.0f;
  float Probs[10], LogProbs[10], Value[1];
  std::int64_t Action[1];
  consumer::Policy::run(Obs.data(), Probs, LogProbs, Action, Value);

  auto Runner = mlbridge::CompiledModelRunner::create<consumer::Policy>();
  if (!Runner) {
    std::fprintf(stderr, "%s\n", Runner.status().toString().c_str());
    return 1;
  }
  (*Runner)->setFeature("obs", Obs);
  const std::int64_t Advice = (*Runner)->evaluateOr<std::int64_t>(-1);
  std::printf("action %lld (direct %lld)\n", static_cast<long long>(Advice),
              static_cast<long long>(Action[0]));
  return Advice == Action[0] && Advice >= 0 && Advice < 10 ? 0 : 1;
}
