//===- bench/sweep.cpp - The round-trip sweep against the floors -----------===//
#include "sweep.h"

#include "floors.h"
#include "output.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <new>

using namespace mlbridge;

namespace bench {

std::vector<float> input(int N) {
  std::vector<float> X(N);
  for (int I = 0; I < N; ++I)
    X[I] = float((I * 37 + N) % 101) / 101.0f - 0.5f;
  return X;
}

namespace {
constexpr float kBias = 0.5f;

std::vector<float> Weights() {
  std::vector<float> W(kMaxN);
  // numpy.linspace(-1, 1, 50000, dtype=float32): computed in double, cast.
  for (int I = 0; I < kMaxN; ++I)
    W[I] = float(-1.0 + 2.0 * double(I) / double(kMaxN - 1));
  W[kMaxN - 1] = 1.0f;
  return W;
}
// 64-byte aligned floats: the loop floor's data sits as well as a compiled
// model's buffers do (no load splits a cache line).
template <typename T> struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <typename U> Aligned64(const Aligned64<U> &) {}
  T *allocate(size_t N) {
    return static_cast<T *>(::operator new(N * sizeof(T), std::align_val_t(64)));
  }
  void deallocate(T *P, size_t) { ::operator delete(P, std::align_val_t(64)); }
  template <typename U> bool operator==(const Aligned64<U> &) const { return true; }
  template <typename U> bool operator!=(const Aligned64<U> &) const { return false; }
};
using AlignedFloats = std::vector<float, Aligned64<float>>;

const AlignedFloats &W() {
  static const AlignedFloats V = [] {
    std::vector<float> Src = Weights();
    return AlignedFloats(Src.begin(), Src.end());
  }();
  return V;
}

// The floor of the in-process runners: the layer as a plain loop.
__attribute__((noinline)) float handLoop(const float *X, int N) {
  const float *Wp = W().data();
  float S = 0;
  for (int I = 0; I < N; ++I)
    S += X[I] * Wp[I];
  return S + kBias;
}
// The same with eight partial sums, which the compiler turns into SIMD
// (what a tuned kernel does); the loop floor is the faster of the two.
__attribute__((noinline)) float handLoop8(const float *X, int N) {
  const float *Wp = W().data();
  float Acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int I = 0;
  for (; I + 8 <= N; I += 8)
    for (int K = 0; K < 8; ++K)
      Acc[K] += X[I + K] * Wp[I + K];
  float S = 0;
  for (; I < N; ++I)
    S += X[I] * Wp[I];
  for (float A : Acc)
    S += A;
  return S + kBias;
}

struct Series {
  std::vector<double> Median, P90;
};

Series sweepRunner(const RunnerDef &D) {
  const std::string Name = D.Name + "+" + D.Serdes;
  std::unique_ptr<ModelRunner> Shared = D.PerSize ? nullptr : D.Make(0);
  Series S;
  int Bad = 0;
  for (int N : sizes()) {
    if (!D.OnlySizes.empty() &&
        std::find(D.OnlySizes.begin(), D.OnlySizes.end(), N) ==
            D.OnlySizes.end()) {
      S.Median.push_back(NAN);
      S.P90.push_back(NAN);
      continue;
    }
    std::unique_ptr<ModelRunner> Own = D.PerSize ? D.Make(N) : nullptr;
    ModelRunner &R = D.PerSize ? *Own : *Shared;
    std::vector<float> X = input(N);
    float Want = handLoop(X.data(), N);
    call(R, X); // warm-up (and the header of a new shape)
    std::vector<double> T;
    for (int I = 0; I < reps(); ++I) {
      if (D.InPlace)
        writeInPlace(R, X);
      double T0 = nowUs();
      float Y = D.InPlace ? evaluateFloat(R) : call(R, X);
      T.push_back(nowUs() - T0);
      if (std::fabs(Y - Want) > 1e-3f * (1.0f + std::fabs(Want)))
        ++Bad;
    }
    S.Median.push_back(median(T));
    S.P90.push_back(pct(T, 0.9));
  }
  if (Bad)
    die(Name + ": " + std::to_string(Bad) + " wrong answers");
  return S;
}

// One floor measured both ways; Best is the faster median per size.
struct FloorSeries {
  std::string Name;
  Series Best;
  std::vector<std::pair<std::string, std::vector<double>>> Ways;
};

Series sweepOnce(const std::function<double(const std::vector<char> &,
                                            const std::vector<float> &)> &Once,
                 int Reps = reps()) {
  Series S;
  for (int N : sizes()) {
    std::vector<double> T;
    std::vector<char> Payload(size_t(N) * 4, 1);
    std::vector<float> X = input(N);
    Once(Payload, X); // warm-up
    for (int I = 0; I < Reps; ++I)
      T.push_back(Once(Payload, X));
    S.Median.push_back(median(T));
    S.P90.push_back(pct(T, 0.9));
  }
  return S;
}

FloorSeries bestOf(std::string Name,
                   std::vector<std::pair<std::string, Series>> Ways) {
  FloorSeries F;
  F.Name = std::move(Name);
  F.Best = Ways.front().second;
  for (auto &[Way, S] : Ways) {
    for (size_t I = 0; I < S.Median.size(); ++I)
      if (S.Median[I] < F.Best.Median[I]) {
        F.Best.Median[I] = S.Median[I];
        F.Best.P90[I] = S.P90[I];
      }
    F.Ways.push_back({Way, S.Median});
  }
  return F;
}

FloorSeries transportFloor(
    std::string Name,
    const std::function<std::unique_ptr<TransportFloor>(Wait)> &Make) {
  std::vector<std::pair<std::string, Series>> Ways;
  for (Wait W : {Wait::Blocking, Wait::Spinning}) {
    auto F = Make(W);
    Ways.push_back({waitName(W), sweepOnce([&](const std::vector<char> &P,
                                               const std::vector<float> &) {
                      return F->once(P);
                    })});
  }
  return bestOf(std::move(Name), std::move(Ways));
}

FloorSeries loopFloor() {
  // Aligned input, and ten times the runners' samples (a loop costs
  // microseconds): with neither, the compiled model beat the floor by up to
  // 26 % at some sizes.
  auto Timed = [](float (*Loop)(const float *, int)) {
    return sweepOnce(
        [Loop](const std::vector<char> &, const std::vector<float> &X) {
          static AlignedFloats In; // one size's input, copied once, untimed
          if (In.size() != X.size())
            In.assign(X.begin(), X.end());
          double T0 = nowUs();
          volatile float Sink = Loop(In.data(), int(In.size()));
          (void)Sink;
          return nowUs() - T0;
        },
        10 * reps());
  };
  return bestOf("loop-floor", {{"scalar", Timed(handLoop)},
                               {"lanes8", Timed(handLoop8)}});
}

// A runner faster than its floor means the floor does not measure what it
// claims (it did once: a FIFO floor above pipe+bitstream). Allowed noise:
// the median over sizes of runner/floor may not fall below this.
constexpr double kFloorNoise = 0.85;
std::vector<std::string> BrokenFloors;

void checkFloor(const std::string &Runner, const Series &R,
                const FloorSeries &F) {
  std::vector<double> Ratios;
  for (size_t I = 0; I < R.Median.size() && I < F.Best.Median.size(); ++I)
    if (!std::isnan(R.Median[I]))
      Ratios.push_back(R.Median[I] / F.Best.Median[I]);
  double M = median(Ratios);
  if (M < kFloorNoise) {
    char B[256];
    std::snprintf(B, sizeof B,
                  "%s is %.2fx its floor %s (median over sizes): the floor "
                  "is broken",
                  Runner.c_str(), M, F.Name.c_str());
    BrokenFloors.push_back(B);
  }
}

double total(const std::vector<double> &V) {
  double S = 0;
  for (double X : V)
    S += X;
  return S;
}

/// The paper's total over the 100 sizes (ms) for a runner, NaN if none.
double paperMs(const std::string &Runner, const std::string &Serdes) {
  if (Runner == "pipe" && Serdes == "bitstream")
    return 772;
  if (Runner == "pipe" && Serdes == "json")
    return 3154;
  if (Runner == "grpc")
    return 5948;
  if (Runner == "onnx")
    return 68;
  return NAN;
}

} // namespace

std::vector<std::string> sweep(const std::vector<RunnerDef> &Defs) {
  const std::vector<int> Sizes = sizes();
  // Floors first: per transport the faster of a blocking and a spinning
  // ping-pong with another C++ process, per size.
  std::map<std::string, FloorSeries> Floors;
  auto addFloor = [&](FloorSeries F) {
    for (size_t I = 0; I < Sizes.size() && I < F.Best.Median.size(); ++I) {
      Row R;
      R.Section = "rtt";
      R.Runner = F.Name;
      R.Serdes = "raw";
      R.N = Sizes[I];
      R.MedianUs = F.Best.Median[I];
      R.P90Us = F.Best.P90[I];
      R.Floor = F.Name;
      R.FloorUs = F.Best.Median[I];
      for (auto &[Way, M] : F.Ways)
        R.Extra.push_back({Way + "_us", M[I]});
      add(R);
    }
    std::string Name = F.Name;
    Floors[Name] = std::move(F);
  };
  addFloor(transportFloor("fifo-floor", makeFifoFloor));
  addFloor(transportFloor("shm-floor", [](Wait W) {
    return makeShmFloor(W, size_t(kMaxN) * 4 + 4096);
  }));
#ifdef MLBRIDGE_BENCH_GRPC
  addFloor(transportFloor(
      "grpc-floor", [](Wait W) { return makeGrpcFloor(W, Cfg.Self); }));
#endif
  addFloor(loopFloor());

  say("\nRound-trip time per request (median of %d, microseconds)\n", reps());
  say("%-8s", "floats");
  for (auto &D : Defs)
    say(" %18s", (D.Name + "+" + D.Serdes).c_str());
  for (auto &[Name, F] : Floors)
    say(" %10s", Name.substr(0, Name.size() - 6).c_str());
  say("\n");
  std::vector<Series> All;
  for (auto &D : Defs) {
    All.push_back(sweepRunner(D));
    checkFloor(D.Name + "+" + D.Serdes, All.back(), Floors.at(D.Floor));
  }
  for (size_t I = 0; I < Sizes.size(); ++I) {
    bool Show = Cfg.Quick || Sizes[I] % 5000 == 0 || Sizes[I] == 500;
    if (Show)
      say("%-8d", Sizes[I]);
    for (size_t D = 0; D < Defs.size(); ++D) {
      const Series &F = Floors.at(Defs[D].Floor).Best;
      Row R;
      R.Section = "rtt";
      R.Runner = Defs[D].Name;
      R.Serdes = Defs[D].Serdes;
      R.N = Sizes[I];
      R.MedianUs = All[D].Median[I];
      R.P90Us = All[D].P90[I];
      R.Floor = Defs[D].Floor;
      R.FloorUs = F.Median[I];
      const bool Measured = !std::isnan(R.MedianUs);
      if (Measured)
        add(R);
      if (Show) {
        char B[64] = "-";
        if (Measured)
          std::snprintf(B, sizeof B, "%.1f (x%.1f)", R.MedianUs,
                        R.MedianUs / R.FloorUs);
        say(" %18s", B);
      }
    }
    if (Show) {
      for (auto &[Name, F] : Floors)
        say(" %10.2f", F.Best.Median[I]);
      say("\n");
    }
  }
  if (!Cfg.Quick)
    say("(every 10th size shown; all %zu in the CSV/JSON)\n", Sizes.size());

  say("\nPaper-style totals over the %zu sizes (sum of per-size medians)\n",
      Sizes.size());
  say("%-22s %12s %12s %10s %12s %14s\n", "runner", "total ms", "floor ms",
      "x floor", "paper ms", "paper/ours");
  auto totalRow = [&](const std::string &Runner, const std::string &Serdes,
                      const std::string &Floor, double Ms, double FloorMs) {
    double Paper = paperMs(Runner, Serdes);
    Row R;
    R.Section = "total";
    R.Runner = Runner;
    R.Serdes = Serdes;
    R.N = long(Sizes.size());
    R.MedianUs = Ms * 1000;
    R.Floor = Floor;
    R.FloorUs = FloorMs * 1000;
    R.Extra = {{"paper_ms", Paper}};
    add(R);
    say("%-22s %12.2f %12.2f %10.2f %12.0f %14.1f\n",
        (Runner + "+" + Serdes).c_str(), Ms, FloorMs, Ms / FloorMs, Paper,
        Paper / Ms);
  };
  for (size_t D = 0; D < Defs.size(); ++D) {
    // Over the sizes this runner was measured at (all, except compiled).
    const std::vector<double> &F = Floors.at(Defs[D].Floor).Best.Median;
    double Ms = 0, FloorMs = 0;
    for (size_t I = 0; I < All[D].Median.size(); ++I)
      if (!std::isnan(All[D].Median[I])) {
        Ms += All[D].Median[I] / 1000;
        FloorMs += F[I] / 1000;
      }
    totalRow(Defs[D].Name, Defs[D].Serdes, Defs[D].Floor, Ms, FloorMs);
  }
  for (auto &[Name, F] : Floors)
    totalRow(Name, "raw", Name, total(F.Best.Median) / 1000,
             total(F.Best.Median) / 1000);

  return BrokenFloors;
}

} // namespace bench
