//===- bench/onnx_latency.cpp - In-process ONNX latency vs. the floor ------===//
//
// Per-call latency of the paper's 300 -> 64 -> 15 MLP (models/
// mlp_300_64_15.onnx), measured in one run, one thread:
//
//   floor    a hand-written C++ loop doing the same arithmetic with the same
//            weights (read from models/mlp_300_64_15.npz);
//   ort-raw  ONNX Runtime's C API alone: OrtApi::Run over pre-made values;
//   runner   OnnxModelRunner: write the features in place, evaluateRaw().
//
//   cmake --build build --target mlbridge-onnx-latency
//   build/bench/mlbridge-onnx-latency [--calls N] [--model-dir DIR]
//
// Each variant runs in 7 interleaved rounds of N calls (default 100000);
// the median round is reported. The three must agree on the outputs.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/onnx_model_runner.h"

#include <onnxruntime_c_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#ifndef MLBRIDGE_SOURCE_DIR
#define MLBRIDGE_SOURCE_DIR "."
#endif

using namespace mlbridge;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void die(const std::string &Message) {
  std::fprintf(stderr, "onnx_latency: %s\n", Message.c_str());
  std::exit(1);
}

// ---- a minimal .npz reader (np.savez: a stored zip of .npy float32) -------
std::map<std::string, std::vector<float>> readNpz(const std::string &Path) {
  std::ifstream In(Path, std::ios::binary);
  if (!In)
    die("cannot open " + Path);
  std::vector<unsigned char> B((std::istreambuf_iterator<char>(In)), {});
  auto U16 = [&](size_t O) { return size_t(B[O]) | size_t(B[O + 1]) << 8; };
  auto U32 = [&](size_t O) { return U16(O) | U16(O + 2) << 16; };
  std::map<std::string, std::vector<float>> Arrays;
  size_t P = 0;
  while (P + 30 <= B.size() && U32(P) == 0x04034b50) {
    if (U16(P + 8) != 0)
      die(Path + ": compressed entries are not supported");
    size_t Size = U32(P + 18), NameLen = U16(P + 26), Extra = U16(P + 28);
    std::string Name(reinterpret_cast<char *>(&B[P + 30]), NameLen);
    size_t Data = P + 30 + NameLen + Extra;
    if (Data + Size > B.size() || Size < 10 || B[Data] != 0x93)
      die(Path + ": unexpected layout");
    size_t HeaderLen = U16(Data + 8);
    std::string Header(reinterpret_cast<char *>(&B[Data + 10]), HeaderLen);
    if (Header.find("'<f4'") == std::string::npos)
      die(Path + ": " + Name + " is not float32");
    size_t Payload = Data + 10 + HeaderLen, Bytes = Size - 10 - HeaderLen;
    std::vector<float> V(Bytes / 4);
    std::memcpy(V.data(), &B[Payload], Bytes);
    Arrays[Name.substr(0, Name.size() - 4)] = std::move(V); // drop ".npy"
    P = Data + Size;
  }
  return Arrays;
}

// ---- the floor: y = W2 relu(W1 x + b1) + b2 -------------------------------
// Written the way one would by hand for speed: weights transposed once to
// [in][out], so both layers are sums of scaled rows -- contiguous loops the
// compiler vectorizes (no reduction, so no -ffast-math needed).
struct HandMLP {
  static constexpr int In = 300, Hidden = 64, Out = 15;
  std::vector<float> W1T, B1, W2T, B2; // W1T[k][j] = W1[j][k]
  HandMLP(const std::vector<float> &W1, std::vector<float> B1v,
          const std::vector<float> &W2, std::vector<float> B2v)
      : W1T(size_t(In) * Hidden), B1(std::move(B1v)), W2T(size_t(Hidden) * Out),
        B2(std::move(B2v)) {
    if (W1.size() != W1T.size() || W2.size() != W2T.size() ||
        B1.size() != size_t(Hidden) || B2.size() != size_t(Out))
      die("unexpected weight shapes in the .npz");
    for (int J = 0; J < Hidden; ++J)
      for (int K = 0; K < In; ++K)
        W1T[size_t(K) * Hidden + J] = W1[size_t(J) * In + K];
    for (int J = 0; J < Out; ++J)
      for (int K = 0; K < Hidden; ++K)
        W2T[size_t(K) * Out + J] = W2[size_t(J) * Hidden + K];
  }
  // The same loops, compiled twice: for AVX2+FMA (chosen at run time when
  // the CPU has them, as ONNX Runtime's kernels do) and for baseline x86-64.
  void run(const float *X, float *Y) const {
#if defined(__x86_64__) && defined(__GNUC__)
    static const bool Avx2 =
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (Avx2)
      return runAvx2(X, Y);
#endif
    body(X, Y);
  }
#if defined(__x86_64__) && defined(__GNUC__)
  __attribute__((target("avx2,fma"))) void runAvx2(const float *X,
                                                   float *Y) const {
    body(X, Y);
  }
#endif
  __attribute__((always_inline)) inline void body(const float *X,
                                                  float *Y) const {
    alignas(32) float H[Hidden];
    for (int J = 0; J < Hidden; ++J)
      H[J] = B1[J];
    for (int K = 0; K < In; ++K) {
      const float XK = X[K];
      const float *W = &W1T[size_t(K) * Hidden];
      for (int J = 0; J < Hidden; ++J)
        H[J] += W[J] * XK;
    }
    for (int J = 0; J < Hidden; ++J)
      H[J] = H[J] > 0.f ? H[J] : 0.f;
    float O[Out];
    for (int J = 0; J < Out; ++J)
      O[J] = B2[J];
    for (int K = 0; K < Hidden; ++K) {
      const float *W = &W2T[size_t(K) * Out];
      for (int J = 0; J < Out; ++J)
        O[J] += W[J] * H[K];
    }
    for (int J = 0; J < Out; ++J)
      Y[J] = O[J];
  }
};

template <typename F> double nsPerCall(long Calls, F &&Body) {
  auto T0 = Clock::now();
  for (long I = 0; I < Calls; ++I)
    Body(I);
  auto T1 = Clock::now();
  return std::chrono::duration<double, std::nano>(T1 - T0).count() / Calls;
}

void check(OrtStatus *S, const char *What) {
  if (S) {
    std::string M = OrtGetApiBase()->GetApi(ORT_API_VERSION)->GetErrorMessage(S);
    die(std::string(What) + ": " + M);
  }
}

} // namespace

int main(int argc, char **argv) {
  long Calls = 100000;
  std::string Dir = MLBRIDGE_SOURCE_DIR "/models";
  for (int I = 1; I < argc; ++I) {
    if (!std::strcmp(argv[I], "--calls") && I + 1 < argc)
      Calls = std::strtol(argv[++I], nullptr, 10);
    else if (!std::strcmp(argv[I], "--model-dir") && I + 1 < argc)
      Dir = argv[++I];
    else
      die("usage: mlbridge-onnx-latency [--calls N] [--model-dir DIR]");
  }
  if (Calls < 1)
    die("--calls must be >= 1");
  const std::string ModelPath = Dir + "/mlp_300_64_15.onnx";

  auto W = readNpz(Dir + "/mlp_300_64_15.npz");
  HandMLP Hand(W["fc1.weight"], W["fc1.bias"], W["fc2.weight"], W["fc2.bias"]);

  // The runner: batch fixed to 1, so the input is written in place.
  OnnxOptions Opts;
  Opts.Model.DimValues = {{"batch", 1}};
  auto Runner = OnnxModelRunner::create(ModelPath, Opts);
  if (!Runner)
    die(Runner.status().toString());
  OnnxModelRunner &R = **Runner;
  float *RunnerIn = R.getTensor<float>(0);
  if (!RunnerIn)
    die("input 0 is not float");

  // ONNX Runtime alone, same session settings (one thread, all optimizations).
  const OrtApi *Api = OrtGetApiBase()->GetApi(ORT_API_VERSION);
  OrtEnv *Env = nullptr;
  check(Api->CreateEnv(ORT_LOGGING_LEVEL_ERROR, "bench", &Env), "CreateEnv");
  OrtSessionOptions *SO = nullptr;
  check(Api->CreateSessionOptions(&SO), "CreateSessionOptions");
  check(Api->SetIntraOpNumThreads(SO, 1), "SetIntraOpNumThreads");
  check(Api->SetInterOpNumThreads(SO, 1), "SetInterOpNumThreads");
  check(Api->SetSessionGraphOptimizationLevel(SO, ORT_ENABLE_ALL), "opt level");
  OrtSession *Session = nullptr;
  check(Api->CreateSession(Env, ModelPath.c_str(), SO, &Session), "CreateSession");
  OrtMemoryInfo *Mem = nullptr;
  check(Api->CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, &Mem),
        "CreateCpuMemoryInfo");
  std::vector<float> RawIn(300), RawOut(15);
  const int64_t InShape[2] = {1, 300}, OutShape[2] = {1, 15};
  OrtValue *InV = nullptr, *OutV = nullptr;
  check(Api->CreateTensorWithDataAsOrtValue(Mem, RawIn.data(), 300 * 4, InShape, 2,
                                            ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &InV),
        "input value");
  check(Api->CreateTensorWithDataAsOrtValue(Mem, RawOut.data(), 15 * 4, OutShape, 2,
                                            ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &OutV),
        "output value");
  const char *InNames[] = {"x"}, *OutNames[] = {"scores"};

  // Inputs: a fixed random vector, one element changed per call so no
  // variant can skip work.
  std::vector<float> X(300);
  unsigned Seed = 12345;
  for (float &V : X) {
    Seed = Seed * 1103515245u + 12345u;
    V = static_cast<float>((Seed >> 9) % 2000) / 1000.f - 1.f;
  }
  std::vector<float> HandIn = X, HandOut(15);
  std::copy(X.begin(), X.end(), RunnerIn);
  std::copy(X.begin(), X.end(), RawIn.begin());
  float Sink = 0.f;

  auto RunHand = [&](long I) {
    HandIn[I % 300] = X[I % 300] + 1e-3f * float(I & 7);
    Hand.run(HandIn.data(), HandOut.data());
    Sink += HandOut[0];
  };
  auto RunRaw = [&](long I) {
    RawIn[I % 300] = X[I % 300] + 1e-3f * float(I & 7);
    OrtValue *Outs[] = {OutV};
    check(Api->Run(Session, nullptr, InNames, &InV, 1, OutNames, 1, Outs), "Run");
    Sink += RawOut[0];
  };
  OrtIoBinding *Binding = nullptr;
  check(Api->CreateIoBinding(Session, &Binding), "CreateIoBinding");
  check(Api->BindInput(Binding, "x", InV), "BindInput");
  check(Api->BindOutput(Binding, "scores", OutV), "BindOutput");
  auto RunBound = [&](long I) {
    RawIn[I % 300] = X[I % 300] + 1e-3f * float(I & 7);
    check(Api->RunWithBinding(Session, nullptr, Binding), "RunWithBinding");
    Sink += RawOut[0];
  };
  auto RunRunner = [&](long I) {
    RunnerIn[I % 300] = X[I % 300] + 1e-3f * float(I & 7);
    if (Status S = R.evaluateRaw(); !S.isOk())
      die(S.toString());
    Sink += R.advice().dataAs<float>()[0];
  };

  // Same inputs -> same outputs (to float rounding).
  RunHand(0);
  RunRaw(0);
  RunRunner(0);
  float MaxDiff = 0.f;
  for (int J = 0; J < 15; ++J) {
    MaxDiff = std::max(MaxDiff, std::fabs(HandOut[J] - RawOut[J]));
    MaxDiff = std::max(MaxDiff, std::fabs(HandOut[J] - R.advice().dataAs<float>()[J]));
  }
  if (MaxDiff > 1e-4f)
    die("the variants disagree (max difference " + std::to_string(MaxDiff) + ")");

  for (long I = 0; I < 2000; ++I) { // warm up
    RunHand(I);
    RunRaw(I);
    RunBound(I);
    RunRunner(I);
  }
  const int Rounds = 7;
  std::vector<double> TH, TR, TB, TN;
  for (int K = 0; K < Rounds; ++K) {
    TH.push_back(nsPerCall(Calls, RunHand));
    TR.push_back(nsPerCall(Calls, RunRaw));
    TB.push_back(nsPerCall(Calls, RunBound));
    TN.push_back(nsPerCall(Calls, RunRunner));
  }
  auto Median = [](std::vector<double> V) {
    std::sort(V.begin(), V.end());
    return V[V.size() / 2];
  };
  const double H = Median(TH), Raw = Median(TR), Bound = Median(TB),
               N = Median(TN);
  std::printf("300->64->15 MLP, one thread, median of %d rounds x %ld calls "
              "(outputs agree to %.1e)\n",
              Rounds, Calls, static_cast<double>(MaxDiff));
  std::printf("  %-34s %9.0f ns/call  %5.2fx floor\n",
              "floor: hand-written C++ loop", H, 1.0);
  std::printf("  %-34s %9.0f ns/call  %5.2fx floor\n",
              "ONNX Runtime C API alone (Run)", Raw, Raw / H);
  std::printf("  %-34s %9.0f ns/call  %5.2fx floor\n",
              "ONNX Runtime C API (RunWithBinding)", Bound, Bound / H);
  std::printf("  %-34s %9.0f ns/call  %5.2fx floor\n",
              "OnnxModelRunner::evaluateRaw", N, N / H);
  std::printf("  (checksum %g)\n", static_cast<double>(Sink));

  Api->ReleaseIoBinding(Binding);
  Api->ReleaseValue(InV);
  Api->ReleaseValue(OutV);
  Api->ReleaseMemoryInfo(Mem);
  Api->ReleaseSession(Session);
  Api->ReleaseSessionOptions(SO);
  Api->ReleaseEnv(Env);
  return 0;
}
