// makeRunner (mlbridge/runner_settings.h) with the gRPC runner's factory.
#include "grpc_test_util.h"

#include "mlbridge/grpc_model_runner.h"
#include "mlbridge/runner_settings.h"

#include <gtest/gtest.h>

using namespace mlbridge;
using namespace mlbridge::testing;

TEST(GrpcRunnerSettings, AServerMakesAGrpcRunnerWithTheIntegrationsSpecs) {
  FakeModelServer Server; // echoes the int64 features as the advice
  RunnerSettings S;
  S.Runners.push_back(grpcRunnerFactory());
  S.Server = Server.address();
  EXPECT_EQ(resolveRunnerKind(S), RunnerKind::Grpc);
  auto R = makeRunner(S, {TensorSpec::create<int64_t>("trip_count")},
                      TensorSpec::create<int64_t>("unroll"));
  ASSERT_TRUE(R) << R.status().toString();
  ASSERT_NE(*R, nullptr);
  *(*R)->getTensor<int64_t>(0) = 4;
  Expected<int64_t> A = (*R)->evaluateAction({true, true, true, true, true});
  ASSERT_TRUE(A) << A.status().toString();
  EXPECT_EQ(*A, 4);
  ASSERT_EQ(Server.requests().size(), 1u);
  EXPECT_EQ(Server.requests()[0].advice().name(), "unroll");
}

TEST(GrpcRunnerSettings, NoServerThereIsBoundedByTheTimeout) {
  RunnerSettings S;
  S.Runners.push_back(grpcRunnerFactory());
  S.Server = "127.0.0.1:" + std::to_string(freePort());
  S.Timeout = std::chrono::milliseconds(300);
  auto R = makeRunner(S, {TensorSpec::create<int64_t>("x")},
                      TensorSpec::create<int64_t>("a"));
  ASSERT_TRUE(R) << "nothing is sent before the first decision";
  const auto Start = std::chrono::steady_clock::now();
  Expected<int64_t> A = (*R)->evaluate<int64_t>();
  ASSERT_FALSE(A);
  EXPECT_LT(msSince(Start), 3000);
  S.Server.clear();
  S.Kind = RunnerKind::Grpc;
  auto Missing = makeRunner(S, {}, TensorSpec::create<int64_t>("a"));
  ASSERT_FALSE(Missing);
  EXPECT_NE(Missing.status().message().find("grpc: no server address given"),
            std::string::npos);
}
