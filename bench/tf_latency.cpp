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

#include "mlbridge_tf_model_mlp_300_64_15.h"

#include "mlbridge/tf_model_runner.h"
#ifdef MLBRIDGE_HAVE_ONNX
#include "mlbridge/onnx_model_runner.h"
#endif
#ifdef MLBRIDGE_HAVE_COMPILED
#include "mlbridge/compiled_model_runner.h"
#include "tfbench_mlp_300_64_15.h"
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

using namespace mlbridge;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void die(const std::string &Message) {
  std::fprintf(stderr, "tf_latency: %s\n", Message.c_str());
  std::exit(1);
}

// Reads the float32 arrays of an uncompressed .npz (numpy.savez).
std::map<std::string, std::vector<float>> loadNpz(const std::string &Path) {
  std::ifstream F(Path, std::ios::binary);
  if (!F)
    die("cannot read " + Path);
  std::string Z((std::istreambuf_iterator<char>(F)), std::istreambuf_iterator<char>());
  auto LE = [&](size_t At, int Bytes) {
    uint64_t V = 0;
    for (int I = Bytes - 1; I >= 0; --I)
      V = V << 8 | static_cast<unsigned char>(Z.at(At + I));
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
    const size_t HeaderLen = Z[Data + 6] == 1 ? LE(Data + 8, 2) : LE(Data + 8, 4);
    const size_t Start = Data + (Z[Data + 6] == 1 ? 10 : 12) + HeaderLen;
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

// The floor: y = W2 relu(W1 x + b1) + b2. The weights are stored
// transposed ([in, out]) so the inner loops run over independent outputs
// and vectorize without reassociating any sum (what a careful hand-written
// kernel does; the row-major dot-product form is a serial dependency chain).
struct HandLoop {
  std::vector<float> W1T, B1, W2T, B2, H = std::vector<float>(64);
  HandLoop(const std::vector<float> &W1, std::vector<float> B1In,
           const std::vector<float> &W2, std::vector<float> B2In)
      : W1T(W1.size()), B1(std::move(B1In)), W2T(W2.size()), B2(std::move(B2In)) {
    for (size_t J = 0; J < 64 && W1.size() == 64 * 300; ++J)
      for (size_t I = 0; I < 300; ++I)
        W1T[I * 64 + J] = W1[J * 300 + I];
    for (size_t K = 0; K < 15 && W2.size() == 15 * 64; ++K)
      for (size_t J = 0; J < 64; ++J)
        W2T[J * 15 + K] = W2[K * 64 + J];
  }
  void run(const float *X, float *Y) {
    float *__restrict HP = H.data();
    std::copy(B1.begin(), B1.end(), HP);
    for (int I = 0; I < 300; ++I) {
      const float XI = X[I];
      const float *__restrict Row = &W1T[size_t(I) * 64];
      for (int J = 0; J < 64; ++J)
        HP[J] += Row[J] * XI;
    }
    std::copy(B2.begin(), B2.end(), Y);
    for (int J = 0; J < 64; ++J) {
      const float HJ = HP[J] > 0 ? HP[J] : 0;
      const float *Row = &W2T[size_t(J) * 15];
      for (int K = 0; K < 15; ++K)
        Y[K] += Row[K] * HJ;
    }
  }
};

struct Variant {
  std::string Name;
  std::function<void(long)> Call;   // one evaluation on input variant I
  std::function<const float *()> Out;
  std::vector<double> Rounds;       // ns per call
};

} // namespace

int main(int Argc, char **Argv) {
  long Calls = 100000;
  for (int I = 1; I < Argc; ++I) {
    if (!std::strcmp(Argv[I], "--calls") && I + 1 < Argc)
      Calls = std::atol(Argv[++I]);
    else
      die("usage: mlbridge-tf-latency [--calls N]");
  }
  if (Calls < 1)
    die("--calls must be >= 1");
  const std::string Models = std::string(MLBRIDGE_SOURCE_DIR) + "/models";
  auto W = loadNpz(Models + "/mlp_300_64_15.npz");
  if (W["fc1.weight"].size() != 64 * 300 || W["fc2.weight"].size() != 15 * 64 ||
      W["fc1.bias"].size() != 64 || W["fc2.bias"].size() != 15)
    die("unexpected weight shapes in mlp_300_64_15.npz");
  HandLoop Hand(W["fc1.weight"], W["fc1.bias"], W["fc2.weight"], W["fc2.bias"]);

  std::vector<float> X(300);
  for (int I = 0; I < 300; ++I)
    X[I] = std::sin(0.37f * float(I)) * 1.5f;
  // Each call changes one input element so no variant can skip work.
  auto Input = [&](long I, float *Dst) { Dst[I % 300] = X[I % 300] + 1e-3f * float(I & 7); };

  std::vector<Variant> Vs;
  std::vector<float> HandIn = X, HandOut(15);
  Vs.push_back({"floor (hand-written loop)",
                [&](long I) { Input(I, HandIn.data()); Hand.run(HandIn.data(), HandOut.data()); },
                [&] { return HandOut.data(); }, {}});

  const EmbeddedModel &M = tfmodels::Mlp3006415Model();
  void *Raw = M.Create();
  if (!Raw)
    die("cannot create the XLA function");
  float *RawIn = static_cast<float *>(M.InputBuffer(Raw, 0));
  if (!RawIn)
    die("the compiled model has no input 0");
  std::copy(X.begin(), X.end(), RawIn);
  Vs.push_back({"xla-raw (compiled function alone)",
                [&](long I) { Input(I, RawIn); if (!M.Run(Raw)) die("Run failed"); },
                [&] { return static_cast<const float *>(M.OutputBuffer(Raw, 0)); }, {}});

  TfOptions TfO;
  TfO.AdviceOutput = "scores";
  auto TfCreated = TfModelRunner::create(M, TfO);
  if (!TfCreated)
    die(TfCreated.status().toString());
  TfModelRunner &Tf = **TfCreated;
  float *TfIn = Tf.getTensor<float>(0);
  if (!TfIn)
    die("TfModelRunner: input 0 is not float");
  std::copy(X.begin(), X.end(), TfIn);
  Vs.push_back({"tf-aot (TfModelRunner)",
                [&](long I) { Input(I, TfIn); if (!Tf.evaluateRaw().isOk()) die("tf-aot failed"); },
                [&] { return Tf.advice().dataAs<float>(); }, {}});

#ifdef MLBRIDGE_HAVE_ONNX
  OnnxOptions OO;
  OO.Model.DimValues = {{"batch", 1}};
  auto Onnx = OnnxModelRunner::create(Models + "/mlp_300_64_15.onnx", OO);
  if (!Onnx)
    die(Onnx.status().toString());
  float *OnnxIn = (*Onnx)->getTensor<float>(0);
  if (!OnnxIn)
    die("OnnxModelRunner: input 0 is not float");
  std::copy(X.begin(), X.end(), OnnxIn);
  Vs.push_back({"onnx (OnnxModelRunner, ONNX Runtime)",
                [&](long I) { Input(I, OnnxIn); if (!(*Onnx)->evaluateRaw().isOk()) die("onnx failed"); },
                [&] { return (*Onnx)->advice().dataAs<float>(); }, {}});
#endif
#ifdef MLBRIDGE_HAVE_COMPILED
  auto Comp = CompiledModelRunner::create<tfbench::mlp_300_64_15>("scores");
  if (!Comp)
    die(Comp.status().toString());
  float *CompIn = (*Comp)->getTensor<float>(0);
  if (!CompIn)
    die("CompiledModelRunner: input 0 is not float");
  std::copy(X.begin(), X.end(), CompIn);
  Vs.push_back({"compiled (CompiledModelRunner, ONNX -> C++)",
                [&](long I) { Input(I, CompIn); if (!(*Comp)->evaluateRaw().isOk()) die("compiled failed"); },
                [&] { return (*Comp)->advice().dataAs<float>(); }, {}});
#endif

  // Same inputs -> same outputs, before timing anything.
  for (Variant &V : Vs)
    V.Call(0);
  for (Variant &V : Vs)
    for (int K = 0; K < 15; ++K)
      if (std::fabs(V.Out()[K] - Vs[0].Out()[K]) > 1e-4f)
        die(V.Name + " disagrees with the floor at output " + std::to_string(K) +
            ": " + std::to_string(V.Out()[K]) + " vs " + std::to_string(Vs[0].Out()[K]));

  for (int Round = 0; Round < 7; ++Round)
    for (Variant &V : Vs) {
      auto T0 = Clock::now();
      for (long I = 0; I < Calls; ++I)
        V.Call(I);
      auto T1 = Clock::now();
      V.Rounds.push_back(std::chrono::duration<double, std::nano>(T1 - T0).count() / double(Calls));
    }
  M.Destroy(Raw);

  std::printf("300 -> 64 -> 15 MLP, 1 thread, %ld calls x 7 rounds, median ns/call\n", Calls);
  double Floor = 0;
  for (Variant &V : Vs) {
    std::sort(V.Rounds.begin(), V.Rounds.end());
    const double Median = V.Rounds[3];
    if (Floor == 0)
      Floor = Median;
    std::printf("  %-44s %9.1f ns  %5.2fx floor\n", V.Name.c_str(), Median, Median / Floor);
  }
  return 0;
}
