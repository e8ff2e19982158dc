// Built against the installed package: loads the MLP and evaluates it.
#include <mlbridge/onnx_model_runner.h>

#include <cstdio>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  auto Runner = mlbridge::OnnxModelRunner::create(argv[1]);
  if (!Runner) {
    std::fprintf(stderr, "%s\n", Runner.status().toString().c_str());
    return 3;
  }
  (*Runner)->setFeature("x", std::vector<float>(300, 0.5f));
  auto Scores = (*Runner)->evaluate<std::vector<float>>();
  if (!Scores || Scores->size() != 15)
    return 4;
  auto Missing = mlbridge::OnnxModelRunner::create("/nonexistent.onnx");
  if (Missing || Missing.status().code() != mlbridge::ErrorCode::NotFound)
    return 5;
  std::printf("onnx consumer ok: %g\n", static_cast<double>((*Scores)[0]));
  return 0;
}
