//===- bench/onnx_latency.cpp - In-process ONNX latency vs. the floor ------===//
//
// Per-call latency of the paper's 300 -> 64 -> 15 MLP (models/
// mlp_300_64_15.onnx), measured in one run, one thread:
//
//   floor    a hand-written C++ loop doing the same arithmetic with the same
//            weights (read from models/mlp_300_64_15.npz), for AVX2 when the
//            CPU has it, as ONNX Runtime's kernels are;
//   ort-raw  ONNX Runtime's C API alone: OrtApi::Run over pre-made values,
//            and RunWithBinding over values bound once;
//   runner   OnnxModelRunner: write the features in place, evaluateRaw().
//
//   cmake --build build --target mlbridge-onnx-latency
//   build/bench/mlbridge-onnx-latency [--calls N] [--model-dir DIR]
//
// Each variant runs in 7 interleaved rounds of N calls (default 100000);
// the median round is reported. The variants must agree on the outputs.
//
//===----------------------------------------------------------------------===//

#include "mlp_latency.h"

#include "mlbridge/onnx_model_runner.h"

using namespace mlbridge;
using namespace mlp_latency;

int main(int Argc, char **Argv) {
  Program = "onnx_latency";
  std::string Dir = MLBRIDGE_SOURCE_DIR "/models";
  const long Calls =
      parseArgs(Argc, Argv, "mlbridge-onnx-latency [--calls N] [--model-dir DIR]",
                "--model-dir", &Dir);
  const std::string ModelPath = Dir + "/mlp_300_64_15.onnx";
  const std::vector<float> X = input();
  float Sink = 0.f;
  std::vector<Variant> Vs;

  AxpyLoop Hand(readWeights(Dir + "/mlp_300_64_15.npz"));
  std::vector<float> HandIn = X, HandOut(kOut);
  Vs.push_back(bufferVariant(
      "floor: hand-written C++ loop", HandIn.data(), HandOut.data(), X, Sink,
      [&] { Hand.runBest(HandIn.data(), HandOut.data()); }));

  // ONNX Runtime alone, same session settings as the runner's.
  OrtRaw Raw(ModelPath);
  std::copy(X.begin(), X.end(), Raw.In.begin()); // the values point at In
  Vs.push_back(bufferVariant("ONNX Runtime C API alone (Run)", Raw.In.data(),
                             Raw.Out.data(), X, Sink, [&] { Raw.run(); }));
  Vs.push_back(bufferVariant("ONNX Runtime C API (RunWithBinding)",
                             Raw.In.data(), Raw.Out.data(), X, Sink,
                             [&] { Raw.runBound(); }));

  // The runner: batch fixed to 1, so the input is written in place.
  OnnxOptions Opts;
  Opts.Model.DimValues = {{"batch", 1}};
  auto Runner = OnnxModelRunner::create(ModelPath, Opts);
  if (!Runner)
    die(Runner.status().toString());
  Vs.push_back(runnerVariant("OnnxModelRunner::evaluateRaw", **Runner, X, Sink));

  measure(Vs, Calls, "300->64->15 MLP", 1e-4f);
  std::printf("  (checksum %g)\n", static_cast<double>(Sink));
  return 0;
}
