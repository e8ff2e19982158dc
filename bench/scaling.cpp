//===- bench/scaling.cpp - K compiler processes against one Python model ---===//
#include "scaling.h"

#include "output.h"
#include "runners.h"
#include "sweep.h"

#include "support/json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <poll.h>
#include <unistd.h>

using namespace mlbridge;

namespace bench {

namespace {
/// Wall-clock microseconds: comparable between the worker processes.
double realUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// A number member of a worker's report, or NaN.
double member(const json::Value &V, std::string_view Key) {
  const json::Value *M = V.find(Key);
  return M && M->isNumber() ? M->number().Double : NAN;
}
} // namespace

int workerMain(int Argc, char **Argv) {
  std::string Kind, Target, Serdes = "bitstream";
  int N = 1000, Count = 100;
  for (int I = 1; I + 1 < Argc; ++I) {
    std::string K = Argv[I];
    if (K == "--worker")
      Kind = Argv[++I];
    else if (K == "--target")
      Target = Argv[++I];
    else if (K == "--serdes")
      Serdes = Argv[++I];
    else if (K == "--n")
      N = std::atoi(Argv[++I]);
    else if (K == "--count")
      Count = std::atoi(Argv[++I]);
  }
  std::unique_ptr<ModelRunner> R = makeRemote(Kind, Target, Serdes);
  std::vector<float> X = input(N);
  call(*R, X); // connect + header
  // Barrier: tell the parent we are connected, wait for its go.
  std::printf("ready\n");
  std::fflush(stdout);
  pollfd Go{0, POLLIN, 0};
  char C;
  if (::poll(&Go, 1, 120000) != 1 || ::read(0, &C, 1) != 1)
    return 1;
  double T0 = realUs();
  for (int I = 0; I < Count; ++I)
    call(*R, X);
  double T1 = realUs();
  std::string Report = "{\"start_us\":";
  json::appendDouble(Report, T0);
  Report += ",\"end_us\":";
  json::appendDouble(Report, T1);
  Report += ",\"count\":";
  json::appendInteger(Report, Count);
  std::printf("%s}\n", Report.c_str());
  std::fflush(stdout);
  return 0;
}

void scaling(const std::string &Kind, const std::string &Serdes) {
  const int N = 1000;
  const int Count = Cfg.Quick ? 50 : 2000;
  double Base1 = NAN;
  // One model for every K: a pipe peer with 8 channels (the first K are
  // used; one event loop serves them), one shm socket served by one event
  // loop, or one gRPC server.
  const bool Channels = Kind != "grpc";
  auto P = Peer::start(Kind, Serdes, Channels ? 8 : 1);
  for (int K : {1, 2, 4, 8}) {
    std::vector<ChildProcess> Ws;
    for (int I = 0; I < K; ++I)
      Ws.push_back(spawnPiped({Cfg.Self, "--worker", Kind, "--target",
                               Channels ? P->Bases[I] : P->Address,
                               "--serdes", Serdes, "--n", std::to_string(N),
                               "--count", std::to_string(Count)}));
    for (auto &W : Ws)
      if (readLine(W, std::chrono::seconds(60)) != "ready")
        die("scaling worker (" + Kind + ") did not connect");
    for (auto &W : Ws)
      if (::write(W.input(), "g", 1) != 1)
        die("scaling worker (" + Kind + ") gone");
    double First = 1e300, Last = 0;
    long Done = 0;
    for (auto &W : Ws) {
      std::string L = readLine(W, std::chrono::seconds(120));
      int St = finish(W, std::chrono::seconds(10));
      json::Value Report;
      double S = NAN, E = NAN;
      if (!L.empty() && json::parse(L, Report).isOk()) {
        S = member(Report, "start_us");
        E = member(Report, "end_us");
      }
      if (St != 0 || std::isnan(S) || std::isnan(E))
        die("scaling worker (" + Kind + ", " + std::to_string(K) +
            " procs) failed");
      First = std::min(First, S);
      Last = std::max(Last, E);
      Done += Count;
    }
    double Rps = double(Done) / ((Last - First) / 1e6);
    if (K == 1)
      Base1 = Rps;
    Row R;
    R.Section = "scaling";
    R.Runner = Kind;
    R.Serdes = Serdes;
    R.N = N;
    R.MedianUs = 1e6 / Rps * K; // mean latency per request per process
    R.Extra = {{"procs", double(K)},
               {"throughput_rps", Rps},
               {"speedup", Rps / Base1}};
    add(R);
    say("  %-6s %-10s procs=%d  %9.0f req/s  (x%.2f vs 1 proc)\n",
        R.Runner.c_str(), R.Serdes.c_str(), K, Rps, Rps / Base1);
  }
}

} // namespace bench
