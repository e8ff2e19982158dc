//===- bench/runners.h - The runners mlbridge-bench measures ---------------===//
//
// Every runner x SerDes of the sweep, with the Python model (bench/
// bench_peer.py) each remote runner talks to, and the one request of the
// workload: a float vector in, a float out.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_BENCH_RUNNERS_H
#define MLBRIDGE_BENCH_RUNNERS_H

#include "bench_util.h"

#include "mlbridge/model_runner.h"
#include "mlbridge/serdes.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace bench {

/// The Python model: started, told to exit (stdin EOF), killed if needed.
struct Peer {
  mlbridge::ChildProcess Process;
  std::string TmpDir;
  std::vector<std::string> Bases; ///< pipe bases or the shm socket
  std::string Address;            ///< gRPC

  /// Mode: pipe, shm or grpc; Channels: pipe channels (one event loop).
  static std::unique_ptr<Peer> start(const std::string &Mode,
                                     const std::string &Serdes, int Channels);
  long rss() const { return statusKb(Process.pid(), "VmRSS"); }
  ~Peer();
};

struct RunnerDef {
  std::string Name, Serdes, Floor;
  /// Makes a runner: N = 1 for the small-message test; for the sweep N = 0
  /// (one runner for every size) or, with PerSize, the vector size.
  std::function<std::unique_ptr<mlbridge::ModelRunner>(int N)> Make;
  bool SmallIsInt = true; ///< the small test answers an int (Python peer)
  bool PerSize = false;   ///< in-process models have fixed shapes
  std::vector<int> OnlySizes = {}; ///< measured sizes (empty: all)
  /// Features written in place (LLVM's getTensor pattern, untimed like the
  /// loop floor's input) and only evaluate() timed: the runner's own cost.
  /// Sweep only; the small-message and memory tests use setFeature.
  bool InPlace = false;
  Peer *Model = nullptr; ///< the Python model of a remote runner
};

/// Every runner this build has, in table order; starts the Python models
/// into Peers (they live as long as Peers).
std::vector<RunnerDef> runnerDefs(std::vector<std::unique_ptr<Peer>> &Peers);

/// A remote runner for the scaling workers: Kind pipe, shm or grpc.
std::unique_ptr<mlbridge::ModelRunner>
makeRemote(const std::string &Kind, const std::string &Target,
           const std::string &Serdes);

/// One request of the sweep: set x, evaluate the float (dies on errors).
float call(mlbridge::ModelRunner &R, const std::vector<float> &X);
/// evaluate<float>() alone, for features written in place.
float evaluateFloat(mlbridge::ModelRunner &R);
/// Writes X into feature 0's own buffer (getTensor).
void writeInPlace(mlbridge::ModelRunner &R, const std::vector<float> &X);

} // namespace bench

#endif // MLBRIDGE_BENCH_RUNNERS_H
