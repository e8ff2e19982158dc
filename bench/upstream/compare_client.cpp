//===- bench/upstream/compare_client.cpp - Our side of upstream_compare.py -===//
//
// The compiler side of the side-by-side benchmark against the published
// implementation (bench/upstream_compare.py, docs/upstream-comparison.md),
// through this library's public API:
//   mlbridge-compare-client --transport pipe --serdes bitstream|json --target BASE
//   mlbridge-compare-client --transport grpc --target HOST:PORT
// BASE / HOST:PORT come from bench_peer.py. Protocol, shared with the client
// built against the published library: stdin carries "N K" lines; for each,
// the client makes K timed calls with the benchmark's input of size N (after
// one untimed call when N changed) and prints one JSON line
//   {"n":N,"us":[K times in microseconds],"y":[K answers]}
// The harness checks the answers. Exits at EOF on stdin.
//
//===----------------------------------------------------------------------===//
#include "mlbridge/pipe_model_runner.h"
#ifdef MLBRIDGE_COMPARE_GRPC
#include "mlbridge/grpc_model_runner.h"
#endif

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace mlbridge;

namespace {

[[noreturn]] void fail(const std::string &Msg) {
  std::fprintf(stderr, "mlbridge-compare-client: %s\n", Msg.c_str());
  std::exit(1);
}

// The benchmark's input (bench/mlbridge_bench.cpp's input()).
std::vector<float> input(int N) {
  std::vector<float> X(N);
  for (int I = 0; I < N; ++I)
    X[I] = float((I * 37 + N) % 101) / 101.0f - 0.5f;
  return X;
}

DiagnosticSink toStderr() {
  return [](Severity, std::string_view M) {
    std::fprintf(stderr, "mlbridge-compare-client: %.*s\n", int(M.size()),
                 M.data());
  };
}

std::unique_ptr<ModelRunner> makeRunner(const std::string &Transport,
                                        const std::string &Serdes,
                                        const std::string &Target) {
  if (Transport == "pipe") {
    PipeOptions O;
    O.Format = Serdes == "json" ? SerDesKind::Json : SerDesKind::Bitstream;
    O.OpenTimeout = std::chrono::seconds(30);
    O.ReplyTimeout = std::chrono::seconds(60);
    O.Diagnostics = toStderr();
    auto R = PipeModelRunner::create(Target, {}, std::nullopt, O);
    if (!R)
      fail("pipe runner: " + R.status().toString());
    return std::move(*R);
  }
#ifdef MLBRIDGE_COMPARE_GRPC
  if (Transport == "grpc") {
    GrpcOptions O;
    O.CallTimeout = std::chrono::seconds(60);
    O.ConnectTimeout = std::chrono::seconds(30);
    O.Diagnostics = toStderr();
    auto R = GrpcModelRunner::create(Target, {}, std::nullopt, O);
    if (!R)
      fail("gRPC runner: " + R.status().toString());
    return std::move(*R);
  }
#endif
  fail("unknown or unbuilt transport '" + Transport + "'");
}

float call(ModelRunner &R, const std::vector<float> &X) {
  Status S = R.setFeature("x", X);
  if (!S.isOk())
    fail("setFeature: " + S.toString());
  Expected<float> Y = R.evaluate<float>();
  if (!Y)
    fail("evaluate: " + Y.status().toString());
  return *Y;
}

} // namespace

int main(int Argc, char **Argv) {
  std::string Transport, Serdes = "bitstream", Target;
  for (int I = 1; I < Argc; ++I) {
    std::string K = Argv[I];
    if (I + 1 >= Argc)
      fail("missing value after " + K);
    if (K == "--transport")
      Transport = Argv[++I];
    else if (K == "--serdes")
      Serdes = Argv[++I];
    else if (K == "--target")
      Target = Argv[++I];
    else
      fail("unknown argument " + K);
  }
  if (Transport.empty() || Target.empty())
    fail("usage: mlbridge-compare-client --transport pipe|grpc "
         "[--serdes bitstream|json] --target BASE|HOST:PORT");
  std::unique_ptr<ModelRunner> R = makeRunner(Transport, Serdes, Target);
  int N = 0, K = 0, LastN = -1;
  while (std::scanf("%d %d", &N, &K) == 2) {
    if (N < 1 || K < 1)
      fail("bad command");
    std::vector<float> X = input(N);
    if (N != LastN)
      call(*R, X); // warm-up (and the header of a new shape)
    LastN = N;
    std::string Us, Ys;
    for (int I = 0; I < K; ++I) {
      auto T0 = std::chrono::steady_clock::now();
      float Y = call(*R, X);
      double T = std::chrono::duration<double, std::micro>(
                     std::chrono::steady_clock::now() - T0)
                     .count();
      char B[64];
      std::snprintf(B, sizeof B, "%s%.3f", I ? "," : "", T);
      Us += B;
      std::snprintf(B, sizeof B, "%s%.9g", I ? "," : "", double(Y));
      Ys += B;
    }
    std::printf("{\"n\":%d,\"us\":[%s],\"y\":[%s]}\n", N, Us.c_str(),
                Ys.c_str());
    std::fflush(stdout);
  }
  return 0;
}
