//===- bench/mlp_latency.h - What the in-process latency programs share ---===//
//
// mlbridge-onnx-latency, mlbridge-compiled-latency and mlbridge-tf-latency
// time the paper's 300 -> 64 -> 15 ReLU MLP through different runners on
// one thread, next to the same arithmetic written by hand. This header is
// their common part: the weights (.npz), the hand-written floors, the input
// and its per-call change, the measurement (agreement check, interleaved
// rounds, median) and the report; with MLBRIDGE_BENCH_WITH_ORT defined, ONNX
// Runtime's C API alone. Header-only: each program is one file.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_BENCH_MLP_LATENCY_H
#define MLBRIDGE_BENCH_MLP_LATENCY_H

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#ifdef MLBRIDGE_BENCH_WITH_ORT
#include <onnxruntime_c_api.h>
#endif

namespace mlp_latency {

constexpr int kIn = 300, kHidden = 64, kOut = 15;

/// The program's name, for error messages (set first thing in main).
inline const char *Program = "mlp-latency";

[[noreturn]] inline void die(const std::string &Message) {
  std::fprintf(stderr, "%s: %s\n", Program, Message.c_str());
  std::exit(1);
}

/// `--calls N` (default 100000) and, when PathFlag is given, `PathFlag P`
/// (default Path); dies with the usage line on anything else.
inline long parseArgs(int Argc, char **Argv, const char *Usage,
                      const char *PathFlag = nullptr,
                      std::string *Path = nullptr) {
  long Calls = 100000;
  for (int I = 1; I < Argc; ++I) {
    if (!std::strcmp(Argv[I], "--calls") && I + 1 < Argc)
      Calls = std::strtol(Argv[++I], nullptr, 10);
    else if (PathFlag && !std::strcmp(Argv[I], PathFlag) && I + 1 < Argc)
      *Path = Argv[++I];
    else
      die(std::string("usage: ") + Usage);
  }
  if (Calls < 1)
    die("--calls must be >= 1");
  return Calls;
}

/// The MLP's parameters in PyTorch's layout: W1 [64][300], W2 [15][64].
struct Weights {
  std::vector<float> W1, B1, W2, B2;
  /// Dies unless the shapes are the MLP's.
  void check(const std::string &From) const {
    if (W1.size() != size_t(kIn) * kHidden || B1.size() != size_t(kHidden) ||
        W2.size() != size_t(kHidden) * kOut || B2.size() != size_t(kOut))
      die("unexpected weight shapes in " + From);
  }
};

/// The float32 arrays of an uncompressed .npz (numpy.savez), by name
/// without ".npy".
inline std::map<std::string, std::vector<float>>
readNpz(const std::string &Path) {
  std::ifstream F(Path, std::ios::binary);
  if (!F)
    die("cannot read " + Path);
  std::string Z((std::istreambuf_iterator<char>(F)),
                std::istreambuf_iterator<char>());
  auto LE = [&](size_t At, int Bytes) {
    uint64_t V = 0;
    for (int I = Bytes - 1; I >= 0; --I)
      V = V << 8 | static_cast<unsigned char>(Z.at(At + size_t(I)));
    return V;
  };
  std::map<std::string, std::vector<float>> Arrays;
  size_t At = 0;
  while (At + 30 <= Z.size() && LE(At, 4) == 0x04034b50) { // local header
    if (LE(At + 8, 2) != 0)
      die(Path + ": compressed entries are not supported");
    const size_t Size = LE(At + 18, 4), NameLen = LE(At + 26, 2),
                 ExtraLen = LE(At + 28, 2);
    std::string Name = Z.substr(At + 30, NameLen);
    const size_t Data = At + 30 + NameLen + ExtraLen;
    // .npy: magic, version, header length, a dict text, then the data.
    const bool V1 = Z.at(Data + 6) == 1;
    const size_t HeaderLen = V1 ? LE(Data + 8, 2) : LE(Data + 8, 4);
    const size_t Start = Data + (V1 ? 10 : 12) + HeaderLen;
    if (Start > Data + Size || Data + Size > Z.size())
      die(Path + ": unexpected layout");
    const std::string Header = Z.substr(Data, Start - Data);
    if (Header.find("'<f4'") == std::string::npos ||
        Header.find("'fortran_order': False") == std::string::npos)
      die(Path + ": " + Name + " is not a C-order float32 array");
    std::vector<float> V((Data + Size - Start) / sizeof(float));
    std::memcpy(V.data(), Z.data() + Start, V.size() * sizeof(float));
    if (Name.size() > 4 && Name.compare(Name.size() - 4, 4, ".npy") == 0)
      Name.resize(Name.size() - 4);
    Arrays[Name] = std::move(V);
    At = Data + Size;
  }
  return Arrays;
}

/// models/mlp_300_64_15.npz (PyTorch's state-dict names).
inline Weights readWeights(const std::string &NpzPath) {
  auto A = readNpz(NpzPath);
  Weights W{A["fc1.weight"], A["fc1.bias"], A["fc2.weight"], A["fc2.bias"]};
  W.check(NpzPath);
  return W;
}

/// y = W2 relu(W1 x + b1) + b2 as one dot product per output: a serial
/// dependency chain per output, the obvious way to write it.
struct DotLoop {
  Weights W;
  void run(const float *X, float *Y) const {
    float H[kHidden];
    for (int J = 0; J < kHidden; ++J) {
      const float *Row = &W.W1[size_t(J) * kIn];
      float S = 0.f;
      for (int K = 0; K < kIn; ++K)
        S += Row[K] * X[K];
      S += W.B1[J];
      H[J] = S > 0.f ? S : 0.f;
    }
    for (int J = 0; J < kOut; ++J) {
      const float *Row = &W.W2[size_t(J) * kHidden];
      float S = 0.f;
      for (int K = 0; K < kHidden; ++K)
        S += Row[K] * H[K];
      Y[J] = S + W.B2[J];
    }
  }
};

/// The same written for the vectorizer, as one would by hand for speed:
/// weights transposed once to [in][out], so both layers are sums of scaled
/// rows -- contiguous loops over independent outputs, no sum reordered.
struct AxpyLoop {
  std::vector<float> W1T, B1, W2T, B2;
  explicit AxpyLoop(const Weights &W)
      : W1T(W.W1.size()), B1(W.B1), W2T(W.W2.size()), B2(W.B2) {
    for (int J = 0; J < kHidden; ++J)
      for (int K = 0; K < kIn; ++K)
        W1T[size_t(K) * kHidden + J] = W.W1[size_t(J) * kIn + K];
    for (int J = 0; J < kOut; ++J)
      for (int K = 0; K < kHidden; ++K)
        W2T[size_t(K) * kOut + J] = W.W2[size_t(J) * kHidden + K];
  }
  /// Baseline x86-64 code.
  void run(const float *X, float *Y) const { body(X, Y); }
  /// For AVX2+FMA when the CPU has them (chosen at run time, as ONNX
  /// Runtime's kernels are), else as run().
  void runBest(const float *X, float *Y) const {
#if defined(__x86_64__) && defined(__GNUC__)
    static const bool Avx2 =
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (Avx2)
      return runAvx2(X, Y);
#endif
    body(X, Y);
  }

private:
#if defined(__x86_64__) && defined(__GNUC__)
  __attribute__((target("avx2,fma"))) void runAvx2(const float *X,
                                                   float *Y) const {
    body(X, Y);
  }
#endif
  __attribute__((always_inline)) inline void body(const float *X,
                                                  float *Y) const {
    alignas(32) float H[kHidden];
    std::copy(B1.begin(), B1.end(), H);
    for (int K = 0; K < kIn; ++K) {
      const float XK = X[K];
      const float *Row = &W1T[size_t(K) * kHidden];
      for (int J = 0; J < kHidden; ++J)
        H[J] += Row[J] * XK;
    }
    for (float &V : H)
      V = V > 0.f ? V : 0.f;
    float O[kOut];
    std::copy(B2.begin(), B2.end(), O);
    for (int K = 0; K < kHidden; ++K) {
      const float *Row = &W2T[size_t(K) * kOut];
      for (int J = 0; J < kOut; ++J)
        O[J] += Row[J] * H[K];
    }
    std::copy(O, O + kOut, Y);
  }
};

/// The input every variant starts from (a fixed pseudo-random vector).
inline std::vector<float> input() {
  std::vector<float> X(kIn);
  unsigned Seed = 12345;
  for (float &V : X) {
    Seed = Seed * 1103515245u + 12345u;
    V = static_cast<float>((Seed >> 9) % 2000) / 1000.f - 1.f;
  }
  return X;
}

/// Call I's change of one input element, so that no variant can skip work.
inline void perturb(float *In, const std::vector<float> &X, long I) {
  In[I % kIn] = X[size_t(I % kIn)] + 1e-3f * float(I & 7);
}

#ifdef MLBRIDGE_BENCH_WITH_ORT
/// ONNX Runtime's C API alone on an MLP file (input "x" [1,300], output
/// "scores" [1,15]): one thread, all graph optimizations, values made once
/// over In and Out.
class OrtRaw {
public:
  std::vector<float> In = std::vector<float>(kIn), Out = std::vector<float>(kOut);

  explicit OrtRaw(const std::string &Path)
      : Api(OrtGetApiBase()->GetApi(ORT_API_VERSION)) {
    check(Api->CreateEnv(ORT_LOGGING_LEVEL_ERROR, "bench", &Env), "CreateEnv");
    check(Api->CreateSessionOptions(&Options), "CreateSessionOptions");
    check(Api->SetIntraOpNumThreads(Options, 1), "SetIntraOpNumThreads");
    check(Api->SetInterOpNumThreads(Options, 1), "SetInterOpNumThreads");
    check(Api->SetSessionGraphOptimizationLevel(Options, ORT_ENABLE_ALL),
          "opt level");
    check(Api->CreateSession(Env, Path.c_str(), Options, &Session),
          "CreateSession");
    check(Api->CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, &Mem),
          "CreateCpuMemoryInfo");
    const int64_t InShape[2] = {1, kIn}, OutShape[2] = {1, kOut};
    check(Api->CreateTensorWithDataAsOrtValue(
              Mem, In.data(), kIn * sizeof(float), InShape, 2,
              ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &InV),
          "input value");
    check(Api->CreateTensorWithDataAsOrtValue(
              Mem, Out.data(), kOut * sizeof(float), OutShape, 2,
              ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &OutV),
          "output value");
    check(Api->CreateIoBinding(Session, &Binding), "CreateIoBinding");
    check(Api->BindInput(Binding, "x", InV), "BindInput");
    check(Api->BindOutput(Binding, "scores", OutV), "BindOutput");
  }
  OrtRaw(const OrtRaw &) = delete;
  OrtRaw &operator=(const OrtRaw &) = delete;
  ~OrtRaw() {
    Api->ReleaseIoBinding(Binding);
    Api->ReleaseValue(InV);
    Api->ReleaseValue(OutV);
    Api->ReleaseMemoryInfo(Mem);
    Api->ReleaseSession(Session);
    Api->ReleaseSessionOptions(Options);
    Api->ReleaseEnv(Env);
  }

  /// OrtApi::Run with the pre-made values.
  void run() {
    const char *InNames[] = {"x"}, *OutNames[] = {"scores"};
    OrtValue *Outs[] = {OutV};
    check(Api->Run(Session, nullptr, InNames, &InV, 1, OutNames, 1, Outs),
          "Run");
  }
  /// OrtApi::RunWithBinding: the values bound once.
  void runBound() {
    check(Api->RunWithBinding(Session, nullptr, Binding), "RunWithBinding");
  }

private:
  void check(OrtStatus *S, const char *What) {
    if (S)
      die(std::string(What) + ": " + Api->GetErrorMessage(S));
  }

  const OrtApi *Api;
  OrtEnv *Env = nullptr;
  OrtSessionOptions *Options = nullptr;
  OrtSession *Session = nullptr;
  OrtMemoryInfo *Mem = nullptr;
  OrtValue *InV = nullptr, *OutV = nullptr;
  OrtIoBinding *Binding = nullptr;
};
#endif

struct Variant {
  std::string Name;
  std::function<void(long)> Call;     ///< one evaluation; argument: call no.
  std::function<const float *()> Out; ///< the kOut scores after a call
  std::vector<double> Rounds = {};    ///< ns per call
};

/// A variant that reads its input at In and leaves the scores at Out;
/// Run() computes them.
template <typename RunFn>
Variant bufferVariant(std::string Name, float *In, const float *Out,
                      const std::vector<float> &X, float &Sink, RunFn Run) {
  return {std::move(Name),
          [In, Out, &X, &Sink, Run](long I) {
            perturb(In, X, I);
            Run();
            Sink += Out[0];
          },
          [Out] { return Out; }};
}

/// An in-process runner (OnnxModelRunner, CompiledModelRunner,
/// TfModelRunner) on X: features written in place (getTensor), then
/// evaluateRaw(); its advice is the scores.
template <typename Runner>
Variant runnerVariant(std::string Name, Runner &R, const std::vector<float> &X,
                      float &Sink) {
  float *In = R.template getTensor<float>(0);
  if (!In)
    die(Name + ": input 0 is not float");
  std::copy(X.begin(), X.end(), In);
  return {Name,
          [&R, In, &X, &Sink, Name](long I) {
            perturb(In, X, I);
            if (!R.evaluateRaw().isOk())
              die(Name + " failed");
            Sink += R.advice().template dataAs<float>()[0];
          },
          [&R] { return R.advice().template dataAs<float>(); }};
}

/// Runs every variant once on the same input and dies unless all agree
/// with the first within Tolerance (relative to max(1, |first|) when
/// Relative); then warms up, times Rounds interleaved rounds of Calls calls
/// and prints the median round of each, as a multiple of the first's.
inline void measure(std::vector<Variant> &Vs, long Calls, const std::string &Title,
                    float Tolerance, bool Relative = false, int Rounds = 7) {
  for (Variant &V : Vs)
    V.Call(0);
  for (Variant &V : Vs)
    for (int K = 0; K < kOut; ++K) {
      const float Want = Vs[0].Out()[K], Got = V.Out()[K];
      const float Scale = Relative ? std::max(1.0f, std::fabs(Want)) : 1.0f;
      if (std::fabs(Got - Want) > Tolerance * Scale)
        die(V.Name + " disagrees with " + Vs[0].Name + " at output " +
            std::to_string(K) + ": " + std::to_string(Got) + " vs " +
            std::to_string(Want));
    }
  for (Variant &V : Vs)
    for (long I = 0; I < 1000; ++I)
      V.Call(I);
  for (int Round = 0; Round < Rounds; ++Round)
    for (Variant &V : Vs) {
      auto T0 = std::chrono::steady_clock::now();
      for (long I = 0; I < Calls; ++I)
        V.Call(I);
      auto T1 = std::chrono::steady_clock::now();
      V.Rounds.push_back(std::chrono::duration<double, std::nano>(T1 - T0).count() /
                         double(Calls));
    }
  std::printf("%s, one thread, %ld calls x %d rounds, median ns/call\n",
              Title.c_str(), Calls, Rounds);
  double First = 0;
  for (Variant &V : Vs) {
    std::sort(V.Rounds.begin(), V.Rounds.end());
    const double Median = V.Rounds[V.Rounds.size() / 2];
    if (First == 0)
      First = Median;
    std::printf("  %-44s %9.1f ns  %5.2fx %s\n", V.Name.c_str(), Median,
                Median / First, Vs[0].Name.c_str());
  }
}

} // namespace mlp_latency

#endif // MLBRIDGE_BENCH_MLP_LATENCY_H
