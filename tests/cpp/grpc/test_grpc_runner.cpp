// GrpcModelRunner in inference mode against in-process servers: round
// trips, every failure mode a compiler must survive, TLS.
#include "mlbridge/grpc_model_runner.h"

#include "grpc_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>

using namespace mlbridge;
using namespace mlbridge::testing;
using namespace std::chrono_literals;

namespace {

GrpcOptions fast() {
  GrpcOptions O;
  O.ConnectTimeout = 2000ms;
  O.CallTimeout = 2000ms;
  return O;
}

/// A request that must fail: its status, and how long it took.
struct Failure {
  Status S;
  double Ms = 0;
};
Failure failedRequest(ModelRunner &R) {
  R.setFeature("x", 1);
  auto Start = std::chrono::steady_clock::now();
  Expected<int> V = R.evaluate<int>();
  Failure F{V ? Status::ok() : V.status(), msSince(Start)};
  EXPECT_FALSE(V);
  return F;
}

} // namespace

TEST(GrpcRunner, RoundTripsEveryType) {
  FakeModelServer Server;
  auto R = GrpcModelRunner::create(Server.address(), {}, std::nullopt, fast());
  ASSERT_TRUE(R) << R.status().toString();
  auto Check = [&](auto Tag) {
    using T = decltype(Tag);
    using L = std::numeric_limits<T>;
    std::vector<T> V{L::lowest(), L::max(), T(0), T(1)};
    const std::string N(dtypeName(DTypeOf<T>::value));
    (*R)->setFeature("v_" + N, V);
    Expected<std::vector<T>> E = (*R)->evaluate<std::vector<T>>();
    ASSERT_TRUE(E) << N << ": " << E.status().toString();
    EXPECT_EQ(*E, V) << N;
  };
  Check(float());
  Check(double());
  Check(int8_t());
  Check(int16_t());
  Check(int32_t());
  Check(int64_t());
  Check(uint8_t());
  Check(uint16_t());
  Check(uint32_t());
  Check(uint64_t());
  (*R)->setFeature("b", std::vector<bool>{true, false, true});
  Expected<std::vector<bool>> B = (*R)->evaluate<std::vector<bool>>();
  ASSERT_TRUE(B) << B.status().toString();
  EXPECT_EQ(*B, (std::vector<bool>{true, false, true}));
  (*R)->setFeature("s", "h\xC3\xA9llo");
  Expected<std::string> S = (*R)->evaluate<std::string>();
  ASSERT_TRUE(S) << S.status().toString();
  EXPECT_EQ(*S, "h\xC3\xA9llo");
  // The requests carried the session, contexts and indices.
  std::vector<mlbridge::v1::Observation> Reqs = Server.requests();
  ASSERT_EQ(Reqs.size(), 12u);
  EXPECT_EQ(Reqs[0].session(), (*R)->sessionId());
  EXPECT_EQ(Reqs[11].index(), 11);
  EXPECT_EQ(Reqs[11].advice().dtype(), mlbridge::v1::DTYPE_STRING);
}

TEST(GrpcRunner, ContextsAndIndicesAndSessionEnd) {
  FakeModelServer Server;
  GrpcOptions O = fast();
  O.SessionId = "worker-7";
  auto R = GrpcModelRunner::create(Server.address(),
                                   {TensorSpec::create<int64_t>("x")},
                                   TensorSpec::create<int64_t>("y"), O);
  ASSERT_TRUE(R);
  for (const char *Ctx : {"f", "f", "g"}) {
    if (std::string(Ctx) != "f" || Server.requests().empty()) {
      ASSERT_TRUE((*R)->switchContext(Ctx).isOk());
    }
    *(*R)->getTensor<int64_t>(0) = 21;
    Expected<int64_t> V = (*R)->evaluate<int64_t>();
    ASSERT_TRUE(V) << V.status().toString();
    EXPECT_EQ(*V, 21);
  }
  auto Reqs = Server.requests();
  ASSERT_EQ(Reqs.size(), 3u);
  EXPECT_EQ(Reqs[1].context(), "f");
  EXPECT_EQ(Reqs[1].index(), 1);
  EXPECT_EQ(Reqs[2].context(), "g");
  EXPECT_EQ(Reqs[2].index(), 0);
  EXPECT_EQ(Reqs[2].session(), "worker-7");
  ASSERT_TRUE((*R)->endSession().isOk());
  EXPECT_EQ(Server.ended(), std::vector<std::string>{"worker-7"});
  Expected<int64_t> After = (*R)->evaluate<int64_t>();
  EXPECT_FALSE(After);
}

TEST(GrpcRunner, AbsentServerFailsWithinTheBudget) {
  const std::string Addr = "127.0.0.1:" + std::to_string(freePort());
  GrpcOptions O = fast();
  O.ConnectTimeout = 700ms;
  auto R = GrpcModelRunner::create(Addr, {}, std::nullopt, O);
  ASSERT_TRUE(R); // nothing is contacted before the first request
  Failure F = failedRequest(**R);
  EXPECT_EQ(F.S.code(), ErrorCode::Unavailable) << F.S.toString();
  EXPECT_NE(F.S.message().find("no model server reachable"), std::string::npos);
  EXPECT_GE(F.Ms, 650);
  EXPECT_LT(F.Ms, 2500);
  // Unavailable from now on, at once.
  auto Start = std::chrono::steady_clock::now();
  EXPECT_FALSE((*R)->evaluate<int>());
  EXPECT_LT(msSince(Start), 50);
  EXPECT_TRUE((*R)->isUnavailable());
}

TEST(GrpcRunner, ServerStartingLateWithinTheBudgetIsReached) {
  // Reserve a port, start the server on it after a while: the backoff
  // retries must find it before the budget ends.
  const int Port = freePort();
  GrpcOptions O = fast();
  O.ConnectTimeout = 5000ms;
  O.InitialBackoff = 20ms;
  O.MaxBackoff = 200ms;
  auto R = GrpcModelRunner::create("127.0.0.1:" + std::to_string(Port), {},
                                   std::nullopt, O);
  ASSERT_TRUE(R);
  std::unique_ptr<grpc::Server> Late;

  class Echo final : public mlbridge::v1::ModelService::Service {
    grpc::Status Evaluate(grpc::ServerContext *, const mlbridge::v1::Observation *Q,
                          mlbridge::v1::Advice *A) override {
      *A = echoPolicy(*Q);
      return grpc::Status::OK;
    }
  } Svc;
  std::thread Starter([&] {
    std::this_thread::sleep_for(600ms);
    grpc::ServerBuilder B;
    B.AddListeningPort("127.0.0.1:" + std::to_string(Port),
                       grpc::InsecureServerCredentials());
    B.RegisterService(&Svc);
    Late = B.BuildAndStart();
  });
  (*R)->setFeature("x", 5);
  auto Start = std::chrono::steady_clock::now();
  Expected<int> V = (*R)->evaluate<int>();
  Starter.join();
  ASSERT_TRUE(Late) << "could not start the late server";
  ASSERT_TRUE(V) << V.status().toString();
  EXPECT_EQ(*V, 5);
  EXPECT_GE(msSince(Start), 550);
  EXPECT_LT(msSince(Start), 3000); // backoff capped at 200 ms
  (*R).reset();
  Late->Shutdown(std::chrono::system_clock::now());
}

TEST(GrpcRunner, SlowServerHitsTheDeadline) {
  FakeModelServer Server;
  Server.DelayMs = 3000;
  GrpcOptions O = fast();
  O.CallTimeout = 300ms;
  auto R = GrpcModelRunner::create(Server.address(), {}, std::nullopt, O);
  ASSERT_TRUE(R);
  Failure F = failedRequest(**R);
  EXPECT_EQ(F.S.code(), ErrorCode::Timeout) << F.S.toString();
  EXPECT_NE(F.S.message().find("DEADLINE_EXCEEDED"), std::string::npos);
  EXPECT_GE(F.Ms, 280);
  EXPECT_LT(F.Ms, 1500);
  EXPECT_TRUE((*R)->isUnavailable());
}

TEST(GrpcRunner, ModelErrorsAndWrongRepliesKeepTheRunnerUsable) {
  FakeModelServer Server([](const mlbridge::v1::Observation &O) {
    mlbridge::v1::Advice A;
    if (O.index() == 0) {
      A.set_error("no idea");
    } else if (O.index() == 1) {
      A = echoPolicy(O);
      A.mutable_tensor()->set_dtype(mlbridge::v1::DTYPE_DOUBLE); // wrong dtype
      A.mutable_tensor()->set_data(std::string(8, '\0'));
    } else if (O.index() == 2) {
      // neither advice nor error: malformed
    } else {
      A = echoPolicy(O);
    }
    return A;
  });
  auto R = GrpcModelRunner::create(Server.address(),
                                   {TensorSpec::create<int32_t>("x")},
                                   TensorSpec::create<int32_t>("y"), fast());
  ASSERT_TRUE(R);
  *(*R)->getTensor<int32_t>(0) = 9;
  Expected<int32_t> E = (*R)->evaluate<int32_t>();
  ASSERT_FALSE(E);
  EXPECT_EQ(E.status().code(), ErrorCode::Unavailable);
  EXPECT_NE(E.status().message().find("no idea"), std::string::npos);
  E = (*R)->evaluate<int32_t>();
  ASSERT_FALSE(E);
  EXPECT_EQ(E.status().code(), ErrorCode::TypeMismatch) << E.status().toString();
  EXPECT_FALSE((*R)->isUnavailable());
  E = (*R)->evaluate<int32_t>();
  ASSERT_FALSE(E);
  EXPECT_EQ(E.status().code(), ErrorCode::Malformed);
  // A reply without advice breaks trust in the server.
  EXPECT_TRUE((*R)->isUnavailable());
}

TEST(GrpcRunner, ServerErrorStatusesAreErrorsNeverDefaults) {
  FakeModelServer Server;
  Server.StatusToReturn = grpc::Status(grpc::INTERNAL, "model crashed");
  auto R = GrpcModelRunner::create(Server.address(), {}, std::nullopt, fast());
  ASSERT_TRUE(R);
  (*R)->setFeature("x", 3);
  Expected<int> V = (*R)->evaluate<int>();
  ASSERT_FALSE(V);
  EXPECT_EQ(V.status().code(), ErrorCode::Malformed);
  EXPECT_NE(V.status().message().find("INTERNAL: model crashed"), std::string::npos)
      << V.status().toString();
  EXPECT_EQ((*R)->evaluateOr<int>(-1), -1);
}

TEST(GrpcRunner, GarbageOnThePortIsAnError) {
  FakeGarbageServer Garbage;
  GrpcOptions O = fast();
  O.ConnectTimeout = 800ms;
  auto R = GrpcModelRunner::create(Garbage.address(), {}, std::nullopt, O);
  ASSERT_TRUE(R);
  (*R)->setFeature("x", 1);
  auto Start = std::chrono::steady_clock::now();
  Expected<int> V = (*R)->evaluate<int>();
  ASSERT_FALSE(V);
  EXPECT_EQ(V.status().code(), ErrorCode::Unavailable) << V.status().toString();
  EXPECT_LT(msSince(Start), 3000);
  EXPECT_GE(Garbage.Connections.load(), 1);
}

TEST(GrpcRunner, MessagesUpToTheLimitPass) {
  FakeModelServer Server;
  GrpcOptions O = fast();
  O.MaxMessageBytes = 1 << 20;
  auto R = GrpcModelRunner::create(Server.address(), {}, std::nullopt, O);
  ASSERT_TRUE(R);
  // 50,000 floats (the paper's largest vector) fit the default and 1 MiB.
  std::vector<float> X(50000, 0.25f);
  (*R)->setFeature("x", X);
  Expected<std::vector<float>> V = (*R)->evaluate<std::vector<float>>();
  ASSERT_TRUE(V) << V.status().toString();
  EXPECT_EQ(V->size(), 50000u);
  // 300,000 floats do not fit 1 MiB: TooLarge, before anything is sent.
  (*R)->setFeature("x", std::vector<float>(300000, 1.0f));
  V = (*R)->evaluate<std::vector<float>>();
  ASSERT_FALSE(V);
  EXPECT_EQ(V.status().code(), ErrorCode::TooLarge) << V.status().toString();
}

TEST(GrpcRunner, InvalidOptionsAreRejected) {
  GrpcOptions O;
  O.CallTimeout = 0ms;
  EXPECT_EQ(GrpcModelRunner::create("127.0.0.1:1", {}, std::nullopt, O).status().code(),
            ErrorCode::InvalidArgument);
  EXPECT_FALSE(GrpcModelRunner::create("", {}, std::nullopt, GrpcOptions()));
  GrpcOptions B;
  B.InitialBackoff = 2000ms;
  B.MaxBackoff = 100ms;
  EXPECT_FALSE(GrpcModelRunner::create("127.0.0.1:1", {}, std::nullopt, B));
  GrpcOptions T;
  T.UseTls = true;
  T.Tls.RootCertFile = "/nonexistent/ca.pem";
  auto E = GrpcModelRunner::create("127.0.0.1:1", {}, std::nullopt, T);
  ASSERT_FALSE(E);
  EXPECT_EQ(E.status().code(), ErrorCode::NotFound);
  EXPECT_NE(E.status().message().find("/nonexistent/ca.pem"), std::string::npos);
}

TEST(GrpcRunner, TlsRoundTripAndMismatch) {
  SelfSignedCert C;
  ASSERT_TRUE(C.Ok) << "openssl could not make a certificate";
  grpc::SslServerCredentialsOptions SO;
  std::string Cert, Key;
  {
    std::ifstream A(C.Cert), B(C.Key);
    Cert.assign(std::istreambuf_iterator<char>(A), {});
    Key.assign(std::istreambuf_iterator<char>(B), {});
  }
  SO.pem_key_cert_pairs.push_back({Key, Cert});
  FakeModelServer Tls(echoPolicy, grpc::SslServerCredentials(SO));
  FakeModelServer Plain;

  GrpcOptions O = fast();
  O.ConnectTimeout = 1500ms;
  O.UseTls = true;
  O.Tls.RootCertFile = C.Cert;
  auto R = GrpcModelRunner::create(Tls.address(), {}, std::nullopt, O);
  ASSERT_TRUE(R) << R.status().toString();
  (*R)->setFeature("x", 11);
  Expected<int> V = (*R)->evaluate<int>();
  ASSERT_TRUE(V) << V.status().toString();
  EXPECT_EQ(*V, 11);

  // TLS client, plaintext server; plaintext client, TLS server.
  auto M1 = GrpcModelRunner::create(Plain.address(), {}, std::nullopt, O);
  ASSERT_TRUE(M1);
  (*M1)->setFeature("x", 1);
  Expected<int> E1 = (*M1)->evaluate<int>();
  ASSERT_FALSE(E1);
  EXPECT_EQ(E1.status().code(), ErrorCode::Unavailable);
  GrpcOptions P = fast();
  P.ConnectTimeout = 1500ms;
  auto M2 = GrpcModelRunner::create(Tls.address(), {}, std::nullopt, P);
  ASSERT_TRUE(M2);
  (*M2)->setFeature("x", 1);
  Expected<int> E2 = (*M2)->evaluate<int>();
  ASSERT_FALSE(E2);
  EXPECT_NE(E2.status().message().find("plaintext"), std::string::npos)
      << E2.status().toString();
  EXPECT_EQ(Tls.requests().size(), 1u);
  EXPECT_EQ(Plain.requests().size(), 0u);
}
