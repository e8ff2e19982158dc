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
//===----------------------------------------------------------------------===//
#include "bench_util.h"
#include "floors.h"

#include "mlbridge/model_runner.h"
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
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <poll.h>
#include <spawn.h>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char **environ;

using namespace mlbridge;
using Clock = std::chrono::steady_clock;

namespace bench {

// ---- configuration ----------------------------------------------------------
constexpr int kMaxN = 50000;
constexpr float kBias = 0.5f;

struct Config {
  bool Quick = false;
  bool Json = false;
  bool Scaling = true;
  bool Memory = true;
  int Reps = 0; // 0: default for the mode
  std::string OutDir = "bench-results";
  std::string Python = MLBRIDGE_BENCH_PYTHON;
  std::string BenchDir = MLBRIDGE_BENCH_SOURCE_DIR;
  std::string FcDir = MLBRIDGE_BENCH_FC_DIR; // fc_<n>.onnx
  std::string Self;
  std::string Only; // --only A,B: runners whose "name+serdes" contains A or B
};
Config Cfg;

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

std::vector<float> input(int N) {
  std::vector<float> X(N);
  for (int I = 0; I < N; ++I)
    X[I] = float((I * 37 + N) % 101) / 101.0f - 0.5f;
  return X;
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

double nowUs() {
  return std::chrono::duration<double, std::micro>(
             Clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> V) {
  if (V.empty())
    return NAN;
  std::sort(V.begin(), V.end());
  size_t M = V.size() / 2;
  return V.size() % 2 ? V[M] : (V[M - 1] + V[M]) / 2;
}
double pct(std::vector<double> V, double P) {
  if (V.empty())
    return NAN;
  std::sort(V.begin(), V.end());
  return V[std::min(V.size() - 1, size_t(P * double(V.size() - 1) + 0.5))];
}

/// The "<Field>: N kB" value of /proc/<P>/status (P = 0: this process), or -1.
long statusKb(pid_t P, const std::string &Field) {
  std::ifstream F(P ? "/proc/" + std::to_string(P) + "/status"
                    : std::string("/proc/self/status"));
  const std::string Key = Field + ":";
  std::string L;
  while (std::getline(F, L))
    if (L.rfind(Key, 0) == 0)
      return std::atol(L.c_str() + Key.size());
  return -1;
}
long rssKb() { return statusKb(0, "VmRSS"); }
long rssKbOf(pid_t P) { return statusKb(P, "VmRSS"); }

[[noreturn]] void die(const std::string &Msg);

// ---- results ----------------------------------------------------------------
struct Row {
  std::string Section; // rtt, small, scaling, memory, total
  std::string Runner, Serdes;
  long N = 0;          // floats per request (rtt), calls (memory), procs (scaling)
  double MedianUs = NAN, P90Us = NAN;
  std::string Floor;   // floor name
  double FloorUs = NAN;
  std::vector<std::pair<std::string, double>> Extra;
};
std::vector<Row> Rows;

std::string num(double V) {
  if (std::isnan(V))
    return "null";
  char B[64];
  std::snprintf(B, sizeof B, "%.3f", V);
  return B;
}
std::string jsonRow(const Row &R) {
  std::ostringstream O;
  O << "{\"section\":\"" << R.Section << "\",\"runner\":\"" << R.Runner
    << "\",\"serdes\":\"" << R.Serdes << "\",\"n\":" << R.N
    << ",\"median_us\":" << num(R.MedianUs) << ",\"p90_us\":" << num(R.P90Us)
    << ",\"floor\":" << (R.Floor.empty() ? "null" : "\"" + R.Floor + "\"")
    << ",\"floor_us\":" << num(R.FloorUs) << ",\"ratio\":"
    << num(R.MedianUs / R.FloorUs);
  for (auto &[K, V] : R.Extra)
    O << ",\"" << K << "\":" << num(V);
  O << "}";
  return O.str();
}
void add(Row R) {
  if (Cfg.Json) {
    std::printf("%s\n", jsonRow(R).c_str());
    std::fflush(stdout);
  }
  Rows.push_back(std::move(R));
}
// Human output goes to stdout, or to stderr with --json (stdout is JSON).
void say(const char *Fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char *Fmt, ...) {
  va_list A;
  va_start(A, Fmt);
  std::vfprintf(Cfg.Json ? stderr : stdout, Fmt, A);
  va_end(A);
  std::fflush(Cfg.Json ? stderr : stdout);
}

// ---- children: spawned with deadlines, always killed ------------------------
std::mutex ChildLock;
std::vector<pid_t> Children;

void killChildren() {
  std::lock_guard<std::mutex> G(ChildLock);
  for (pid_t P : Children)
    if (P > 0)
      ::kill(P, SIGKILL);
  for (pid_t P : Children)
    if (P > 0)
      ::waitpid(P, nullptr, 0);
  Children.clear();
}
// Temporary directories (FIFOs) to remove on any exit, also after die().
std::vector<std::string> TmpDirs;
void removeTmpDirs() {
  for (auto &D : TmpDirs) {
    if (DIR *Dir = ::opendir(D.c_str())) {
      while (dirent *E = ::readdir(Dir))
        if (std::strcmp(E->d_name, ".") && std::strcmp(E->d_name, ".."))
          ::unlink((D + "/" + E->d_name).c_str());
      ::closedir(Dir);
    }
    ::rmdir(D.c_str());
  }
  TmpDirs.clear();
}
std::string makeTmpDir(const char *Prefix) {
  std::string T = std::string("/tmp/") + Prefix + "-XXXXXX";
  if (!::mkdtemp(T.data()))
    die("mkdtemp: " + std::string(std::strerror(errno)));
  TmpDirs.push_back(T);
  return T;
}
void onSignal(int Sig) {
  for (pid_t P : Children) // best effort, async-signal-safe
    if (P > 0)
      ::kill(P, SIGKILL);
  ::_exit(128 + Sig);
}
void die(const std::string &Msg) {
  std::fprintf(stderr, "mlbridge-bench: error: %s\n", Msg.c_str());
  killChildren();
  removeTmpDirs();
  std::exit(1);
}
void track(pid_t P) {
  std::lock_guard<std::mutex> G(ChildLock);
  Children.push_back(P);
}
int reap(pid_t P, std::chrono::milliseconds Timeout) {
  auto End = Clock::now() + Timeout;
  int St = 0;
  for (;;) {
    pid_t R = ::waitpid(P, &St, WNOHANG);
    if (R == P || (R < 0 && errno != EINTR))
      break;
    if (Clock::now() > End) {
      ::kill(P, SIGKILL);
      ::waitpid(P, &St, 0);
      St = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::lock_guard<std::mutex> G(ChildLock);
  Children.erase(std::remove(Children.begin(), Children.end(), P),
                 Children.end());
  return St;
}

Spawned spawn(const std::vector<std::string> &Argv) {
  int I[2], O[2];
  if (::pipe2(I, O_CLOEXEC) || ::pipe2(O, O_CLOEXEC))
    die("pipe: " + std::string(std::strerror(errno)));
  posix_spawn_file_actions_t FA;
  posix_spawn_file_actions_init(&FA);
  posix_spawn_file_actions_adddup2(&FA, I[0], 0);
  posix_spawn_file_actions_adddup2(&FA, O[1], 1);
  std::vector<char *> A;
  for (auto &S : Argv)
    A.push_back(const_cast<char *>(S.c_str()));
  A.push_back(nullptr);
  pid_t P;
  int E = posix_spawn(&P, A[0], &FA, nullptr, A.data(), environ);
  posix_spawn_file_actions_destroy(&FA);
  ::close(I[0]);
  ::close(O[1]);
  if (E)
    die("cannot start " + Argv[0] + ": " + std::strerror(E));
  track(P);
  return {P, I[1], O[0]};
}
std::string readLine(int Fd, std::chrono::milliseconds Timeout) {
  std::string L;
  auto End = Clock::now() + Timeout;
  for (;;) {
    int Left = int(std::chrono::duration_cast<std::chrono::milliseconds>(
                       End - Clock::now())
                       .count());
    if (Left <= 0)
      return "";
    pollfd P{Fd, POLLIN, 0};
    int R = ::poll(&P, 1, Left);
    if (R < 0 && errno == EINTR)
      continue;
    if (R <= 0)
      return "";
    char C;
    ssize_t K = ::read(Fd, &C, 1);
    if (K <= 0)
      return "";
    if (C == '\n')
      return L;
    L += C;
  }
}
// A string field of a flat JSON line (enough for our own peer's output).
std::string field(const std::string &Line, const std::string &Key) {
  size_t K = Line.find("\"" + Key + "\"");
  if (K == std::string::npos)
    return "";
  size_t Q = Line.find('"', Line.find(':', K) + 1);
  size_t E = Line.find('"', Q + 1);
  return Q == std::string::npos ? "" : Line.substr(Q + 1, E - Q - 1);
}

// The Python model: started, told to exit (stdin EOF), killed if needed.
struct Peer {
  Spawned S;
  std::string Ready;
  std::string TmpDir;
  std::vector<std::string> Bases;
  std::string Address;

  static std::unique_ptr<Peer> start(const std::string &Mode,
                                     const std::string &Serdes, int Channels) {
    auto P = std::make_unique<Peer>();
    P->TmpDir = makeTmpDir("mlbridge-bench");
    P->S = spawn({Cfg.Python, Cfg.BenchDir + "/bench_peer.py", "--mode", Mode,
                  "--serdes", Serdes, "--dir", P->TmpDir, "--channels",
                  std::to_string(Channels)});
    P->Ready = readLine(P->S.Out, std::chrono::seconds(60));
    if (P->Ready.empty())
      die("the Python peer (" + Mode + ", " + Serdes +
          ") did not start; is numpy/grpcio installed for " + Cfg.Python + "?");
    if (Mode == "grpc")
      P->Address = field(P->Ready, "address");
    else
      for (int I = 0; I < Channels; ++I) // shm: one socket, one event loop
        P->Bases.push_back(Mode == "shm" ? P->TmpDir + "/ch0.sock"
                                         : P->TmpDir + "/ch" + std::to_string(I));
    return P;
  }
  long rss() const { return rssKbOf(S.Pid); }
  ~Peer() {
    ::close(S.In); // the peer exits on stdin EOF
    if (reap(S.Pid, std::chrono::seconds(5)) != 0) {
      // killed or failed: nothing else to do
    }
    ::close(S.Out);
    for (auto &B : Bases) { // what a killed peer may have left
      ::unlink((B + ".in").c_str());
      ::unlink((B + ".out").c_str());
      ::unlink(B.c_str());
    }
    ::rmdir(TmpDir.c_str());
  }
};

// ---- runners ------------------------------------------------------------------
struct RunnerDef {
  std::string Name, Serdes, Floor;
  // Makes a runner: N = 1 for the small-message test; for the sweep N = 0
  // (one runner for every size) or, with PerSize, the vector size.
  std::function<std::unique_ptr<ModelRunner>(int N)> Make;
  bool SmallIsInt = true; // small test answers an int (Python peer)
  bool PerSize = false;   // in-process models have fixed shapes
  std::vector<int> OnlySizes = {}; // measured sizes (empty: all)
  // Features written in place (LLVM's getTensor pattern, untimed like the
  // loop floor's input) and only evaluate() timed: the runner's own cost.
  // Sweep only; the small-message and memory tests use setFeature.
  bool InPlace = false;
};

DiagnosticSink sink() {
  return [](Severity, std::string_view M) {
    std::fprintf(stderr, "mlbridge-bench: runner: %.*s\n", int(M.size()),
                 M.data());
  };
}

std::unique_ptr<ModelRunner> makePipe(const std::string &Base, SerDesKind K,
                                      bool Small) {
  PipeOptions O;
  O.Format = K;
  O.OpenTimeout = std::chrono::seconds(30);
  O.ReplyTimeout = std::chrono::seconds(60);
  O.Diagnostics = sink();
  auto R = Small ? PipeModelRunner::create(
                       Base, {TensorSpec::create<float>("f")},
                       TensorSpec::create<int64_t>("a"), O)
                 : PipeModelRunner::create(Base, {}, std::nullopt, O);
  if (!R)
    die("pipe runner: " + R.status().toString());
  return std::move(*R);
}

std::unique_ptr<ModelRunner> makeShm(const std::string &Path, SerDesKind K,
                                     bool Small) {
  ShmOptions O;
  O.Format = K;
  O.OpenTimeout = std::chrono::seconds(30);
  O.ReplyTimeout = std::chrono::seconds(60);
  O.Diagnostics = sink();
  auto R = Small ? ShmModelRunner::create(
                       Path, {TensorSpec::create<float>("f")},
                       TensorSpec::create<int64_t>("a"), O)
                 : ShmModelRunner::create(Path, {}, std::nullopt, O);
  if (!R)
    die("shm runner: " + R.status().toString());
  return std::move(*R);
}

#ifdef MLBRIDGE_BENCH_GRPC
std::unique_ptr<ModelRunner> makeGrpc(const std::string &Addr, bool Small) {
  GrpcOptions O;
  O.CallTimeout = std::chrono::seconds(60);
  O.ConnectTimeout = std::chrono::seconds(30);
  O.Diagnostics = sink();
  auto R = Small ? GrpcModelRunner::create(
                       Addr, {TensorSpec::create<float>("f")},
                       TensorSpec::create<int64_t>("a"), O)
                 : GrpcModelRunner::create(Addr, {}, std::nullopt, O);
  if (!R)
    die("gRPC runner: " + R.status().toString());
  return std::move(*R);
}
#endif

#ifdef MLBRIDGE_BENCH_ONNX
std::string fcModel(int N) {
  return Cfg.FcDir + "/fc_" + std::to_string(N) + ".onnx";
}

std::unique_ptr<ModelRunner> makeOnnx(int N) {
  OnnxOptions O;
  O.Diagnostics = sink();
  auto R = OnnxModelRunner::create(fcModel(N), O);
  if (!R)
    die("ONNX runner (" + fcModel(N) + "): " + R.status().toString());
  return std::move(*R);
}
#endif

#ifdef MLBRIDGE_BENCH_COMPILED
std::vector<int> compiledSizes() {
  std::vector<int> S;
#define MLBRIDGE_BENCH_SIZE(n) S.push_back(n);
  MLBRIDGE_BENCH_FOR_EACH_COMPILED(MLBRIDGE_BENCH_SIZE)
#undef MLBRIDGE_BENCH_SIZE
  return S;
}

std::unique_ptr<ModelRunner> makeCompiled(int N) {
#define MLBRIDGE_BENCH_CASE(n)                                                 \
  if (N == n) {                                                                \
    auto R = CompiledModelRunner::create<bench_fc::Fc##n>();                   \
    if (!R)                                                                    \
      die("compiled runner (n = " #n "): " + R.status().toString());          \
    return std::move(*R);                                                      \
  }
  MLBRIDGE_BENCH_FOR_EACH_COMPILED(MLBRIDGE_BENCH_CASE)
#undef MLBRIDGE_BENCH_CASE
  die("no compiled model for n = " + std::to_string(N));
}
#endif

#ifdef MLBRIDGE_BENCH_TF
std::vector<int> tfSizes() {
  std::vector<int> S;
#define MLBRIDGE_BENCH_SIZE(n) S.push_back(n);
  MLBRIDGE_BENCH_FOR_EACH_TF(MLBRIDGE_BENCH_SIZE)
#undef MLBRIDGE_BENCH_SIZE
  return S;
}

std::unique_ptr<ModelRunner> makeTf(int N) {
  TfOptions O;
  O.AdviceOutput = "y";
#define MLBRIDGE_BENCH_CASE(n)                                                 \
  if (N == n) {                                                                \
    auto R = TfModelRunner::create(bench_tf::Fc##n##Model(), O);               \
    if (!R)                                                                    \
      die(R.status().toString());                                              \
    return std::move(*R);                                                      \
  }
  MLBRIDGE_BENCH_FOR_EACH_TF(MLBRIDGE_BENCH_CASE)
#undef MLBRIDGE_BENCH_CASE
  die("no TF-AOT model for n = " + std::to_string(N));
}
#endif

// One request of the sweep: set x, evaluate the float.
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

// ---- byte helpers ------------------------------------------------------------
bool readAll(int Fd, void *B, size_t N) {
  char *P = static_cast<char *>(B);
  while (N) {
    ssize_t K = ::read(Fd, P, N);
    if (K < 0 && errno == EINTR)
      continue;
    if (K <= 0)
      return false;
    P += K;
    N -= size_t(K);
  }
  return true;
}
bool writeAll(int Fd, const void *B, size_t N) {
  const char *P = static_cast<const char *>(B);
  while (N) {
    ssize_t K = ::write(Fd, P, N);
    if (K < 0 && errno == EINTR)
      continue;
    if (K <= 0)
      return false;
    P += K;
    N -= size_t(K);
  }
  return true;
}

// ---- the sweep --------------------------------------------------------------------
std::vector<int> sizes() {
  std::vector<int> S;
  if (Cfg.Quick)
    return {500, 5000, 50000};
  for (int N = 500; N <= kMaxN; N += 500)
    S.push_back(N);
  return S;
}
int reps() { return Cfg.Reps ? Cfg.Reps : (Cfg.Quick ? 5 : 21); }

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

// ---- scaling: K compiler processes against one Python model ------------------
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
  std::unique_ptr<ModelRunner> R;
  if (Kind == "pipe")
    R = makePipe(Target,
                 Serdes == "json" ? SerDesKind::Json
                 : Serdes == "protobuf" ? SerDesKind::Protobuf
                                        : SerDesKind::Bitstream,
                 false);
  else if (Kind == "shm")
    R = makeShm(Target, SerDesKind::Bitstream, false);
#ifdef MLBRIDGE_BENCH_GRPC
  else if (Kind == "grpc")
    R = makeGrpc(Target, false);
#endif
  else
    die("unknown worker " + Kind);
  std::vector<float> X = input(N);
  call(*R, X); // connect + header
  auto Real = [] {
    return std::chrono::duration<double, std::micro>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  // Barrier: tell the parent we are connected, wait for its go.
  std::printf("ready\n");
  std::fflush(stdout);
  pollfd Go{0, POLLIN, 0};
  char C;
  if (::poll(&Go, 1, 120000) != 1 || ::read(0, &C, 1) != 1)
    return 1;
  double T0 = Real();
  for (int I = 0; I < Count; ++I)
    call(*R, X);
  double T1 = Real();
  std::printf("{\"start_us\":%.1f,\"end_us\":%.1f,\"count\":%d}\n", T0, T1,
              Count);
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
    std::vector<Spawned> Ws;
    for (int I = 0; I < K; ++I)
      Ws.push_back(spawn({Cfg.Self, "--worker", Kind, "--target",
                          Channels ? P->Bases[I] : P->Address,
                          "--serdes", Serdes, "--n", std::to_string(N),
                          "--count", std::to_string(Count)}));
    for (auto &W : Ws)
      if (readLine(W.Out, std::chrono::seconds(60)) != "ready")
        die("scaling worker (" + Kind + ") did not connect");
    for (auto &W : Ws)
      if (::write(W.In, "g", 1) != 1)
        die("scaling worker (" + Kind + ") gone");
    double First = 1e300, Last = 0;
    long Done = 0;
    for (auto &W : Ws) {
      std::string L = readLine(W.Out, std::chrono::seconds(120));
      ::close(W.In);
      ::close(W.Out);
      int St = reap(W.Pid, std::chrono::seconds(10));
      if (L.empty() || St != 0)
        die("scaling worker (" + Kind + ", " + std::to_string(K) +
            " procs) failed");
      double S = std::atof(L.c_str() + L.find(':') + 1);
      double E = std::atof(L.c_str() + L.find("end_us") + 8);
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

// ---- memory + small messages: RSS after N1 and N2 calls --------------------------
void smallAndMemory(const RunnerDef &D, Peer *P) {
  const long N1 = Cfg.Quick ? 100 : 1000;
  const long N2 = Cfg.Quick ? 1000 : 100000;
  auto R = D.Make(1);
  // Allocated and touched before the first RSS reading, so the timings
  // themselves do not show up as growth.
  std::vector<double> T(size_t(N2), 0.0);
  long Rss1 = 0, PeerRss1 = 0, RssMid = 0, AnonMid = 0;
  bool OnnxLike = !D.SmallIsInt;
  std::vector<float> One = {0.25f};
  for (long I = 0; I < N2; ++I) {
    float F = (I % 2) ? 0.25f : -0.25f;
    double T0 = nowUs();
    if (OnnxLike) {
      One[0] = F;
      Status S = R->setFeature("x", One);
      Expected<float> Y = S.isOk() ? R->evaluate<float>() : Expected<float>(S);
      if (!Y)
        die(D.Name + " small: " + Y.status().toString());
    } else {
      Status S = R->setFeature("f", F);
      Expected<int64_t> Y =
          S.isOk() ? R->evaluate<int64_t>() : Expected<int64_t>(S);
      if (!Y || *Y != (F > 0))
        die(D.Name + " small: " +
            (Y ? std::string("wrong answer") : Y.status().toString()));
    }
    T[size_t(I)] = nowUs() - T0;
    if (I + 1 == (N1 + N2) / 2) {
      RssMid = rssKb();
      AnonMid = statusKb(0, "RssAnon");
    }
    if (I + 1 == N1) {
      Rss1 = rssKb();
      PeerRss1 = P ? P->rss() : 0;
    }
  }
  long Rss2 = rssKb(), PeerRss2 = P ? P->rss() : 0;
  // Anonymous memory (heap, stacks) is what a leak grows; file-backed pages
  // of the libraries also count in VmRSS when first touched.
  long AnonGrowth = statusKb(0, "RssAnon") - AnonMid;
  std::vector<double> Warm(T.begin() + std::min<long>(N1, long(T.size()) / 10),
                           T.end());
  Row S;
  S.Section = "small";
  S.Runner = D.Name;
  S.Serdes = D.Serdes;
  S.N = 1;
  S.MedianUs = median(Warm);
  S.P90Us = pct(Warm, 0.9);
  S.Extra = {{"calls", double(N2)}};
  add(S);
  Row M;
  M.Section = "memory";
  M.Runner = D.Name;
  M.Serdes = D.Serdes;
  M.N = N2;
  M.MedianUs = S.MedianUs;
  M.Extra = {{"calls_1", double(N1)},
             {"rss_kb_1", double(Rss1)},
             {"calls_2", double(N2)},
             {"rss_kb_2", double(Rss2)},
             {"growth_kb", double(Rss2 - Rss1)},
             // A leak grows in both halves; a one-off allocation does not.
             {"growth_2nd_half_kb", double(Rss2 - RssMid)},
             {"anon_growth_2nd_half_kb", double(AnonGrowth)}};
  if (P)
    M.Extra.push_back({"peer_growth_kb", double(PeerRss2 - PeerRss1)});
  add(M);
  say("  %-14s %-10s small: median %7.1f us p90 %7.1f us | RSS %ld KB after "
      "%ld, %ld KB after %ld calls (growth %+ld KB, %+ld KB in the 2nd "
      "half, of it anonymous %+ld KB%s)\n",
      D.Name.c_str(), D.Serdes.c_str(), S.MedianUs, S.P90Us, Rss1, N1, Rss2,
      N2, Rss2 - Rss1, Rss2 - RssMid, AnonGrowth,
      P ? (", peer " + std::to_string(PeerRss2 - PeerRss1) + " KB").c_str()
        : "");
}

// ---- main ------------------------------------------------------------------------
void usage() {
  std::fprintf(stderr,
               "usage: mlbridge-bench [--quick] [--json] [--out-dir DIR] "
               "[--reps N] [--skip-scaling] [--skip-memory] [--python PY] "
               "[--fc-dir DIR] [--only RUNNER]\n");
}

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

void writeOutputs(const std::vector<int> &Sizes) {
  ::mkdir(Cfg.OutDir.c_str(), 0755);
  std::ofstream J(Cfg.OutDir + "/results.jsonl");
  for (auto &R : Rows)
    J << jsonRow(R) << "\n";
  std::ofstream C(Cfg.OutDir + "/results.csv");
  C << "section,runner,serdes,n,median_us,p90_us,floor,floor_us,ratio\n";
  for (auto &R : Rows)
    C << R.Section << "," << R.Runner << "," << R.Serdes << "," << R.N << ","
      << num(R.MedianUs) << "," << num(R.P90Us) << "," << R.Floor << ","
      << num(R.FloorUs) << "," << num(R.MedianUs / R.FloorUs) << "\n";
  C.close();
  (void)Sizes;
  // The plot: matplotlib, through the project's Python (optional).
  auto P = spawn({Cfg.Python, Cfg.BenchDir + "/plot_rtt.py",
                  Cfg.OutDir + "/results.csv", Cfg.OutDir + "/rtt.png"});
  ::close(P.In);
  std::string L = readLine(P.Out, std::chrono::seconds(120));
  ::close(P.Out);
  int St = reap(P.Pid, std::chrono::seconds(30));
  if (FILE *F = std::fopen("/proc/loadavg", "r")) {
    char B[128] = {0};
    if (std::fgets(B, sizeof B, F))
      say("load average at the end: %s", B);
    std::fclose(F);
  }
  say("outputs: %s/results.jsonl, %s/results.csv%s\n", Cfg.OutDir.c_str(),
      Cfg.OutDir.c_str(),
      St == 0 ? (", " + Cfg.OutDir + "/rtt.png").c_str()
              : " (no plot: matplotlib missing?)");
}

} // namespace bench

using namespace bench;

int main(int Argc, char **Argv) {
  Cfg.Self = "/proc/self/exe";
  {
    char B[4096];
    ssize_t K = ::readlink("/proc/self/exe", B, sizeof B - 1);
    if (K > 0)
      Cfg.Self.assign(B, size_t(K));
  }
  ::signal(SIGPIPE, SIG_IGN);
#ifdef MLBRIDGE_BENCH_GRPC
  enableProtobufSerDes();
#endif
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
  ::signal(SIGINT, onSignal);
  ::signal(SIGTERM, onSignal);
  std::atexit(removeTmpDirs);
  std::atexit(killChildren); // runs first: children gone, then their FIFOs

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
  Rows.push_back({"machine", "", "", 0, NAN, NAN, "", NAN,
                  {{"loadavg_1", L1}, {"loadavg_5", L5}, {"loadavg_15", L15}}});

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

  // The runners.
  std::vector<RunnerDef> Defs;
  std::vector<std::unique_ptr<Peer>> Peers; // kept alive per definition
  struct PipeKind {
    const char *Name;
    SerDesKind Kind;
  };
  std::vector<PipeKind> PipeKinds = {{"bitstream", SerDesKind::Bitstream},
                                     {"json", SerDesKind::Json}};
#ifdef MLBRIDGE_BENCH_GRPC
  PipeKinds.push_back({"protobuf", SerDesKind::Protobuf});
#endif
  std::vector<Peer *> DefPeer;
  for (auto &PK : PipeKinds) {
    Peers.push_back(Peer::start("pipe", PK.Name, 1));
    std::string Base = Peers.back()->Bases[0];
    SerDesKind K = PK.Kind;
    Defs.push_back({"pipe", PK.Name, "fifo-floor",
                    [Base, K](int N) { return makePipe(Base, K, N == 1); },
                    true});
    DefPeer.push_back(Peers.back().get());
  }
  Peers.push_back(Peer::start("shm", "bitstream", 1));
  {
    std::string Path = Peers.back()->Bases[0];
    Defs.push_back({"shm", "bitstream", "shm-floor",
                    [Path](int N) {
                      return makeShm(Path, SerDesKind::Bitstream, N == 1);
                    },
                    true});
    DefPeer.push_back(Peers.back().get());
  }
#ifdef MLBRIDGE_BENCH_GRPC
  Peers.push_back(Peer::start("grpc", "protobuf", 1));
  {
    std::string Addr = Peers.back()->Address;
    Defs.push_back({"grpc", "protobuf", "grpc-floor",
                    [Addr](int N) { return makeGrpc(Addr, N == 1); }, true});
    DefPeer.push_back(Peers.back().get());
  }
#endif
  // In-process runners twice: the paper's setFeature(vector) + evaluate,
  // and evaluate alone on features written in place.
  for (bool InPlace : {false, true}) {
    const char *Serdes = InPlace ? "in-place" : "in-process";
#ifdef MLBRIDGE_BENCH_ONNX
    Defs.push_back({"onnx", Serdes, "loop-floor", makeOnnx, false, true, {},
                    InPlace});
    DefPeer.push_back(nullptr);
#endif
#ifdef MLBRIDGE_BENCH_COMPILED
    Defs.push_back({"compiled", Serdes, "loop-floor", makeCompiled, false,
                    true, compiledSizes(), InPlace});
    DefPeer.push_back(nullptr);
#endif
#ifdef MLBRIDGE_BENCH_TF
    Defs.push_back({"tf-aot", Serdes, "loop-floor", makeTf, false, true,
                    tfSizes(), InPlace});
    DefPeer.push_back(nullptr);
#endif
  }

  auto selected = [](const std::string &Name) {
    std::stringstream Only(Cfg.Only);
    std::string Part;
    while (std::getline(Only, Part, ','))
      if (Name.find(Part) != std::string::npos)
        return true;
    return Cfg.Only.empty();
  };
  for (size_t D = Defs.size(); D-- > 0;)
    if (!selected(Defs[D].Name + "+" + Defs[D].Serdes)) {
      Defs.erase(Defs.begin() + long(D));
      DefPeer.erase(DefPeer.begin() + long(D));
    }

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

  if (Cfg.Memory) {
    say("\nSmall messages (one float in, one int out; ONNX: one float out) "
        "and memory\n");
    for (size_t D = 0; D < Defs.size(); ++D)
      if (!Defs[D].InPlace)
        smallAndMemory(Defs[D], DefPeer[D]);
  }
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

  writeOutputs(Sizes);
  killChildren();
  if (!BrokenFloors.empty()) {
    for (auto &B : BrokenFloors)
      std::fprintf(stderr, "mlbridge-bench: BROKEN FLOOR: %s\n", B.c_str());
    // --quick takes too few samples to tell a broken floor from noise.
    if (!Cfg.Quick)
      return 3;
  }
  return 0;
}
