// GrpcModelRunner in training mode: the runner serves CompilerService and
// a C++ "trainer" (the test) drives it.
#include "mlbridge/grpc_model_runner.h"

#include "grpc_test_util.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <future>

using namespace mlbridge;
using namespace mlbridge::testing;
using namespace std::chrono_literals;
namespace v1 = mlbridge::v1;

namespace {

GrpcOptions training() {
  GrpcOptions O;
  O.Mode = GrpcMode::Training;
  O.CallTimeout = 5000ms;
  O.LingerTimeout = 200ms;
  return O;
}

struct Trainer {
  explicit Trainer(const std::string &Address)
      : Stub(v1::CompilerService::NewStub(
            grpc::CreateChannel(Address, grpc::InsecureChannelCredentials()))) {}

  grpc::Status get(v1::ObservationReply &R, std::chrono::milliseconds T = 3000ms) {
    grpc::ClientContext C;
    C.set_deadline(std::chrono::system_clock::now() + T);
    C.set_wait_for_ready(true);
    return Stub->GetObservation(&C, v1::ObservationRequest(), &R);
  }
  /// An action for observation Id of Session.
  grpc::Status send(const std::string &Session, uint64_t Id, int64_t Value,
                    v1::DType D = v1::DTYPE_INT64) {
    v1::Action A;
    A.set_session(Session);
    A.set_id(Id);
    auto *T = A.mutable_advice()->mutable_tensor();
    T->set_dtype(D);
    T->add_shape(1);
    T->set_data(&Value, 8);
    grpc::ClientContext C;
    C.set_deadline(std::chrono::system_clock::now() + 3s);
    v1::Empty E;
    return Stub->SendAction(&C, A, &E);
  }
  grpc::Status endEpisode(const std::string &Reason) {
    v1::EndEpisodeRequest Q;
    Q.set_reason(Reason);
    grpc::ClientContext C;
    C.set_deadline(std::chrono::system_clock::now() + 3s);
    v1::Empty E;
    return Stub->EndEpisode(&C, Q, &E);
  }
  std::unique_ptr<v1::CompilerService::Stub> Stub;
};

int64_t valueOf(const v1::Tensor &T) {
  int64_t V = 0;
  std::memcpy(&V, T.data().data(), 8);
  return V;
}

} // namespace

TEST(GrpcTraining, TrainerDrivesTheCompiler) {
  auto R = GrpcModelRunner::create("127.0.0.1:0", {TensorSpec::create<int64_t>("x")},
                                   TensorSpec::create<int64_t>("y"), training());
  ASSERT_TRUE(R) << R.status().toString();
  ASSERT_GT((*R)->port(), 0);
  EXPECT_EQ((*R)->address(), "127.0.0.1:" + std::to_string((*R)->port()));
  Trainer T((*R)->address());

  auto Compiler = std::async(std::launch::async, [&] {
    std::vector<int64_t> Got;
    for (int64_t K = 1; K <= 3; ++K) {
      (*R)->switchContext("fn" + std::to_string(K));
      *(*R)->getTensor<int64_t>(0) = K;
      Expected<int64_t> V = (*R)->evaluate<int64_t>();
      Got.push_back(V ? *V : -1);
    }
    (void)(*R)->endSession();
    return Got;
  });
  for (int K = 1; K <= 3; ++K) {
    v1::ObservationReply O;
    ASSERT_TRUE(T.get(O).ok());
    ASSERT_TRUE(O.has_observation());
    const v1::Observation &Obs = O.observation();
    EXPECT_EQ(Obs.context(), "fn" + std::to_string(K));
    EXPECT_EQ(valueOf(Obs.features(0)), K);
    // Asking again before answering returns the same observation.
    v1::ObservationReply Again;
    ASSERT_TRUE(T.get(Again).ok());
    EXPECT_EQ(Again.observation().id(), Obs.id());
    EXPECT_EQ(Obs.session(), (*R)->sessionId());
    // A stale id, or the pending id of another session, is refused; so is
    // an action naming no session; a wrong dtype is refused and stays
    // pending.
    EXPECT_EQ(T.send(Obs.session(), Obs.id() + 100, 0).error_code(),
              grpc::FAILED_PRECONDITION);
    grpc::Status Other = T.send("an earlier compiler", Obs.id(), 0);
    EXPECT_EQ(Other.error_code(), grpc::FAILED_PRECONDITION);
    EXPECT_NE(Other.error_message().find("not this compiler's session"), std::string::npos)
        << Other.error_message();
    EXPECT_EQ(T.send("", Obs.id(), 0).error_code(), grpc::INVALID_ARGUMENT);
    grpc::Status Bad = T.send(Obs.session(), Obs.id(), 0, v1::DTYPE_DOUBLE);
    EXPECT_EQ(Bad.error_code(), grpc::INVALID_ARGUMENT);
    EXPECT_NE(Bad.error_message().find("type"), std::string::npos) << Bad.error_message();
    ASSERT_TRUE(T.send(Obs.session(), Obs.id(), 10 * K).ok());
  }
  v1::ObservationReply End;
  ASSERT_TRUE(T.get(End).ok());
  EXPECT_TRUE(End.has_session_end());
  EXPECT_EQ(Compiler.get(), (std::vector<int64_t>{10, 20, 30}));
}

TEST(GrpcTraining, EndEpisodeStopsTheCompilerWaiting) {
  auto R = GrpcModelRunner::create("127.0.0.1:0", {}, std::nullopt, training());
  ASSERT_TRUE(R);
  Trainer T((*R)->address());
  auto Compiler = std::async(std::launch::async, [&] {
    (*R)->setFeature("x", 1);
    return (*R)->evaluate<int>();
  });
  v1::ObservationReply O;
  ASSERT_TRUE(T.get(O).ok());
  ASSERT_TRUE(T.endEpisode("budget spent").ok());
  Expected<int> V = Compiler.get();
  ASSERT_FALSE(V);
  EXPECT_EQ(V.status().code(), ErrorCode::PeerClosed);
  EXPECT_NE(V.status().message().find("budget spent"), std::string::npos);
  EXPECT_TRUE((*R)->episodeEnded());
  EXPECT_TRUE((*R)->waitForEpisodeEnd(0ms).isOk());
  // Later decisions fall back at once.
  auto Start = std::chrono::steady_clock::now();
  EXPECT_EQ((*R)->evaluateOr<int>(-5), -5);
  EXPECT_LT(msSince(Start), 50);
}

TEST(GrpcTraining, SilentTrainerIsATimeout) {
  GrpcOptions O = training();
  O.CallTimeout = 300ms;
  auto R = GrpcModelRunner::create("127.0.0.1:0", {}, std::nullopt, O);
  ASSERT_TRUE(R);
  (*R)->setFeature("x", 1);
  auto Start = std::chrono::steady_clock::now();
  Expected<int> V = (*R)->evaluate<int>();
  ASSERT_FALSE(V);
  EXPECT_EQ(V.status().code(), ErrorCode::Timeout);
  EXPECT_GE(msSince(Start), 280);
  EXPECT_LT(msSince(Start), 2000);
  EXPECT_EQ((*R)->waitForEpisodeEnd(10ms).code(), ErrorCode::Timeout);
}

TEST(GrpcTraining, PortInUseIsALoudError) {
  PortHolder Taken;
  auto R = GrpcModelRunner::create("127.0.0.1:" + std::to_string(Taken.Port), {},
                                   std::nullopt, training());
  ASSERT_FALSE(R);
  EXPECT_EQ(R.status().code(), ErrorCode::IOError);
  EXPECT_NE(R.status().message().find("in use"), std::string::npos) << R.status().toString();
  // Two runners never share a port either.
  auto A = GrpcModelRunner::create("127.0.0.1:0", {}, std::nullopt, training());
  ASSERT_TRUE(A);
  auto B = GrpcModelRunner::create((*A)->address(), {}, std::nullopt, training());
  ASSERT_FALSE(B);
  EXPECT_EQ(B.status().code(), ErrorCode::IOError);
}

// A client of localhost:P may reach 127.0.0.1:P or [::1]:P: a server on one
// loopback family must not share P with a server on the other.
TEST(GrpcTraining, PortServedOnTheOtherLoopbackFamilyIsRefused) {
  auto V4 = GrpcModelRunner::create("127.0.0.1:0", {}, std::nullopt, training());
  ASSERT_TRUE(V4) << V4.status().toString();
  const std::string Port = std::to_string((*V4)->port());
  auto V6 = GrpcModelRunner::create("[::1]:" + Port, {}, std::nullopt, training());
  ASSERT_FALSE(V6) << "two servers behind localhost:" << Port;
  EXPECT_EQ(V6.status().code(), ErrorCode::IOError);
  // ...and the other way round, against a server that is not ours.
  PortHolder Foreign; // a plain listener on 127.0.0.1
  auto Other = GrpcModelRunner::create(
      "[::1]:" + std::to_string(Foreign.Port), {}, std::nullopt, training());
  ASSERT_FALSE(Other);
  EXPECT_NE(Other.status().message().find("other loopback address"),
            std::string::npos)
      << Other.status().toString();
}

TEST(GrpcTraining, LoopbackOnlyUnlessAllowed) {
  auto R = GrpcModelRunner::create("0.0.0.0:0", {}, std::nullopt, training());
  ASSERT_FALSE(R);
  EXPECT_EQ(R.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(R.status().message().find("loopback"), std::string::npos);
  GrpcOptions O = training();
  O.AllowRemote = true;
  auto Remote = GrpcModelRunner::create("0.0.0.0:0", {}, std::nullopt, O);
  ASSERT_TRUE(Remote) << Remote.status().toString();
  EXPECT_GT((*Remote)->port(), 0);
}

TEST(GrpcTraining, StartAndStopAreBounded) {
  auto Start = std::chrono::steady_clock::now();
  {
    GrpcOptions O = training();
    O.LingerTimeout = 100ms;
    O.ShutdownTimeout = 100ms;
    auto R = GrpcModelRunner::create("127.0.0.1:0", {}, std::nullopt, O);
    ASSERT_TRUE(R);
    // A trainer waiting in GetObservation while the runner is destroyed.
    Trainer T((*R)->address());
    auto Waiting = std::async(std::launch::async, [&] {
      v1::ObservationReply O2;
      return T.get(O2, 10000ms);
    });
    std::this_thread::sleep_for(100ms);
    R->reset();
    grpc::Status S = Waiting.get();
    // It learnt that the session ended (or that the server is gone).
    EXPECT_TRUE(S.ok() || S.error_code() == grpc::UNAVAILABLE) << S.error_message();
  }
  EXPECT_LT(msSince(Start), 2000);
}

TEST(GrpcTraining, TlsTrainerRoundTrip) {
  SelfSignedCert C;
  ASSERT_TRUE(C.Ok);
  GrpcOptions O = training();
  O.UseTls = true;
  O.Tls.CertFile = C.Cert;
  O.Tls.KeyFile = C.Key;
  auto R = GrpcModelRunner::create("127.0.0.1:0", {TensorSpec::create<int64_t>("x")},
                                   TensorSpec::create<int64_t>("y"), O);
  ASSERT_TRUE(R) << R.status().toString();
  std::string Root;
  {
    std::ifstream F(C.Cert);
    Root.assign(std::istreambuf_iterator<char>(F), {});
  }
  grpc::SslCredentialsOptions SO;
  SO.pem_root_certs = Root;
  auto Stub = v1::CompilerService::NewStub(
      grpc::CreateChannel((*R)->address(), grpc::SslCredentials(SO)));
  auto Compiler = std::async(std::launch::async, [&] {
    *(*R)->getTensor<int64_t>(0) = 4;
    return (*R)->evaluate<int64_t>();
  });
  v1::ObservationReply Obs;
  {
    grpc::ClientContext Ctx;
    Ctx.set_deadline(std::chrono::system_clock::now() + 3s);
    ASSERT_TRUE(Stub->GetObservation(&Ctx, v1::ObservationRequest(), &Obs).ok());
  }
  v1::Action A;
  A.set_session(Obs.observation().session());
  A.set_id(Obs.observation().id());
  auto *T = A.mutable_advice()->mutable_tensor();
  T->set_dtype(v1::DTYPE_INT64);
  T->add_shape(1);
  int64_t V = 44;
  T->set_data(&V, 8);
  {
    grpc::ClientContext Ctx;
    Ctx.set_deadline(std::chrono::system_clock::now() + 3s);
    v1::Empty E;
    ASSERT_TRUE(Stub->SendAction(&Ctx, A, &E).ok());
  }
  Expected<int64_t> Got = Compiler.get();
  ASSERT_TRUE(Got) << Got.status().toString();
  EXPECT_EQ(*Got, 44);
  // A plaintext trainer cannot talk to the TLS compiler.
  Trainer Plain((*R)->address());
  v1::ObservationReply X;
  grpc::Status S = [&] {
    grpc::ClientContext Ctx;
    Ctx.set_deadline(std::chrono::system_clock::now() + 500ms);
    return Plain.Stub->GetObservation(&Ctx, v1::ObservationRequest(), &X);
  }();
  EXPECT_FALSE(S.ok());
}
