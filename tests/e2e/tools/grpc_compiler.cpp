// mlbridge-grpc-e2e-compiler: the compiler side of the gRPC end-to-end
// tests (tests/e2e/test_grpc_*.py) and of bench/grpc_rtt.py. It plays a
// pass talking to a model through GrpcModelRunner (or, for "pipe-types",
// PipeModelRunner with the Protobuf SerDes) and prints one JSON object per
// result on stdout.
//
//   --scenario types       every dtype out (extreme values), the model echoes
//   --scenario requests    --count N requests of {"i": offset+k}; expects 2x
//   --scenario soak        --count N requests through injected faults (one
//                          summary line; tests/soak/)
//   --scenario rtt         --size N floats, --count K timed requests
//   --scenario user        a user-defined service (--proto ... --method ...)
//   --scenario pipe-types  "types" over pipes with the Protobuf SerDes (--base)
//   --scenario serve-model a C++ ModelService (the floor of bench/grpc_rtt.py):
//                          y = dot(x, linspace(-1, 1)); exits after --sessions
//                          EndSession calls or --max-seconds
//
// Training mode (--mode training) listens on --address (default
// 127.0.0.1:0) and prints {"event":"listening","port":P} first.
#include "e2e_report.h"
#include "mlbridge/grpc_model_runner.h"
#include "mlbridge/pipe_model_runner.h"
#include "mlbridge/protobuf_serdes.h"

#include "mlbridge.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

using namespace mlbridge;
using e2e::Clock;

namespace {

struct Args {
  std::string Address = "127.0.0.1:0", Scenario = "requests", Base;
  GrpcMode Mode = GrpcMode::Inference;
  int CallTimeoutMs = 10000, ConnectTimeoutMs = 5000;
  int Count = 3, Size = 1, Sessions = 1, MaxSeconds = 60;
  int64_t Offset = 0;
  bool Tls = false;
  std::string TlsRoot, TlsCert, TlsKey, ServerName;
  std::string Proto, Method, RequestType, ReplyType, AdviceField;
  int LingerMs = 3000;
};

using e2e::jsonEscape;
using e2e::msSince;
using e2e::printError;

GrpcOptions options(const Args &A) {
  GrpcOptions O;
  O.Mode = A.Mode;
  O.CallTimeout = std::chrono::milliseconds(A.CallTimeoutMs);
  O.ConnectTimeout = std::chrono::milliseconds(A.ConnectTimeoutMs);
  O.LingerTimeout = std::chrono::milliseconds(A.LingerMs);
  O.UseTls = A.Tls;
  O.Tls.RootCertFile = A.TlsRoot;
  O.Tls.CertFile = A.TlsCert;
  O.Tls.KeyFile = A.TlsKey;
  O.Tls.ServerName = A.ServerName;
  if (!A.Proto.empty()) {
    UserMessageSchema U;
    U.ProtoFile = A.Proto;
    U.Method = A.Method;
    U.RequestType = A.RequestType;
    U.ReplyType = A.ReplyType;
    U.AdviceField = A.AdviceField;
    O.UserMessages = U;
  }
  return O;
}

/// Creates the runner; in training mode announces the port.
std::unique_ptr<GrpcModelRunner> makeRunner(const Args &A,
                                            std::vector<TensorSpec> Specs = {},
                                            std::optional<TensorSpec> Advice =
                                                std::nullopt) {
  auto Start = Clock::now();
  auto R = GrpcModelRunner::create(A.Address, std::move(Specs),
                                   std::move(Advice), options(A));
  if (!R) {
    printError("create", R.status(), msSince(Start));
    return nullptr;
  }
  if (A.Mode == GrpcMode::Training) {
    std::printf("{\"event\":\"listening\",\"port\":%d,\"address\":\"%s\"}\n",
                (*R)->port(), jsonEscape((*R)->address()).c_str());
    std::fflush(stdout);
  }
  return std::move(*R);
}

template <typename T> std::vector<T> extremes() {
  using L = std::numeric_limits<T>;
  if constexpr (std::is_same_v<T, bool>)
    return {true, false, true, true};
  else if constexpr (std::is_floating_point_v<T>)
    return {-L::infinity(), L::infinity(), L::denorm_min(), L::lowest()};
  else
    return {L::min(), L::max(), T(0), T(1)};
}

template <typename T> bool sameBits(T A, T B) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(A) || std::isnan(B))
      return std::isnan(A) && std::isnan(B);
  return std::memcmp(&A, &B, sizeof(T)) == 0;
}

// Sets s_<dtype> and v_<dtype>; the model echoes them for advice <dtype>.
template <typename T> bool echoType(ModelRunner &R) {
  const std::string Name(dtypeName(DTypeOf<T>::value));
  std::vector<T> Vec = extremes<T>();
  T Scalar;
  if constexpr (std::is_floating_point_v<T>)
    Scalar = std::numeric_limits<T>::quiet_NaN();
  else
    Scalar = Vec[1];
  R.setFeature("s_" + Name, Scalar);
  R.setFeature("v_" + Name, Vec);
  R.setFeature("label", "dtype " + Name + " \xE2\x9C\x93");
  auto Start = Clock::now();
  Expected<std::vector<T>> Echo = R.evaluate<std::vector<T>>();
  if (!Echo) {
    printError(Name.c_str(), Echo.status(), msSince(Start));
    return false;
  }
  bool Ok = Echo->size() == 5 && sameBits<T>((*Echo)[0], Scalar);
  for (size_t I = 0; Ok && I < 4; ++I)
    Ok = sameBits<T>((*Echo)[I + 1], Vec[I]);
  std::printf("{\"event\":\"echo\",\"dtype\":\"%s\",\"ok\":%s,\"count\":%zu}\n",
              Name.c_str(), Ok ? "true" : "false", Echo->size());
  std::fflush(stdout);
  return Ok;
}

bool echoAll(ModelRunner &R) {
  bool Ok = echoType<float>(R);
  Ok &= echoType<double>(R);
  Ok &= echoType<int8_t>(R);
  Ok &= echoType<int16_t>(R);
  Ok &= echoType<int32_t>(R);
  Ok &= echoType<int64_t>(R);
  Ok &= echoType<uint8_t>(R);
  Ok &= echoType<uint16_t>(R);
  Ok &= echoType<uint32_t>(R);
  Ok &= echoType<uint64_t>(R);
  Ok &= echoType<bool>(R);
  const std::string Text = "h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9D\x84\x9E \"q\"\n";
  R.setFeature("text", Text);
  Expected<std::string> Echo = R.evaluate<std::string>();
  if (!Echo) {
    printError("string", Echo.status(), 0);
    return false;
  }
  std::printf("{\"event\":\"echo\",\"dtype\":\"string\",\"ok\":%s}\n",
              *Echo == Text ? "true" : "false");
  return Ok && *Echo == Text;
}

bool scenarioTypes(const Args &A) {
  auto R = makeRunner(A);
  return R && echoAll(*R);
}

bool scenarioPipeTypes(const Args &A) {
  enableProtobufSerDes();
  PipeOptions O;
  O.Format = SerDesKind::Protobuf;
  O.OpenTimeout = O.ReplyTimeout = std::chrono::milliseconds(A.CallTimeoutMs);
  auto R = PipeModelRunner::create(A.Base, {}, std::nullopt, O);
  if (!R) {
    printError("create", R.status(), 0);
    return false;
  }
  return echoAll(**R);
}

bool scenarioSoak(const Args &A) {
  return e2e::soakRequests(A.Count, [&] {
    return makeRunner(A, {TensorSpec::create<int64_t>("i")},
                      TensorSpec::create<int64_t>("twice"));
  });
}

bool scenarioRequests(const Args &A) {
  auto R = makeRunner(A, {TensorSpec::create<int64_t>("i")},
                      TensorSpec::create<int64_t>("twice"));
  if (!R)
    return false;
  bool Ok = true;
  for (int K = 0; K < A.Count; ++K) {
    auto Start = Clock::now();
    const int64_t Value = A.Offset + K;
    Status S = R->switchContext("request" + std::to_string(K));
    *R->getTensor<int64_t>(0) = Value;
    Expected<int64_t> V = S.isOk() ? R->evaluate<int64_t>() : Expected<int64_t>(S);
    if (!V) {
      printError("evaluate", V.status(), msSince(Start));
      // A broken runner must refuse at once, not wait again.
      Start = Clock::now();
      Expected<int64_t> Again = R->evaluate<int64_t>();
      printError("evaluate-again", Again.status(), msSince(Start));
      return false;
    }
    std::printf("{\"event\":\"advice\",\"i\":%" PRId64 ",\"value\":%" PRId64
                "}\n",
                Value, *V);
    std::fflush(stdout);
    Ok &= *V == 2 * Value;
  }
  if (A.Mode == GrpcMode::Training) {
    Status S = R->waitForEpisodeEnd(std::chrono::milliseconds(0));
    std::printf("{\"event\":\"episode\",\"ended\":%s}\n",
                S.isOk() ? "true" : "false");
  }
  return Ok;
}

bool scenarioRtt(const Args &A) {
  auto R = makeRunner(A, {TensorSpec::create<float>("x", {A.Size})},
                      TensorSpec::create<float>("y"));
  if (!R)
    return false;
  float *X = R->getTensor<float>(0);
  for (int I = 0; I < A.Size; ++I)
    X[I] = 1.0f / float(I + 1);
  std::vector<double> Us;
  const int Warmup = 20;
  for (int K = 0; K < A.Count + Warmup; ++K) {
    auto Start = Clock::now();
    Expected<float> V = R->evaluate<float>();
    double Elapsed = msSince(Start) * 1000.0;
    if (!V) {
      printError("rtt", V.status(), Elapsed / 1000.0);
      return false;
    }
    if (K >= Warmup)
      Us.push_back(Elapsed);
  }
  std::sort(Us.begin(), Us.end());
  std::printf("{\"event\":\"rtt\",\"size\":%d,\"count\":%d,"
              "\"median_us\":%.1f,\"p90_us\":%.1f}\n",
              A.Size, A.Count, Us[Us.size() / 2], Us[Us.size() * 9 / 10]);
  return true;
}

// The user-defined service of tests/e2e/tools/grpc_user.proto.
bool scenarioUser(const Args &A) {
  auto R = makeRunner(A, {}, TensorSpec::create<int32_t>("decision.unroll"));
  if (!R)
    return false;
  R->setFeature("loop.trip_count", int64_t(1000));
  R->setFeature("loop.body_size", 7);
  R->setFeature("weights", std::vector<float>{0.5f, 1.5f, -2.0f});
  R->setFeature("function", "main");
  R->setFeature("blocks[1].size", 12u);
  R->setFeature("hot", true);
  Expected<int32_t> V = R->evaluate<int32_t>();
  if (!V) {
    printError("user", V.status(), 0);
    return false;
  }
  std::printf("{\"event\":\"user\",\"unroll\":%d}\n", *V);
  // An unknown field name is a clear error, and nothing is sent.
  auto Bad = makeRunner(A, {}, TensorSpec::create<int32_t>("decision.unroll"));
  if (!Bad)
    return false;
  Bad->setFeature("loop.no_such_field", 1);
  Expected<int32_t> E = Bad->evaluate<int32_t>();
  if (E) {
    std::printf("{\"event\":\"user-unknown\",\"ok\":false}\n");
    return false;
  }
  printError("user-unknown", E.status(), 0);
  return true;
}

// ---- the C++ model server (floor of the RTT benchmark) ----------------------

class DotModelService final : public mlbridge::v1::ModelService::Service {
public:
  grpc::Status Evaluate(grpc::ServerContext *, const mlbridge::v1::Observation *Req,
                        mlbridge::v1::Advice *Reply) override {
    if (Req->features_size() != 1)
      return grpc::Status(grpc::INVALID_ARGUMENT, "expected one feature");
    const std::string &D = Req->features(0).data();
    const size_t N = D.size() / sizeof(float);
    if (Weights.size() != N) {
      Weights.resize(N);
      for (size_t I = 0; I < N; ++I)
        Weights[I] = N > 1 ? -1.0f + 2.0f * float(I) / float(N - 1) : -1.0f;
    }
    float Sum = 0;
    for (size_t I = 0; I < N; ++I) {
      float X;
      std::memcpy(&X, D.data() + I * 4, 4);
      Sum += X * Weights[I];
    }
    auto *T = Reply->mutable_tensor();
    T->set_name(Req->advice().name());
    T->set_dtype(mlbridge::v1::DTYPE_FLOAT);
    T->add_shape(1);
    T->set_data(&Sum, sizeof Sum);
    return grpc::Status::OK;
  }
  grpc::Status EndSession(grpc::ServerContext *, const mlbridge::v1::SessionEnd *,
                          mlbridge::v1::Empty *) override {
    std::lock_guard<std::mutex> L(M);
    ++Ended;
    CV.notify_all();
    return grpc::Status::OK;
  }
  std::mutex M;
  std::condition_variable CV;
  int Ended = 0;
  std::vector<float> Weights; // one client at a time (the benchmark)
};

bool scenarioServeModel(const Args &A) {
  DotModelService Service;
  grpc::ServerBuilder B;
  int Port = 0;
  B.AddListeningPort(A.Address, grpc::InsecureServerCredentials(), &Port);
  B.RegisterService(&Service);
  B.SetMaxReceiveMessageSize(64 << 20);
  B.SetMaxSendMessageSize(64 << 20);
  B.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  std::unique_ptr<grpc::Server> Server = B.BuildAndStart();
  if (!Server || !Port) {
    std::printf("{\"event\":\"error\",\"where\":\"listen\"}\n");
    return false;
  }
  std::printf("{\"event\":\"listening\",\"port\":%d}\n", Port);
  std::fflush(stdout);
  {
    std::unique_lock<std::mutex> L(Service.M);
    Service.CV.wait_for(L, std::chrono::seconds(A.MaxSeconds),
                        [&] { return Service.Ended >= A.Sessions; });
  }
  Server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return true;
}

bool parse(int Argc, char **Argv, Args &A) {
  for (int I = 1; I + 1 < Argc; I += 2) {
    std::string K = Argv[I], V = Argv[I + 1];
    if (K == "--address")
      A.Address = V;
    else if (K == "--base")
      A.Base = V;
    else if (K == "--scenario")
      A.Scenario = V;
    else if (K == "--mode") {
      if (V != "inference" && V != "training")
        return false;
      A.Mode = V == "training" ? GrpcMode::Training : GrpcMode::Inference;
    } else if (K == "--call-timeout-ms")
      A.CallTimeoutMs = std::stoi(V);
    else if (K == "--connect-timeout-ms")
      A.ConnectTimeoutMs = std::stoi(V);
    else if (K == "--linger-ms")
      A.LingerMs = std::stoi(V);
    else if (K == "--count")
      A.Count = std::stoi(V);
    else if (K == "--size")
      A.Size = std::stoi(V);
    else if (K == "--offset")
      A.Offset = std::stoll(V);
    else if (K == "--sessions")
      A.Sessions = std::stoi(V);
    else if (K == "--max-seconds")
      A.MaxSeconds = std::stoi(V);
    else if (K == "--tls-root")
      A.TlsRoot = V, A.Tls = true;
    else if (K == "--tls-cert")
      A.TlsCert = V, A.Tls = true;
    else if (K == "--tls-key")
      A.TlsKey = V, A.Tls = true;
    else if (K == "--server-name")
      A.ServerName = V;
    else if (K == "--proto")
      A.Proto = V;
    else if (K == "--method")
      A.Method = V;
    else if (K == "--request-type")
      A.RequestType = V;
    else if (K == "--reply-type")
      A.ReplyType = V;
    else if (K == "--advice-field")
      A.AdviceField = V;
    else
      return false;
  }
  return Argc % 2 == 1;
}

} // namespace

int main(int Argc, char **Argv) {
  Args A;
  if (!parse(Argc, Argv, A)) {
    std::fprintf(stderr, "usage: mlbridge-grpc-e2e-compiler --address A "
                         "[--mode inference|training] [--scenario S] ... "
                         "(see the comment at the top of grpc_compiler.cpp)\n");
    return 2;
  }
  bool Ok;
  if (A.Scenario == "types")
    Ok = scenarioTypes(A);
  else if (A.Scenario == "requests")
    Ok = scenarioRequests(A);
  else if (A.Scenario == "soak")
    Ok = scenarioSoak(A);
  else if (A.Scenario == "rtt")
    Ok = scenarioRtt(A);
  else if (A.Scenario == "user")
    Ok = scenarioUser(A);
  else if (A.Scenario == "pipe-types")
    Ok = scenarioPipeTypes(A);
  else if (A.Scenario == "serve-model")
    Ok = scenarioServeModel(A);
  else
    return 2;
  std::printf("{\"event\":\"done\",\"ok\":%s}\n", Ok ? "true" : "false");
  std::fflush(stdout);
  return Ok ? 0 : 1;
}
