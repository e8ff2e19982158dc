//===- bench/runners.cpp - The runners mlbridge-bench measures -------------===//
#include "runners.h"

#include "support/json.h"

#include "mlbridge/pipe_model_runner.h"
#include "mlbridge/shm_model_runner.h"
#ifdef MLBRIDGE_BENCH_GRPC
#include "mlbridge/grpc_model_runner.h"
#include "mlbridge/protobuf_serdes.h"
#endif
#ifdef MLBRIDGE_BENCH_ONNX
#include "mlbridge/onnx_model_runner.h"
#endif
#ifdef MLBRIDGE_BENCH_COMPILED
#include "compiled_fc_models.h" // generated: Fc<n> classes, FOR_EACH macro
#include "mlbridge/compiled_model_runner.h"
#endif
#ifdef MLBRIDGE_BENCH_TF
#include "mlbridge/tf_model_runner.h"
#include "tf_fc_models.h" // generated: bench_tf::Fc<n>Model(), FOR_EACH macro
#endif

#include <algorithm>
#include <map>
#include <cstdio>
#include <unistd.h>

using namespace mlbridge;

namespace bench {

// ---- the Python model ----------------------------------------------------------
std::unique_ptr<Peer> Peer::start(const std::string &Mode,
                                  const std::string &Serdes, int Channels) {
  auto P = std::make_unique<Peer>();
  P->TmpDir = makeTmpDir("mlbridge-bench");
  P->Process = spawnPiped({Cfg.Python, Cfg.BenchDir + "/bench_peer.py",
                           "--mode", Mode, "--serdes", Serdes, "--dir",
                           P->TmpDir, "--channels", std::to_string(Channels)});
  // Ready: one JSON object, {"pid": ..., "address": ...} for gRPC.
  std::string Ready = readLine(P->Process, std::chrono::seconds(60));
  json::Value V;
  if (Ready.empty() || !json::parse(Ready, V).isOk() || !V.isObject())
    die("the Python peer (" + Mode + ", " + Serdes +
        ") did not start; is numpy/grpcio installed for " + Cfg.Python + "?");
  if (Mode == "grpc") {
    const json::Value *A = V.find("address");
    if (!A || !A->isString())
      die("the Python peer (grpc) reported no address: " + Ready);
    P->Address = A->string();
  } else {
    for (int I = 0; I < Channels; ++I) // shm: one socket, one event loop
      P->Bases.push_back(Mode == "shm" ? P->TmpDir + "/ch0.sock"
                                       : P->TmpDir + "/ch" + std::to_string(I));
  }
  return P;
}

Peer::~Peer() {
  finish(Process, std::chrono::seconds(5)); // the peer exits on stdin EOF
  for (auto &B : Bases) { // what a killed peer may have left
    ::unlink((B + ".in").c_str());
    ::unlink((B + ".out").c_str());
    ::unlink(B.c_str());
  }
  ::rmdir(TmpDir.c_str());
}

// ---- making runners --------------------------------------------------------------
namespace {

DiagnosticSink sink() {
  return [](Severity, std::string_view M) {
    std::fprintf(stderr, "mlbridge-bench: runner: %.*s\n", int(M.size()),
                 M.data());
  };
}

/// The runner, or the reason it could not be made (and exit).
template <typename R>
std::unique_ptr<ModelRunner> orDie(const std::string &What,
                                   Expected<std::unique_ptr<R>> Made) {
  if (!Made)
    die(What + ": " + Made.status().toString());
  return std::move(*Made);
}

/// The small-message test's specs (one float in, one int out), or none:
/// the sweep's features are declared by the first setFeature.
template <typename Runner, typename Options>
std::unique_ptr<ModelRunner> makeRemoteRunner(const char *What,
                                              const std::string &Target,
                                              Options O, bool Small) {
  O.Diagnostics = sink();
  return orDie(std::string(What) + " runner",
               Small ? Runner::create(Target, {TensorSpec::create<float>("f")},
                                      TensorSpec::create<int64_t>("a"), O)
                     : Runner::create(Target, {}, std::nullopt, O));
}

template <typename Options> Options streamOptions(SerDesKind K) {
  Options O;
  O.Format = K;
#ifdef MLBRIDGE_BENCH_GRPC
  O.ProtobufSerDes = createProtobufSerDes;
#endif
  O.OpenTimeout = std::chrono::seconds(30);
  O.ReplyTimeout = std::chrono::seconds(60);
  return O;
}

std::unique_ptr<ModelRunner> makePipe(const std::string &Base, SerDesKind K,
                                      bool Small) {
  return makeRemoteRunner<PipeModelRunner>(
      "pipe", Base, streamOptions<PipeOptions>(K), Small);
}

std::unique_ptr<ModelRunner> makeShm(const std::string &Path, bool Small) {
  return makeRemoteRunner<ShmModelRunner>(
      "shm", Path, streamOptions<ShmOptions>(SerDesKind::Bitstream), Small);
}

#ifdef MLBRIDGE_BENCH_GRPC
std::unique_ptr<ModelRunner> makeGrpc(const std::string &Addr, bool Small) {
  GrpcOptions O;
  O.CallTimeout = std::chrono::seconds(60);
  O.ConnectTimeout = std::chrono::seconds(30);
  return makeRemoteRunner<GrpcModelRunner>("gRPC", Addr, O, Small);
}
#endif

#ifdef MLBRIDGE_BENCH_ONNX
std::unique_ptr<ModelRunner> makeOnnx(int N) {
  const std::string Path = Cfg.FcDir + "/fc_" + std::to_string(N) + ".onnx";
  OnnxOptions O;
  O.Diagnostics = sink();
  return orDie("ONNX runner (" + Path + ")", OnnxModelRunner::create(Path, O));
}
#endif

/// In-process runners of models generated per size (one class each, listed
/// by a generated FOR_EACH macro): size -> runner factory.
using SizedRunners = std::map<int, std::function<std::unique_ptr<ModelRunner>()>>;

std::vector<int> sizesOf(const SizedRunners &Runners) {
  std::vector<int> S;
  for (const auto &Entry : Runners)
    S.push_back(Entry.first);
  return S;
}

std::unique_ptr<ModelRunner> makeSized(const char *What,
                                       const SizedRunners &Runners, int N) {
  auto It = Runners.find(N);
  if (It == Runners.end())
    die(std::string("no ") + What + " model for n = " + std::to_string(N));
  return It->second();
}

#ifdef MLBRIDGE_BENCH_COMPILED
const SizedRunners &compiledRunners() {
#define MLBRIDGE_BENCH_ENTRY(n)                                                \
  {n, [] {                                                                     \
     return orDie("compiled runner (n = " #n ")",                              \
                  CompiledModelRunner::create<bench_fc::Fc##n>());             \
   }},
  static const SizedRunners Runners = {
      MLBRIDGE_BENCH_FOR_EACH_COMPILED(MLBRIDGE_BENCH_ENTRY)};
#undef MLBRIDGE_BENCH_ENTRY
  return Runners;
}
#endif

#ifdef MLBRIDGE_BENCH_TF
const SizedRunners &tfRunners() {
#define MLBRIDGE_BENCH_ENTRY(n)                                                \
  {n, [] {                                                                     \
     TfOptions O;                                                              \
     O.AdviceOutput = "y";                                                     \
     return orDie("TF-AOT runner (n = " #n ")",                                \
                  TfModelRunner::create(bench_tf::Fc##n##Model(), O));         \
   }},
  static const SizedRunners Runners = {
      MLBRIDGE_BENCH_FOR_EACH_TF(MLBRIDGE_BENCH_ENTRY)};
#undef MLBRIDGE_BENCH_ENTRY
  return Runners;
}
#endif

SerDesKind serdesKind(const std::string &Name) {
  return Name == "json"       ? SerDesKind::Json
         : Name == "protobuf" ? SerDesKind::Protobuf
                              : SerDesKind::Bitstream;
}

} // namespace

std::unique_ptr<ModelRunner> makeRemote(const std::string &Kind,
                                        const std::string &Target,
                                        const std::string &Serdes) {
  if (Kind == "pipe")
    return makePipe(Target, serdesKind(Serdes), false);
  if (Kind == "shm")
    return makeShm(Target, false);
#ifdef MLBRIDGE_BENCH_GRPC
  if (Kind == "grpc")
    return makeGrpc(Target, false);
#endif
  die("unknown worker " + Kind);
}

std::vector<RunnerDef> runnerDefs(std::vector<std::unique_ptr<Peer>> &Peers) {
  std::vector<RunnerDef> Defs;
  std::vector<std::string> PipeFormats = {"bitstream", "json"};
#ifdef MLBRIDGE_BENCH_GRPC
  PipeFormats.push_back("protobuf");
#endif
  for (const std::string &Format : PipeFormats) {
    Peers.push_back(Peer::start("pipe", Format, 1));
    std::string Base = Peers.back()->Bases[0];
    SerDesKind K = serdesKind(Format);
    Defs.push_back({"pipe", Format, "fifo-floor",
                    [Base, K](int N) { return makePipe(Base, K, N == 1); }});
    Defs.back().Model = Peers.back().get();
  }
  Peers.push_back(Peer::start("shm", "bitstream", 1));
  {
    std::string Path = Peers.back()->Bases[0];
    Defs.push_back({"shm", "bitstream", "shm-floor",
                    [Path](int N) { return makeShm(Path, N == 1); }});
    Defs.back().Model = Peers.back().get();
  }
#ifdef MLBRIDGE_BENCH_GRPC
  Peers.push_back(Peer::start("grpc", "protobuf", 1));
  {
    std::string Addr = Peers.back()->Address;
    Defs.push_back({"grpc", "protobuf", "grpc-floor",
                    [Addr](int N) { return makeGrpc(Addr, N == 1); }});
    Defs.back().Model = Peers.back().get();
  }
#endif
  // In-process runners twice: the paper's setFeature(vector) + evaluate,
  // and evaluate alone on features written in place.
  for (bool InPlace : {false, true}) {
    const char *Serdes = InPlace ? "in-place" : "in-process";
    (void)Serdes; // unused when no in-process runner is built
#ifdef MLBRIDGE_BENCH_ONNX
    Defs.push_back({"onnx", Serdes, "loop-floor", makeOnnx, false, true, {},
                    InPlace});
#endif
#ifdef MLBRIDGE_BENCH_COMPILED
    Defs.push_back({"compiled", Serdes, "loop-floor",
                    [](int N) {
                      return makeSized("compiled", compiledRunners(), N);
                    },
                    false, true, sizesOf(compiledRunners()), InPlace});
#endif
#ifdef MLBRIDGE_BENCH_TF
    Defs.push_back({"tf-aot", Serdes, "loop-floor",
                    [](int N) { return makeSized("TF-AOT", tfRunners(), N); },
                    false, true, sizesOf(tfRunners()), InPlace});
#endif
  }
  return Defs;
}

// ---- one request ------------------------------------------------------------------
float evaluateFloat(ModelRunner &R) {
  Expected<float> Y = R.evaluate<float>();
  if (!Y)
    die("evaluate: " + Y.status().toString());
  return *Y;
}

float call(ModelRunner &R, const std::vector<float> &X) {
  Status S = R.setFeature("x", X);
  if (!S.isOk())
    die("setFeature: " + S.toString());
  return evaluateFloat(R);
}

void writeInPlace(ModelRunner &R, const std::vector<float> &X) {
  float *P = R.getTensor<float>(0);
  if (!P || R.featureSpec(0).elementCount() != X.size())
    die("runner has no fixed-shape float feature 0 for in-place writes");
  std::copy(X.begin(), X.end(), P);
}

} // namespace bench
