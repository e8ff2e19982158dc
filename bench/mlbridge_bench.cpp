//===- bench/mlbridge_bench.cpp - Round-trip times against physical floors ===//
//
// mlbridge-bench: the paper's round-trip workload (100 float vectors of
// 500, 1000, ..., 50,000 elements, each sent to one fully connected layer
// returning a scalar) through every runner x SerDes, next to floors
// measured in the same run (bench/floors.h): for each transport the faster,
// per size, of a blocking and a spinning ping-pong of the same tensor bytes
// between two C++ processes --
//   * fifo-floor  - two FIFOs, floor of the pipe runners;
//   * shm-floor   - a shared mapping (memcpy in, sequence number, futex),
//                   floor of the shared-memory runner;
//   * grpc-floor  - a raw gRPC unary call (generic stub, callback generic
//                   service in another process, loopback TCP), floor of the
//                   gRPC runner;
// and for the in-process runners the faster of a scalar and an 8-lane
// hand-written loop doing the same arithmetic (loop-floor); the in-process
// runners are timed twice, with setFeature(vector) + evaluate (the paper's
// way) and evaluate alone on features written in place. A runner that
// beats its floor beyond noise makes the run fail: the floor is broken.
// Also: a small-message test (one float in, one int out), scaling (1, 2, 4,
// 8 concurrent compiler processes against one Python model) and memory (RSS
// after N1 and N2 calls). The Python model is bench/bench_peer.py, started
// and killed by this program. See docs/performance.md.
//
//   mlbridge-bench [--quick] [--json] [--out-dir DIR] [--reps N]
//                  [--skip-scaling] [--skip-memory] [--python PY]
//                  [--fc-dir DIR] [--only RUNNER]
//
// Never hangs: every wait on a child has a deadline; children are killed on
// exit (normal, error or SIGINT/SIGTERM).
//
// The parts: runners.* (the runners and their Python models), sweep.* (the
// round-trip sweep, the floors of the in-process runners, the tables),
// floors.* (the transports' floors), scaling.*, memory.*, output.* (rows,
// JSON lines, results.jsonl / results.csv / rtt.png), bench_util.*.
//
//===----------------------------------------------------------------------===//
#include "bench_util.h"
#include "floors.h"
#include "memory.h"
#include "output.h"
#include "runners.h"
#include "scaling.h"
#include "sweep.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <unistd.h>

using namespace bench;

namespace {
void usage() {
  std::fprintf(stderr,
               "usage: mlbridge-bench [--quick] [--json] [--out-dir DIR] "
               "[--reps N] [--skip-scaling] [--skip-memory] [--python PY] "
               "[--fc-dir DIR] [--only RUNNER]\n");
}
} // namespace

int main(int Argc, char **Argv) {
  Cfg.Self = "/proc/self/exe";
  {
    char B[4096];
    ssize_t K = ::readlink("/proc/self/exe", B, sizeof B - 1);
    if (K > 0)
      Cfg.Self.assign(B, size_t(K));
  }
  ::signal(SIGPIPE, SIG_IGN);
  if (Argc > 1 && std::string(Argv[1]) == "--worker")
    return workerMain(Argc, Argv);
#ifdef MLBRIDGE_BENCH_GRPC
  if (Argc > 1 && std::string(Argv[1]) == "--grpc-floor-server")
    return grpcFloorServerMain();
#endif
  for (int I = 1; I < Argc; ++I) {
    std::string A = Argv[I];
    auto Next = [&]() -> std::string {
      if (I + 1 >= Argc) {
        usage();
        std::exit(2);
      }
      return Argv[++I];
    };
    if (A == "--quick")
      Cfg.Quick = true;
    else if (A == "--json")
      Cfg.Json = true;
    else if (A == "--skip-scaling")
      Cfg.Scaling = false;
    else if (A == "--skip-memory")
      Cfg.Memory = false;
    else if (A == "--out-dir")
      Cfg.OutDir = Next();
    else if (A == "--reps")
      Cfg.Reps = std::atoi(Next().c_str());
    else if (A == "--python")
      Cfg.Python = Next();
    else if (A == "--fc-dir")
      Cfg.FcDir = Next();
    else if (A == "--only")
      Cfg.Only = Next();
    else {
      usage();
      return A == "--help" || A == "-h" ? 0 : 2;
    }
  }
  cleanUpOnExit();

  std::vector<int> Sizes = sizes();
  double L1 = 0, L5 = 0, L15 = 0;
  if (FILE *F = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(F, "%lf %lf %lf", &L1, &L5, &L15) != 3)
      L1 = L5 = L15 = 0;
    std::fclose(F);
  }
  say("mlbridge-bench%s: %zu sizes (%d..%d floats), %d reps each; load "
      "average %.2f %.2f %.2f; %u CPUs\n",
      Cfg.Quick ? " --quick" : "", Sizes.size(), Sizes.front(), Sizes.back(),
      reps(), L1, L5, L15, std::thread::hardware_concurrency());
  record({"machine", "", "", 0, NAN, NAN, "", NAN,
          {{"loadavg_1", L1}, {"loadavg_5", L5}, {"loadavg_15", L15}}});

  std::vector<std::unique_ptr<Peer>> Peers; // the remote runners' models
  std::vector<RunnerDef> Defs = runnerDefs(Peers);
  Defs.erase(std::remove_if(Defs.begin(), Defs.end(),
                            [](const RunnerDef &D) {
                              return !selected(D.Name + "+" + D.Serdes);
                            }),
             Defs.end());
  std::vector<std::string> BrokenFloors = sweep(Defs);

  if (Cfg.Memory) {
    say("\nSmall messages (one float in, one int out; ONNX: one float out) "
        "and memory\n");
    for (const RunnerDef &D : Defs)
      if (!D.InPlace)
        smallAndMemory(D);
  }
  Defs.clear();
  Peers.clear();

  if (Cfg.Scaling) {
    say("\nScaling: K compiler processes x 1000-float requests against one "
        "Python model\n");
    // --only applies here too (by "kind+serdes").
    if (selected("pipe+bitstream"))
      scaling("pipe", "bitstream");
    if (selected("shm+bitstream"))
      scaling("shm", "bitstream");
#ifdef MLBRIDGE_BENCH_GRPC
    if (selected("grpc+protobuf"))
      scaling("grpc", "protobuf");
#endif
  }

  writeOutputs();
  mlbridge::killAllChildren();
  if (!BrokenFloors.empty()) {
    for (auto &B : BrokenFloors)
      std::fprintf(stderr, "mlbridge-bench: BROKEN FLOOR: %s\n", B.c_str());
    // --quick takes too few samples to tell a broken floor from noise.
    if (!Cfg.Quick)
      return 3;
  }
  return 0;
}
