//===- bench/compiled_latency.cpp - Compiled model vs ONNX Runtime vs a loop ===//
//
// Per-call latency of the 300 -> 64 -> 15 ReLU MLP
// (tests/cpp/compiled/models/mlp_300_64_15.onnx), measured in one run, on
// one thread:
//
//   hand-loop      a hand-written C++ loop with the same weights (read from
//                  the .onnx file): y = W2 relu(W1 x + b1) + b2, one dot
//                  product per output (the loop bench/onnx_latency.cpp uses)
//   hand-axpy      the same written for the vectorizer: W transposed, the
//                  input scaled into the accumulated outputs (axpy)
//   compiled       the model compiled to C++ by mlbridge-model-compiler:
//                  mlp_300_64_15::run(x, y, workspace)
//   compiled-runner  the same behind CompiledModelRunner: features written
//                  in place (getTensor), evaluateRaw()
//   ort            ONNX Runtime's C API alone: OrtApi::Run on pre-made
//                  values (one thread, all graph optimizations)
//   ort-runner     OnnxModelRunner: features in place, evaluateRaw()
//
//   cmake --build build --target mlbridge-compiled-latency
//   build/bench/mlbridge-compiled-latency [--calls N]
//
// Each variant runs in 7 interleaved rounds of N calls (default 100000);
// the median round is reported. All variants must agree on the outputs.
// The ONNX Runtime rows are present when the build has the ONNX runner.
//
//===----------------------------------------------------------------------===//
#include "mlbridge/compiled_model_runner.h"
#include "mlp_300_64_15.h"
#include "onnx_subset.pb.h"

#ifdef MLBRIDGE_BENCH_WITH_ORT
#include "mlbridge/onnx_model_runner.h"
#include <onnxruntime_c_api.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#ifndef MLBRIDGE_BENCH_MODEL
#define MLBRIDGE_BENCH_MODEL "mlp_300_64_15.onnx"
#endif

using namespace mlbridge;
using Clock = std::chrono::steady_clock;
using Model = compiled_bench::mlp_300_64_15;

namespace {

[[noreturn]] void die(const std::string &Message) {
  std::fprintf(stderr, "compiled_latency: %s\n", Message.c_str());
  std::exit(1);
}

/// The floor: the same arithmetic written by hand (PyTorch layout W[out][in]).
struct HandMLP {
  std::vector<float> W1, B1, W2, B2;
  static constexpr int In = 300, Hidden = 64, Out = 15;
  void run(const float *X, float *Y) const {
    float H[Hidden];
    for (int J = 0; J < Hidden; ++J) {
      const float *W = &W1[size_t(J) * In];
      float S = 0.f;
      for (int K = 0; K < In; ++K)
        S += W[K] * X[K];
      S += B1[J];
      H[J] = S > 0.f ? S : 0.f;
    }
    for (int J = 0; J < Out; ++J) {
      const float *W = &W2[size_t(J) * Hidden];
      float S = 0.f;
      for (int K = 0; K < Hidden; ++K)
        S += W[K] * H[K];
      Y[J] = S + B2[J];
    }
  }
};

/// The same, written so the compiler vectorizes it: W transposed once, each
/// input element scaled into the outputs (no reordered sums either).
struct HandAxpyMLP {
  std::vector<float> W1t, B1, W2t, B2; // W[in][out]
  explicit HandAxpyMLP(const HandMLP &H)
      : W1t(H.W1.size()), B1(H.B1), W2t(H.W2.size()), B2(H.B2) {
    for (int J = 0; J < HandMLP::Hidden; ++J)
      for (int K = 0; K < HandMLP::In; ++K)
        W1t[size_t(K) * HandMLP::Hidden + J] = H.W1[size_t(J) * HandMLP::In + K];
    for (int J = 0; J < HandMLP::Out; ++J)
      for (int K = 0; K < HandMLP::Hidden; ++K)
        W2t[size_t(K) * HandMLP::Out + J] = H.W2[size_t(J) * HandMLP::Hidden + K];
  }
  void run(const float *X, float *Y) const {
    float H[HandMLP::Hidden];
    std::copy(B1.begin(), B1.end(), H);
    for (int K = 0; K < HandMLP::In; ++K) {
      const float Xk = X[K];
      const float *W = &W1t[size_t(K) * HandMLP::Hidden];
      for (int J = 0; J < HandMLP::Hidden; ++J)
        H[J] += Xk * W[J];
    }
    for (float &V : H)
      V = V > 0.f ? V : 0.f;
    std::copy(B2.begin(), B2.end(), Y);
    for (int K = 0; K < HandMLP::Hidden; ++K) {
      const float Hk = H[K];
      const float *W = &W2t[size_t(K) * HandMLP::Out];
      for (int J = 0; J < HandMLP::Out; ++J)
        Y[J] += Hk * W[J];
    }
  }
};

/// Reads the MLP's weights from the ONNX file (initializers by shape).
HandMLP loadWeights(const std::string &Path) {
  std::ifstream In(Path, std::ios::binary);
  if (!In)
    die("cannot open " + Path);
  std::stringstream Bytes;
  Bytes << In.rdbuf();
  onnx_subset::ModelProto M;
  if (!M.ParseFromString(Bytes.str()))
    die(Path + " is not an ONNX model");
  HandMLP H;
  for (const onnx_subset::TensorProto &T : M.graph().initializer()) {
    std::vector<float> V(T.raw_data().size() / 4);
    std::memcpy(V.data(), T.raw_data().data(), V.size() * 4);
    if (T.dims_size() == 2 && T.dims(0) == 64)
      H.W1 = V;
    else if (T.dims_size() == 1 && T.dims(0) == 64)
      H.B1 = V;
    else if (T.dims_size() == 2 && T.dims(0) == 15)
      H.W2 = V;
    else if (T.dims_size() == 1 && T.dims(0) == 15)
      H.B2 = V;
  }
  if (H.W1.size() != 300 * 64 || H.B1.size() != 64 || H.W2.size() != 64 * 15 ||
      H.B2.size() != 15)
    die("unexpected weights in " + Path);
  return H;
}

struct Variant {
  const char *Name;
  std::function<void(long)> Call; // one evaluation; argument: call number
  const float *Output;            // where the scores are after a call
  std::vector<double> Rounds;
};

#ifdef MLBRIDGE_BENCH_WITH_ORT
void check(OrtStatus *S, const char *What) {
  if (S)
    die(std::string(What) + ": " +
        OrtGetApiBase()->GetApi(ORT_API_VERSION)->GetErrorMessage(S));
}
#endif

} // namespace

int main(int Argc, char **Argv) {
  long Calls = 100000;
  std::string Path = MLBRIDGE_BENCH_MODEL;
  for (int I = 1; I < Argc; ++I) {
    if (!std::strcmp(Argv[I], "--calls") && I + 1 < Argc)
      Calls = std::strtol(Argv[++I], nullptr, 10);
    else if (!std::strcmp(Argv[I], "--model") && I + 1 < Argc)
      Path = Argv[++I];
    else
      die("usage: mlbridge-compiled-latency [--calls N] [--model FILE]");
  }
  if (Calls < 1)
    die("--calls must be >= 1");

  // The same input for every variant; one element changes per call so no
  // variant can skip work.
  std::vector<float> X(300);
  unsigned Seed = 12345;
  for (float &V : X) {
    Seed = Seed * 1103515245u + 12345u;
    V = static_cast<float>((Seed >> 9) % 2000) / 1000.f - 1.f;
  }
  auto Perturb = [&](float *In, long I) {
    In[I % 300] = X[size_t(I % 300)] + 1e-3f * float(I & 7);
  };
  float Sink = 0;
  std::vector<Variant> Vs;

  HandMLP Hand = loadWeights(Path);
  std::vector<float> HandIn = X, HandOut(15);
  Vs.push_back({"hand-loop", [&](long I) {
                  Perturb(HandIn.data(), I);
                  Hand.run(HandIn.data(), HandOut.data());
                  Sink += HandOut[0];
                }, HandOut.data(), {}});

  HandAxpyMLP Axpy(Hand);
  std::vector<float> AxIn = X, AxOut(15);
  Vs.push_back({"hand-axpy", [&](long I) {
                  Perturb(AxIn.data(), I);
                  Axpy.run(AxIn.data(), AxOut.data());
                  Sink += AxOut[0];
                }, AxOut.data(), {}});

  std::vector<float> CIn = X, COut(15);
  Model::Workspace W;
  Vs.push_back({"compiled", [&](long I) {
                  Perturb(CIn.data(), I);
                  Model::run(CIn.data(), COut.data(), W);
                  Sink += COut[0];
                }, COut.data(), {}});

  auto CR = CompiledModelRunner::create<Model>();
  if (!CR)
    die(CR.status().toString());
  float *CRIn = (*CR)->getTensor<float>(0);
  std::copy(X.begin(), X.end(), CRIn);
  if (!(*CR)->evaluateRaw().isOk())
    die("compiled runner failed");
  const float *CROut = (*CR)->output(size_t(0))->dataAs<float>();
  Vs.push_back({"compiled-runner", [&](long I) {
                  Perturb(CRIn, I);
                  if (!(*CR)->evaluateRaw().isOk())
                    die("compiled runner failed");
                  Sink += CROut[0];
                }, CROut, {}});

#ifdef MLBRIDGE_BENCH_WITH_ORT
  const OrtApi *Api = OrtGetApiBase()->GetApi(ORT_API_VERSION);
  OrtEnv *Env = nullptr;
  check(Api->CreateEnv(ORT_LOGGING_LEVEL_ERROR, "bench", &Env), "CreateEnv");
  OrtSessionOptions *SO = nullptr;
  check(Api->CreateSessionOptions(&SO), "CreateSessionOptions");
  check(Api->SetIntraOpNumThreads(SO, 1), "SetIntraOpNumThreads");
  check(Api->SetInterOpNumThreads(SO, 1), "SetInterOpNumThreads");
  check(Api->SetSessionGraphOptimizationLevel(SO, ORT_ENABLE_ALL), "opt level");
  OrtSession *Session = nullptr;
  check(Api->CreateSession(Env, Path.c_str(), SO, &Session), "CreateSession");
  OrtMemoryInfo *Mem = nullptr;
  check(Api->CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, &Mem),
        "CreateCpuMemoryInfo");
  std::vector<float> RawIn = X, RawOut(15);
  const int64_t InShape[2] = {1, 300}, OutShape[2] = {1, 15};
  OrtValue *InV = nullptr, *OutV = nullptr;
  check(Api->CreateTensorWithDataAsOrtValue(Mem, RawIn.data(), 300 * 4, InShape,
                                            2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
                                            &InV),
        "input value");
  check(Api->CreateTensorWithDataAsOrtValue(Mem, RawOut.data(), 15 * 4,
                                            OutShape, 2,
                                            ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
                                            &OutV),
        "output value");
  const char *InNames[] = {"x"}, *OutNames[] = {"scores"};
  Vs.push_back({"ort", [&](long I) {
                  Perturb(RawIn.data(), I);
                  OrtValue *Outs[] = {OutV};
                  check(Api->Run(Session, nullptr, InNames, &InV, 1, OutNames, 1,
                                 Outs),
                        "Run");
                  Sink += RawOut[0];
                }, RawOut.data(), {}});

  auto OR = OnnxModelRunner::create(Path);
  if (!OR)
    die(OR.status().toString());
  float *ORIn = (*OR)->getTensor<float>(0);
  std::copy(X.begin(), X.end(), ORIn);
  if (!(*OR)->evaluateRaw().isOk())
    die("onnx runner failed");
  const float *OROut = (*OR)->output(size_t(0))->dataAs<float>();
  Vs.push_back({"ort-runner", [&](long I) {
                  Perturb(ORIn, I);
                  if (!(*OR)->evaluateRaw().isOk())
                    die("onnx runner failed");
                  Sink += OROut[0];
                }, OROut, {}});
#endif

  // Warm up, then check every variant computes the same scores.
  for (Variant &V : Vs)
    for (long I = 0; I < 1000; ++I)
      V.Call(I);
  for (Variant &V : Vs)
    for (int J = 0; J < 15; ++J)
      if (std::fabs(V.Output[J] - Vs[0].Output[J]) >
          1e-5f * std::max(1.0f, std::fabs(Vs[0].Output[J])))
        die(std::string(V.Name) + " disagrees with the hand-written loop");

  for (int Round = 0; Round < 7; ++Round)
    for (Variant &V : Vs) {
      auto T0 = Clock::now();
      for (long I = 0; I < Calls; ++I)
        V.Call(I);
      auto T1 = Clock::now();
      V.Rounds.push_back(
          std::chrono::duration<double, std::nano>(T1 - T0).count() /
          double(Calls));
    }

  std::printf("300->64->15 MLP, %ld calls x 7 rounds, median ns/call "
              "(one thread)\n",
              Calls);
  double Hand0 = 0;
  for (Variant &V : Vs) {
    std::sort(V.Rounds.begin(), V.Rounds.end());
    const double Median = V.Rounds[3];
    if (Hand0 == 0)
      Hand0 = Median;
    std::printf("  %-16s %9.1f ns  (%.2fx the hand-written loop)\n", V.Name,
                Median, Median / Hand0);
  }
  std::printf("(checksum %g)\n", double(Sink));
  return 0;
}
