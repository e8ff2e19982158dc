// The C API of the gRPC runner against an in-process model server.
#include "mlbridge/c/grpc.h"

#include "grpc_test_util.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace mlbridge::testing;

TEST(GrpcCApi, CreateUseDestroy) {
  FakeModelServer Server;
  mlb_grpc_options O;
  mlb_grpc_options_init(&O);
  EXPECT_EQ(O.mode, MLB_GRPC_INFERENCE);
  EXPECT_EQ(O.call_timeout_ms, 30000);
  EXPECT_EQ(O.max_message_bytes, size_t(64) << 20);
  O.connect_timeout_ms = 2000;
  mlb_runner *R = nullptr;
  ASSERT_EQ(mlb_grpc_runner_create(Server.address().c_str(), &O, &R), MLB_OK)
      << mlb_last_error();
  int Port = -1;
  ASSERT_EQ(mlb_grpc_runner_port(R, &Port), MLB_OK);
  EXPECT_EQ(Port, 0);
  const float F[3] = {1, 2, 3};
  ASSERT_EQ(mlb_set_float_array(R, "f", F, 3), MLB_OK);
  float Out[4];
  size_t N = 0;
  ASSERT_EQ(mlb_evaluate_float_array(R, Out, 4, &N), MLB_OK) << mlb_last_error();
  ASSERT_EQ(N, 3u);
  EXPECT_EQ(Out[2], 3.0f);
  EXPECT_EQ(mlb_grpc_runner_end_session(R), MLB_OK);
  EXPECT_EQ(Server.ended().size(), 1u);
  mlb_runner_destroy(R);
}

TEST(GrpcCApi, ErrorsAreReported) {
  mlb_runner *R = reinterpret_cast<mlb_runner *>(1);
  EXPECT_EQ(mlb_grpc_runner_create(nullptr, nullptr, &R), MLB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(R, nullptr);
  mlb_grpc_options O;
  mlb_grpc_options_init(&O);
  O.mode = 7;
  EXPECT_EQ(mlb_grpc_runner_create("127.0.0.1:1", &O, &R), MLB_ERR_INVALID_ARGUMENT);
  // Absent server: the error comes from the first evaluation, in budget.
  mlb_grpc_options_init(&O);
  O.connect_timeout_ms = 300;
  const std::string Addr = "127.0.0.1:" + std::to_string(freePort());
  ASSERT_EQ(mlb_grpc_runner_create(Addr.c_str(), &O, &R), MLB_OK);
  int64_t V = 0;
  ASSERT_EQ(mlb_set_int64(R, "x", 1), MLB_OK);
  EXPECT_EQ(mlb_evaluate_int64(R, &V), MLB_ERR_UNAVAILABLE);
  EXPECT_NE(std::strstr(mlb_last_error(), "no model server"), nullptr) << mlb_last_error();
  mlb_runner_destroy(R);
  // A pipe-runner handle is not a gRPC runner.
  int Port;
  EXPECT_EQ(mlb_grpc_runner_port(nullptr, &Port), MLB_ERR_INVALID_ARGUMENT);
}

TEST(GrpcCApi, TrainingModeListens) {
  mlb_grpc_options O;
  mlb_grpc_options_init(&O);
  O.mode = MLB_GRPC_TRAINING;
  mlb_runner *R = nullptr;
  ASSERT_EQ(mlb_grpc_runner_create("127.0.0.1:0", &O, &R), MLB_OK) << mlb_last_error();
  int Port = 0;
  ASSERT_EQ(mlb_grpc_runner_port(R, &Port), MLB_OK);
  EXPECT_GT(Port, 0);
  mlb_runner_destroy(R);
}

// MLB_SERDES_PROTOBUF over pipes and shared memory: available when the
// options carry the gRPC component's SerDes (the runners open their
// channels lazily, so creating one needs no peer).
TEST(GrpcCApi, ProtobufSerDesThroughOptions) {
  mlb_pipe_options P;
  mlb_pipe_options_init(&P);
  EXPECT_EQ(P.protobuf_serdes, nullptr);
  mlb_runner *R = nullptr;
  EXPECT_EQ(mlb_pipe_runner_create("/nonexistent/mlb-channel",
                                   MLB_SERDES_PROTOBUF, &P, &R),
            MLB_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mlb_last_error()).find("protobuf_serdes"),
            std::string::npos)
      << mlb_last_error();
  P.protobuf_serdes = mlb_protobuf_serdes();
  ASSERT_NE(P.protobuf_serdes, nullptr);
  ASSERT_EQ(mlb_pipe_runner_create("/nonexistent/mlb-channel",
                                   MLB_SERDES_PROTOBUF, &P, &R),
            MLB_OK)
      << mlb_last_error();
  ASSERT_NE(R, nullptr);
  mlb_runner_destroy(R);

  mlb_shm_options S;
  mlb_shm_options_init(&S);
  EXPECT_EQ(S.protobuf_serdes, nullptr);
  S.protobuf_serdes = mlb_protobuf_serdes();
  R = nullptr;
  ASSERT_EQ(mlb_shm_runner_create("/nonexistent/mlb.sock", MLB_SERDES_PROTOBUF,
                                  &S, &R),
            MLB_OK)
      << mlb_last_error();
  ASSERT_NE(R, nullptr);
  mlb_runner_destroy(R);
}
