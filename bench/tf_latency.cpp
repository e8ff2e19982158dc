//===- bench/tf_latency.cpp - TF AOT vs ONNX Runtime vs a hand loop ---------===//
//
// Per-call latency of the paper's 300 -> 64 -> 15 MLP with the weights of
// models/mlp_300_64_15.npz, measured in one run on one thread:
//
//   floor      a hand-written C++ loop doing the same arithmetic;
//   xla-raw    the XLA AOT compiled function alone (write the argument
//              buffer, Run, read the result) -- no runner;
//   tf-aot     TfModelRunner: features written in place, evaluateRaw();
//   onnx       OnnxModelRunner on models/mlp_300_64_15.onnx (if built);
//   compiled   CompiledModelRunner, the same ONNX model compiled to C++ by
//              mlbridge-model-compiler (if built).
//
//   cmake --build build --target mlbridge-tf-latency
//   build/bench/mlbridge-tf-latency [--calls N]
//
// Each variant runs in 7 interleaved rounds of N calls (default 100000);
// the median round is reported. All variants must agree on the outputs
// (1e-4), or the program fails.
//
//===----------------------------------------------------------------------===//

#include "mlp_latency.h"

#include "mlbridge_tf_model_mlp_300_64_15.h"

#include "mlbridge/tf_model_runner.h"
#ifdef MLBRIDGE_HAVE_ONNX
#include "mlbridge/onnx_model_runner.h"
#endif
#ifdef MLBRIDGE_HAVE_COMPILED
#include "mlbridge/compiled_model_runner.h"
#include "tfbench_mlp_300_64_15.h"
#endif

using namespace mlbridge;
using namespace mlp_latency;

int main(int Argc, char **Argv) {
  Program = "tf_latency";
  const long Calls = parseArgs(Argc, Argv, "mlbridge-tf-latency [--calls N]");
  const std::string Models = std::string(MLBRIDGE_SOURCE_DIR) + "/models";
  const std::vector<float> X = input();
  float Sink = 0;
  std::vector<Variant> Vs;

  AxpyLoop Hand(readWeights(Models + "/mlp_300_64_15.npz"));
  std::vector<float> HandIn = X, HandOut(kOut);
  Vs.push_back(bufferVariant("floor (hand-written loop)", HandIn.data(),
                             HandOut.data(), X, Sink,
                             [&] { Hand.run(HandIn.data(), HandOut.data()); }));

  // The compiled function alone; its result buffer is known after a Run.
  const EmbeddedModel &M = tfmodels::Mlp3006415Model();
  void *Raw = M.Create();
  if (!Raw)
    die("cannot create the XLA function");
  float *RawIn = static_cast<float *>(M.InputBuffer(Raw, 0));
  if (!RawIn)
    die("the compiled model has no input 0");
  std::copy(X.begin(), X.end(), RawIn);
  Vs.push_back({"xla-raw (compiled function alone)",
                [&](long I) {
                  perturb(RawIn, X, I);
                  if (!M.Run(Raw))
                    die("Run failed");
                },
                [&] {
                  return static_cast<const float *>(M.OutputBuffer(Raw, 0));
                }});

  TfOptions TfO;
  TfO.AdviceOutput = "scores";
  auto Tf = TfModelRunner::create(M, TfO);
  if (!Tf)
    die(Tf.status().toString());
  Vs.push_back(runnerVariant("tf-aot (TfModelRunner)", **Tf, X, Sink));

#ifdef MLBRIDGE_HAVE_ONNX
  OnnxOptions OO;
  OO.Model.DimValues = {{"batch", 1}};
  auto Onnx = OnnxModelRunner::create(Models + "/mlp_300_64_15.onnx", OO);
  if (!Onnx)
    die(Onnx.status().toString());
  Vs.push_back(
      runnerVariant("onnx (OnnxModelRunner, ONNX Runtime)", **Onnx, X, Sink));
#endif
#ifdef MLBRIDGE_HAVE_COMPILED
  auto Comp = CompiledModelRunner::create<tfbench::mlp_300_64_15>("scores");
  if (!Comp)
    die(Comp.status().toString());
  Vs.push_back(runnerVariant("compiled (CompiledModelRunner, ONNX -> C++)",
                             **Comp, X, Sink));
#endif

  measure(Vs, Calls, "300 -> 64 -> 15 MLP", 1e-4f);
  M.Destroy(Raw);
  std::printf("  (checksum %g)\n", double(Sink));
  return 0;
}
