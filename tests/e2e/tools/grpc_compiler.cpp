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
// 127.0.0.1:0) and prints {"event":"listening","port":P} first. The
// scenarios are e2e_scenarios.h's (shared with e2e_compiler.cpp).
#include "e2e_scenarios.h"
#include "mlbridge/grpc_model_runner.h"
#include "mlbridge/pipe_model_runner.h"
#include "mlbridge/protobuf_serdes.h"

#include "mlbridge.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
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
  int Offset = 0;
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

// One session, every dtype: features s_<dtype> and v_<dtype>, declared as
// they come.
bool echoAll(ModelRunner &R) {
  bool Ok = e2e::echoEveryDType([&](auto Tag) {
    const std::string Name(dtypeName(DTypeOf<decltype(Tag)>::value));
    return e2e::echoType<decltype(Tag)>(R, "s_" + Name, "v_" + Name);
  });
  return e2e::echoString(R) && Ok;
}

bool scenarioTypes(const Args &A) {
  auto R = makeRunner(A);
  return R && echoAll(*R);
}

bool scenarioPipeTypes(const Args &A) {
  PipeOptions O;
  O.Format = SerDesKind::Protobuf;
  O.ProtobufSerDes = createProtobufSerDes;
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
  const bool Ok = e2e::requests(*R, {A.Count, A.Offset, 0, true});
  if (A.Mode == GrpcMode::Training) { // whether the trainer ended the episode
    Status S = R->waitForEpisodeEnd(std::chrono::milliseconds(0));
    std::printf("{\"event\":\"episode\",\"ended\":%s}\n",
                S.isOk() ? "true" : "false");
  }
  return Ok;
}

bool scenarioRtt(const Args &A) {
  auto R = makeRunner(A, {TensorSpec::create<float>("x", {A.Size})},
                      TensorSpec::create<float>("y"));
  return R && e2e::rtt(*R, A.Size, A.Count);
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
  e2e::Flags F;
  F.Strings = {{"--address", &A.Address},   {"--base", &A.Base},
               {"--scenario", &A.Scenario}, {"--server-name", &A.ServerName},
               {"--proto", &A.Proto},       {"--method", &A.Method},
               {"--request-type", &A.RequestType},
               {"--reply-type", &A.ReplyType},
               {"--advice-field", &A.AdviceField}};
  F.Ints = {{"--call-timeout-ms", &A.CallTimeoutMs},
            {"--connect-timeout-ms", &A.ConnectTimeoutMs},
            {"--linger-ms", &A.LingerMs},
            {"--count", &A.Count},
            {"--size", &A.Size},
            {"--offset", &A.Offset},
            {"--sessions", &A.Sessions},
            {"--max-seconds", &A.MaxSeconds}};
  auto TlsFile = [&](std::string &File) {
    return [&](const std::string &V) {
      File = V;
      A.Tls = true;
      return true;
    };
  };
  F.Custom = {{"--mode",
               [&](const std::string &V) {
                 A.Mode = V == "training" ? GrpcMode::Training : GrpcMode::Inference;
                 return V == "inference" || V == "training";
               }},
              {"--tls-root", TlsFile(A.TlsRoot)},
              {"--tls-cert", TlsFile(A.TlsCert)},
              {"--tls-key", TlsFile(A.TlsKey)}};
  return F.parse(Argc, Argv);
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
  if (A.Scenario == "types")
    return e2e::done(scenarioTypes(A));
  if (A.Scenario == "requests")
    return e2e::done(scenarioRequests(A));
  if (A.Scenario == "soak")
    return e2e::done(scenarioSoak(A));
  if (A.Scenario == "rtt")
    return e2e::done(scenarioRtt(A));
  if (A.Scenario == "user")
    return e2e::done(scenarioUser(A));
  if (A.Scenario == "pipe-types")
    return e2e::done(scenarioPipeTypes(A));
  if (A.Scenario == "serve-model")
    return e2e::done(scenarioServeModel(A));
  return 2;
}
