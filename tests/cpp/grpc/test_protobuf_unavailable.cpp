// The core library without the gRPC component (this test links mlbridge
// only): the Protobuf SerDes is absent, and asking for it without handing
// it over in the options is a clear error naming what to set, never a
// crash.
#include "mlbridge/c/mlbridge.h"
#include "mlbridge/pipe_model_runner.h"
#include "mlbridge/serdes.h"

#include <gtest/gtest.h>

using namespace mlbridge;

TEST(ProtobufUnavailable, CreateSerDesReturnsNull) {
  EXPECT_EQ(createSerDes(SerDesKind::Protobuf), nullptr);
  // The other kinds are unaffected.
  ASSERT_NE(createSerDes(SerDesKind::Json), nullptr);
  Expected<SerDesKind> K = serdesKindFromName("protobuf");
  ASSERT_TRUE(K);
  EXPECT_EQ(*K, SerDesKind::Protobuf);
  EXPECT_STREQ(serdesKindName(SerDesKind::Protobuf), "protobuf");
}

TEST(ProtobufUnavailable, PipeRunnerReportsIt) {
  PipeOptions O;
  O.Format = SerDesKind::Protobuf;
  auto R = PipeModelRunner::create("/nonexistent/mlb-channel", {}, std::nullopt, O);
  ASSERT_FALSE(R);
  EXPECT_EQ(R.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(R.status().message().find("protobuf"), std::string::npos)
      << R.status().toString();
  EXPECT_NE(R.status().message().find("ProtobufSerDes"), std::string::npos)
      << R.status().toString();
  EXPECT_NE(R.status().message().find("mlbridge::createProtobufSerDes"),
            std::string::npos);
}

TEST(ProtobufUnavailable, CApiReportsIt) {
  mlb_runner *R = reinterpret_cast<mlb_runner *>(1);
  ASSERT_EQ(mlb_pipe_runner_create("/nonexistent/mlb-channel",
                                   MLB_SERDES_PROTOBUF, nullptr, &R),
            MLB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(R, nullptr);
  EXPECT_NE(std::string(mlb_last_error()).find("protobuf_serdes"),
            std::string::npos)
      << mlb_last_error();
  EXPECT_NE(std::string(mlb_last_error()).find("mlb_protobuf_serdes()"),
            std::string::npos);
  EXPECT_EQ(mlb_pipe_runner_create("/nonexistent/mlb-channel",
                                   static_cast<mlb_serdes>(7), nullptr, &R),
            MLB_ERR_INVALID_ARGUMENT);
}
