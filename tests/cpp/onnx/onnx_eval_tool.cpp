// mlbridge-onnx-eval: evaluates a model with OnnxModelRunner on the cases
// read from stdin (the models/reference.txt format, inputs only) and writes
// every output in the same format. tests/python/test_onnx_*.py compares
// the result with PyTorch and the onnxruntime Python package.
//   mlbridge-onnx-eval MODEL.onnx < cases.txt
#include "reference.h"

#include "mlbridge/onnx_model_runner.h"

#include <cstdio>
#include <iostream>

using namespace mlbridge;

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mlbridge-onnx-eval MODEL.onnx < cases\n");
    return 2;
  }
  auto R = OnnxModelRunner::create(argv[1]);
  if (!R) {
    std::fprintf(stderr, "error: %s\n", R.status().toString().c_str());
    return 1;
  }
  std::string Error;
  std::vector<reftest::ModelCases> Models = reftest::parse(std::cin, Error);
  if (!Error.empty() || Models.size() != 1) {
    std::fprintf(stderr, "error: bad input: %s\n", Error.c_str());
    return 2;
  }
  std::string Out = "model " + Models[0].File + "\n";
  for (const reftest::Case &C : Models[0].Cases) {
    for (const TensorValue &In : C.Inputs)
      if (Status S = (*R)->setFeatureBytes(In.spec().name(), In.type(),
                                           In.spec().shape(), In.data(),
                                           In.byteSize());
          !S.isOk()) {
        std::fprintf(stderr, "error: %s\n", S.toString().c_str());
        return 1;
      }
    if (Status S = (*R)->evaluateRaw(); !S.isOk()) {
      std::fprintf(stderr, "error: %s\n", S.toString().c_str());
      return 1;
    }
    Out += "case\n";
    for (size_t K = 0; K < (*R)->model()->outputs().size(); ++K)
      Out += reftest::format("output", *(*R)->output(K)) + "\n";
    Out += "end\n";
  }
  std::fputs(Out.c_str(), stdout);
  return 0;
}
