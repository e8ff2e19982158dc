//===- bench/mlbridge_bench.cpp - Round-trip times against physical floors ===//
//
// mlbridge-bench: the paper's round-trip workload (100 float vectors of
// 500, 1000, ..., 50,000 elements, each sent to one fully connected layer
// returning a scalar) through every runner x SerDes, next to floors
// measured in the same run:
//   * fifo floor  - a raw C++<->C++ FIFO ping-pong of the same tensor bytes
//                   (forked child), floor of the pipe runners;
//   * grpc floor  - a raw C++<->C++ gRPC call (generic stub / callback
//                   generic service, in-process server on loopback TCP)
//                   carrying the same bytes, floor of the gRPC runner;
//   * loop floor  - a hand-written C++ loop doing the same arithmetic,
//                   floor of the in-process runners.
// Also: a small-message test (one float in, one int out), scaling (1, 2, 4,
// 8 concurrent compiler processes against one Python model) and memory (RSS
// after N1 and N2 calls). The Python model is bench/bench_peer.py, started
// and killed by this program. See docs/performance.md.
//
//   mlbridge-bench [--quick] [--json] [--out-dir DIR] [--reps N]
//                  [--skip-scaling] [--skip-memory] [--python PY]
//
// Never hangs: every wait on a child has a deadline; children are killed on
// exit (normal, error or SIGINT/SIGTERM).
//
//===----------------------------------------------------------------------===//
#include "mlbridge/model_runner.h"
#include "mlbridge/pipe_model_runner.h"
#ifdef MLBRIDGE_BENCH_GRPC
#include "mlbridge/grpc_model_runner.h"
#include "mlbridge/protobuf_serdes.h"
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#endif
#ifdef MLBRIDGE_BENCH_ONNX
#include "mlbridge/onnx_model_runner.h"
#endif
// Hook for the compiled-model runner (issue 9): when it lands, define
// MLBRIDGE_BENCH_COMPILED in bench/CMakeLists.txt, link the compiled FC
// model, and fill in makeCompiledRunner() below.

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
#include <functional>
#include <future>
#include <memory>
#include <mutex>
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

namespace {

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
  std::string OnnxModel = MLBRIDGE_BENCH_ONNX_MODEL;
  std::string Self;
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
const std::vector<float> &W() {
  static const std::vector<float> V = Weights();
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

long rssKb() {
  std::ifstream F("/proc/self/status");
  std::string L;
  while (std::getline(F, L))
    if (L.rfind("VmRSS:", 0) == 0)
      return std::atol(L.c_str() + 6);
  return -1;
}
long rssKbOf(pid_t P) {
  std::ifstream F("/proc/" + std::to_string(P) + "/status");
  std::string L;
  while (std::getline(F, L))
    if (L.rfind("VmRSS:", 0) == 0)
      return std::atol(L.c_str() + 6);
  return -1;
}

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
// Waits up to Timeout for P; kills it after that. Returns its exit status.
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

struct Spawned {
  pid_t Pid = -1;
  int In = -1;  // child's stdin (we write; closing it tells the peer to exit)
  int Out = -1; // child's stdout
};
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
// One line from Fd within Timeout ("" on timeout or EOF).
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
      for (int I = 0; I < Channels; ++I)
        P->Bases.push_back(P->TmpDir + "/ch" + std::to_string(I));
    return P;
  }
  long rss() const { return rssKbOf(S.Pid); }
  ~Peer() {
    ::close(S.In); // the peer exits on stdin EOF
    if (reap(S.Pid, std::chrono::seconds(5)) != 0) {
      // killed or failed: nothing else to do
    }
    ::close(S.Out);
    for (auto &B : Bases) {
      ::unlink((B + ".in").c_str());
      ::unlink((B + ".out").c_str());
    }
    ::rmdir(TmpDir.c_str());
  }
};

// ---- runners ------------------------------------------------------------------
struct RunnerDef {
  std::string Name, Serdes, Floor;
  // Makes a runner for the sweep (Small = false) or the small-message test.
  std::function<std::unique_ptr<ModelRunner>(bool Small)> Make;
  bool SmallIsInt = true; // small test answers an int (Python peer)
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
std::unique_ptr<ModelRunner> makeOnnx() {
  OnnxOptions O;
  O.Diagnostics = sink();
  auto R = OnnxModelRunner::create(Cfg.OnnxModel, O);
  if (!R)
    die("ONNX runner (" + Cfg.OnnxModel + "): " + R.status().toString());
  return std::move(*R);
}
#endif

// One request of the sweep: set x, evaluate the float.
float call(ModelRunner &R, const std::vector<float> &X) {
  Status S = R.setFeature("x", X);
  if (!S.isOk())
    die("setFeature: " + S.toString());
  Expected<float> Y = R.evaluate<float>();
  if (!Y)
    die("evaluate: " + Y.status().toString());
  return *Y;
}

// ---- floors ---------------------------------------------------------------------
// Raw FIFO ping-pong with a forked C++ child: 8-byte length + payload out,
// 4 bytes back.
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

struct FifoFloor {
  pid_t Child = -1;
  int Out = -1, In = -1;
  std::string Dir;
  FifoFloor() {
    Dir = makeTmpDir("mlbridge-bench-fifo");
    std::string A = Dir + "/a2b", B = Dir + "/b2a";
    if (::mkfifo(A.c_str(), 0600) || ::mkfifo(B.c_str(), 0600))
      die("mkfifo");
    std::fflush(nullptr);
    Child = ::fork();
    if (Child == 0) {
      ::alarm(600); // never outlive a broken parent for long
      int R = ::open(A.c_str(), O_RDONLY), Wr = ::open(B.c_str(), O_WRONLY);
      std::vector<char> Buf;
      uint64_t Len;
      while (readAll(R, &Len, 8)) {
        Buf.resize(Len);
        if (!readAll(R, Buf.data(), Len))
          break;
        float Y = 0;
        if (!writeAll(Wr, &Y, 4))
          break;
      }
      ::_exit(0);
    }
    track(Child);
    Out = ::open(A.c_str(), O_WRONLY);
    In = ::open(B.c_str(), O_RDONLY);
    if (Out < 0 || In < 0)
      die("open fifo");
  }
  double once(const std::vector<char> &Payload) {
    uint64_t Len = Payload.size();
    double T0 = nowUs();
    float Y;
    if (!writeAll(Out, &Len, 8) || !writeAll(Out, Payload.data(), Len) ||
        !readAll(In, &Y, 4))
      die("fifo floor: peer gone");
    return nowUs() - T0;
  }
  ~FifoFloor() {
    ::close(Out);
    ::close(In);
    reap(Child, std::chrono::seconds(5));
    ::unlink((Dir + "/a2b").c_str());
    ::unlink((Dir + "/b2a").c_str());
    ::rmdir(Dir.c_str());
  }
};

#ifdef MLBRIDGE_BENCH_GRPC
// Raw gRPC: a generic (bytes in, bytes out) unary call to a C++ callback
// service that answers 4 bytes. No protobuf, no mlbridge.
class RawService final : public grpc::CallbackGenericService {
  grpc::ServerGenericBidiReactor *
  CreateReactor(grpc::GenericCallbackServerContext *) override {
    class Reactor final : public grpc::ServerGenericBidiReactor {
    public:
      Reactor() { StartRead(&Req); }
      void OnReadDone(bool Ok) override {
        if (!Ok) {
          Finish(grpc::Status::OK);
          return;
        }
        float Y = 0;
        grpc::Slice S(&Y, 4);
        Resp = grpc::ByteBuffer(&S, 1);
        StartWriteAndFinish(&Resp, grpc::WriteOptions(), grpc::Status::OK);
      }
      void OnDone() override { delete this; }

    private:
      grpc::ByteBuffer Req, Resp;
    };
    return new Reactor;
  }
};

struct GrpcFloor {
  RawService Svc;
  std::unique_ptr<grpc::Server> Server;
  std::unique_ptr<grpc::GenericStub> Stub;
  GrpcFloor() {
    int Port = 0;
    grpc::ServerBuilder B;
    B.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &Port);
    B.SetMaxReceiveMessageSize(64 << 20);
    B.RegisterCallbackGenericService(&Svc);
    Server = B.BuildAndStart();
    if (!Server || !Port)
      die("raw gRPC server did not start");
    grpc::ChannelArguments A;
    A.SetMaxSendMessageSize(64 << 20);
    A.SetMaxReceiveMessageSize(64 << 20);
    Stub = std::make_unique<grpc::GenericStub>(grpc::CreateCustomChannel(
        "127.0.0.1:" + std::to_string(Port), grpc::InsecureChannelCredentials(),
        A));
  }
  double once(const std::vector<char> &Payload) {
    double T0 = nowUs();
    grpc::Slice S(Payload.data(), Payload.size());
    grpc::ByteBuffer Req(&S, 1), Resp;
    grpc::ClientContext Ctx;
    Ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    std::promise<grpc::Status> Done;
    Stub->UnaryCall(&Ctx, "/bench.Raw/Call", grpc::StubOptions(), &Req, &Resp,
                    [&](grpc::Status St) { Done.set_value(St); });
    grpc::Status St = Done.get_future().get();
    if (!St.ok())
      die("raw gRPC call: " + St.error_message());
    return nowUs() - T0;
  }
  ~GrpcFloor() {
    Server->Shutdown(std::chrono::system_clock::now() +
                     std::chrono::seconds(2));
  }
};
#endif

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

Series sweepRunner(ModelRunner &R, const std::string &Name) {
  Series S;
  int Bad = 0;
  for (int N : sizes()) {
    std::vector<float> X = input(N);
    float Want = handLoop(X.data(), N);
    call(R, X); // warm-up (and the header of a new shape)
    std::vector<double> T;
    for (int I = 0; I < reps(); ++I) {
      double T0 = nowUs();
      float Y = call(R, X);
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

template <typename F> Series sweepFloor(F Once, bool Bytes) {
  Series S;
  for (int N : sizes()) {
    std::vector<double> T;
    std::vector<char> Payload(size_t(N) * 4, 1);
    std::vector<float> X = input(N);
    volatile float Sink = 0;
    Once(Payload, X, Sink); // warm-up
    for (int I = 0; I < reps(); ++I)
      T.push_back(Once(Payload, X, Sink));
    (void)Bytes;
    S.Median.push_back(median(T));
    S.P90.push_back(pct(T, 0.9));
  }
  return S;
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
  // One model for every K: a pipe peer with 8 channels (one serving thread
  // each; the first K are used), or one gRPC server.
  auto P = Peer::start(Kind, Serdes, Kind == "pipe" ? 8 : 1);
  for (int K : {1, 2, 4, 8}) {
    std::vector<Spawned> Ws;
    for (int I = 0; I < K; ++I)
      Ws.push_back(spawn({Cfg.Self, "--worker", Kind, "--target",
                          Kind == "pipe" ? P->Bases[I] : P->Address,
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
    R.Runner = Kind == "pipe" ? "pipe" : "grpc";
    R.Serdes = Kind == "pipe" ? Serdes : "protobuf";
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
  auto R = D.Make(true);
  // Allocated and touched before the first RSS reading, so the timings
  // themselves do not show up as growth.
  std::vector<double> T(size_t(N2), 0.0);
  long Rss1 = 0, PeerRss1 = 0, RssMid = 0;
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
    if (I + 1 == (N1 + N2) / 2)
      RssMid = rssKb();
    if (I + 1 == N1) {
      Rss1 = rssKb();
      PeerRss1 = P ? P->rss() : 0;
    }
  }
  long Rss2 = rssKb(), PeerRss2 = P ? P->rss() : 0;
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
             {"growth_2nd_half_kb", double(Rss2 - RssMid)}};
  if (P)
    M.Extra.push_back({"peer_growth_kb", double(PeerRss2 - PeerRss1)});
  add(M);
  say("  %-14s %-10s small: median %7.1f us p90 %7.1f us | RSS %ld KB after "
      "%ld, %ld KB after %ld calls (growth %+ld KB, %+ld KB in the 2nd "
      "half%s)\n",
      D.Name.c_str(), D.Serdes.c_str(), S.MedianUs, S.P90Us, Rss1, N1, Rss2,
      N2, Rss2 - Rss1, Rss2 - RssMid,
      P ? (", peer " + std::to_string(PeerRss2 - PeerRss1) + " KB").c_str()
        : "");
}

// ---- main ------------------------------------------------------------------------
void usage() {
  std::fprintf(stderr,
               "usage: mlbridge-bench [--quick] [--json] [--out-dir DIR] "
               "[--reps N] [--skip-scaling] [--skip-memory] [--python PY] "
               "[--onnx-model FILE]\n");
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
#ifdef MLBRIDGE_BENCH_GRPC
  enableProtobufSerDes();
#endif
  if (Argc > 1 && std::string(Argv[1]) == "--worker")
    return workerMain(Argc, Argv);
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
    else if (A == "--onnx-model")
      Cfg.OnnxModel = Next();
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

  // Floors first.
  Series Fifo, Loop, GrpcRaw;
  {
    FifoFloor F;
    Fifo = sweepFloor([&](const std::vector<char> &P, const std::vector<float> &,
                          volatile float &) { return F.once(P); },
                      true);
  }
  Loop = sweepFloor(
      [](const std::vector<char> &, const std::vector<float> &X,
         volatile float &Sink) {
        double T0 = nowUs();
        Sink = handLoop(X.data(), int(X.size()));
        return nowUs() - T0;
      },
      false);
#ifdef MLBRIDGE_BENCH_GRPC
  {
    GrpcFloor G;
    GrpcRaw = sweepFloor([&](const std::vector<char> &P,
                             const std::vector<float> &,
                             volatile float &) { return G.once(P); },
                         true);
  }
#endif
  auto floorRows = [&](const char *Name, const Series &S) {
    for (size_t I = 0; I < Sizes.size() && I < S.Median.size(); ++I) {
      Row R;
      R.Section = "rtt";
      R.Runner = Name;
      R.Serdes = "raw";
      R.N = Sizes[I];
      R.MedianUs = S.Median[I];
      R.P90Us = S.P90[I];
      R.Floor = Name;
      R.FloorUs = S.Median[I];
      add(R);
    }
  };
  floorRows("fifo-floor", Fifo);
  floorRows("loop-floor", Loop);
  floorRows("grpc-floor", GrpcRaw);

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
                    [Base, K](bool Small) { return makePipe(Base, K, Small); },
                    true});
    DefPeer.push_back(Peers.back().get());
  }
#ifdef MLBRIDGE_BENCH_GRPC
  Peers.push_back(Peer::start("grpc", "protobuf", 1));
  {
    std::string Addr = Peers.back()->Address;
    Defs.push_back({"grpc", "protobuf", "grpc-floor",
                    [Addr](bool Small) { return makeGrpc(Addr, Small); }, true});
    DefPeer.push_back(Peers.back().get());
  }
#endif
#ifdef MLBRIDGE_BENCH_ONNX
  Defs.push_back({"onnx", "in-process", "loop-floor",
                  [](bool) { return makeOnnx(); }, false});
  DefPeer.push_back(nullptr);
#endif
#ifdef MLBRIDGE_BENCH_COMPILED
  // Hook: Defs.push_back({"compiled", "in-process", "loop-floor",
  //                       [](bool) { return makeCompiledRunner(); }, false});
#endif

  struct Total {
    std::string Runner, Serdes, Floor;
    double Ms, FloorMs;
  };
  std::vector<Total> Totals;
  say("\nRound-trip time per request (median of %d, microseconds)\n", reps());
  say("%-22s", "floats");
  for (auto &D : Defs)
    say(" %18s", (D.Name + "+" + D.Serdes).c_str());
  say(" %10s %10s %10s\n", "fifo", "grpc-raw", "loop");
  std::vector<Series> All;
  for (auto &D : Defs) {
    auto R = D.Make(false);
    All.push_back(sweepRunner(*R, D.Name + "+" + D.Serdes));
  }
  for (size_t I = 0; I < Sizes.size(); ++I) {
    bool Show = Cfg.Quick || Sizes[I] % 5000 == 0 || Sizes[I] == 500;
    if (Show)
      say("%-22d", Sizes[I]);
    for (size_t D = 0; D < Defs.size(); ++D) {
      const Series &F = Defs[D].Floor == "fifo-floor"   ? Fifo
                        : Defs[D].Floor == "grpc-floor" ? GrpcRaw
                                                        : Loop;
      Row R;
      R.Section = "rtt";
      R.Runner = Defs[D].Name;
      R.Serdes = Defs[D].Serdes;
      R.N = Sizes[I];
      R.MedianUs = All[D].Median[I];
      R.P90Us = All[D].P90[I];
      R.Floor = Defs[D].Floor;
      R.FloorUs = I < F.Median.size() ? F.Median[I] : NAN;
      add(R);
      if (Show) {
        char B[64];
        std::snprintf(B, sizeof B, "%.1f (x%.1f)", R.MedianUs,
                      R.MedianUs / R.FloorUs);
        say(" %18s", B);
      }
    }
    if (Show)
      say(" %10.1f %10.1f %10.2f\n", Fifo.Median[I],
          I < GrpcRaw.Median.size() ? GrpcRaw.Median[I] : NAN, Loop.Median[I]);
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
    const Series &F = Defs[D].Floor == "fifo-floor"   ? Fifo
                      : Defs[D].Floor == "grpc-floor" ? GrpcRaw
                                                      : Loop;
    totalRow(Defs[D].Name, Defs[D].Serdes, Defs[D].Floor,
             total(All[D].Median) / 1000, total(F.Median) / 1000);
  }
  totalRow("fifo-floor", "raw", "fifo-floor", total(Fifo.Median) / 1000,
           total(Fifo.Median) / 1000);
  if (!GrpcRaw.Median.empty())
    totalRow("grpc-floor", "raw", "grpc-floor", total(GrpcRaw.Median) / 1000,
             total(GrpcRaw.Median) / 1000);
  totalRow("loop-floor", "raw", "loop-floor", total(Loop.Median) / 1000,
           total(Loop.Median) / 1000);

  if (Cfg.Memory) {
    say("\nSmall messages (one float in, one int out; ONNX: one float out) "
        "and memory\n");
    for (size_t D = 0; D < Defs.size(); ++D)
      smallAndMemory(Defs[D], DefPeer[D]);
  }
  Peers.clear();

  if (Cfg.Scaling) {
    say("\nScaling: K compiler processes x 1000-float requests against one "
        "Python model\n");
    scaling("pipe", "bitstream");
#ifdef MLBRIDGE_BENCH_GRPC
    scaling("grpc", "protobuf");
#endif
  }

  writeOutputs(Sizes);
  killChildren();
  return 0;
}
