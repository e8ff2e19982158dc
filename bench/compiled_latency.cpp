//===- bench/compiled_latency.cpp - Compiled model vs ONNX Runtime vs a loop ===//
//
// Per-call latency of the 300 -> 64 -> 15 ReLU MLP
// (tests/cpp/compiled/models/mlp_300_64_15.onnx), measured in one run, on
// one thread:
//
//   hand-loop      a hand-written C++ loop with the same weights (read from
//                  the .onnx file): y = W2 relu(W1 x + b1) + b2, one dot
//                  product per output
//   hand-axpy      the same written for the vectorizer: W transposed, the
//                  input scaled into the accumulated outputs (axpy; the
//                  floor of bench/onnx_latency.cpp)
//   compiled       the model compiled to C++ by mlbridge-model-compiler:
//                  mlp_300_64_15::run(x, y, workspace)
//   compiled-runner  the same behind CompiledModelRunner: features written
//                  in place (getTensor), evaluateRaw()
//   ort            ONNX Runtime's C API alone: OrtApi::Run on pre-made
//                  values (one thread, all graph optimizations)
//   ort-runner     OnnxModelRunner: features in place, evaluateRaw()
//
//   cmake --build build --target mlbridge-compiled-latency
//   build/bench/mlbridge-compiled-latency [--calls N] [--model FILE]
//
// Each variant runs in 7 interleaved rounds of N calls (default 100000);
// the median round is reported. All variants must agree on the outputs.
// The ONNX Runtime rows are present when the build has the ONNX runner.
//
//===----------------------------------------------------------------------===//
#include "mlp_latency.h"

#include "mlbridge/compiled_model_runner.h"
#include "mlp_300_64_15.h"
#include "onnx_subset.pb.h"

#ifdef MLBRIDGE_BENCH_WITH_ORT
#include "mlbridge/onnx_model_runner.h"
#endif

#include <sstream>

#ifndef MLBRIDGE_BENCH_MODEL
#define MLBRIDGE_BENCH_MODEL "mlp_300_64_15.onnx"
#endif

using namespace mlbridge;
using namespace mlp_latency;
using Model = compiled_bench::mlp_300_64_15;

namespace {

/// Reads the MLP's weights from the ONNX file (initializers by shape).
Weights loadWeights(const std::string &Path) {
  std::ifstream In(Path, std::ios::binary);
  if (!In)
    die("cannot open " + Path);
  std::stringstream Bytes;
  Bytes << In.rdbuf();
  onnx_subset::ModelProto M;
  if (!M.ParseFromString(Bytes.str()))
    die(Path + " is not an ONNX model");
  Weights W;
  for (const onnx_subset::TensorProto &T : M.graph().initializer()) {
    std::vector<float> V(T.raw_data().size() / 4);
    std::memcpy(V.data(), T.raw_data().data(), V.size() * 4);
    if (T.dims_size() == 2 && T.dims(0) == kHidden)
      W.W1 = V;
    else if (T.dims_size() == 1 && T.dims(0) == kHidden)
      W.B1 = V;
    else if (T.dims_size() == 2 && T.dims(0) == kOut)
      W.W2 = V;
    else if (T.dims_size() == 1 && T.dims(0) == kOut)
      W.B2 = V;
  }
  W.check(Path);
  return W;
}

} // namespace

int main(int Argc, char **Argv) {
  Program = "compiled_latency";
  std::string Path = MLBRIDGE_BENCH_MODEL;
  const long Calls = parseArgs(
      Argc, Argv, "mlbridge-compiled-latency [--calls N] [--model FILE]",
      "--model", &Path);
  const std::vector<float> X = input();
  float Sink = 0;
  std::vector<Variant> Vs;

  DotLoop Hand{loadWeights(Path)};
  std::vector<float> HandIn = X, HandOut(kOut);
  Vs.push_back(bufferVariant("hand-loop", HandIn.data(), HandOut.data(), X, Sink,
                             [&] { Hand.run(HandIn.data(), HandOut.data()); }));

  AxpyLoop Axpy(Hand.W);
  std::vector<float> AxIn = X, AxOut(kOut);
  Vs.push_back(bufferVariant("hand-axpy", AxIn.data(), AxOut.data(), X, Sink,
                             [&] { Axpy.run(AxIn.data(), AxOut.data()); }));

  std::vector<float> CIn = X, COut(kOut);
  Model::Workspace W;
  Vs.push_back(bufferVariant("compiled", CIn.data(), COut.data(), X, Sink, [&] {
    Model::run(CIn.data(), COut.data(), W);
  }));

  auto CR = CompiledModelRunner::create<Model>();
  if (!CR)
    die(CR.status().toString());
  Vs.push_back(runnerVariant("compiled-runner", **CR, X, Sink));

#ifdef MLBRIDGE_BENCH_WITH_ORT
  OrtRaw Raw(Path);
  std::copy(X.begin(), X.end(), Raw.In.begin()); // the values point at In
  Vs.push_back(bufferVariant("ort", Raw.In.data(), Raw.Out.data(), X, Sink,
                             [&] { Raw.run(); }));

  auto OR = OnnxModelRunner::create(Path);
  if (!OR)
    die(OR.status().toString());
  Vs.push_back(runnerVariant("ort-runner", **OR, X, Sink));
#endif

  measure(Vs, Calls, "300->64->15 MLP", 1e-5f, /*Relative=*/true);
  std::printf("(checksum %g)\n", double(Sink));
  return 0;
}
