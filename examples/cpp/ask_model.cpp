// The shortest compiler-side program: ask a model over named pipes.
// Start the model first:  python examples/python/serve_model.py /tmp/mlb
// then:                   ./ask_model /tmp/mlb
#include "mlbridge/pipe_model_runner.h"

#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <pipe base path>\n", argv[0]);
    return 2;
  }
  // What a pass needs: a runner, features, a decision (with a fallback
  // used if the model is unreachable or answers nonsense).
  auto Runner = mlbridge::PipeModelRunner::create(argv[1]);
  if (!Runner) {
    std::fprintf(stderr, "%s\n", Runner.status().toString().c_str());
    return 1;
  }
  (*Runner)->populateFeatures(std::make_pair("callee_size", 42),
                              std::make_pair("hotness", 0.75f));
  int Decision = (*Runner)->evaluateOr<int>(/*Fallback=*/0);
  std::printf("decision: %d\n", Decision);
  return 0;
}
