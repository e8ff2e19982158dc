// The Protobuf SerDes: length-delimited messages on a byte stream, both
// sides, and how a runner gets it (through its options, not createSerDes).
#include "mlbridge/pipe_model_runner.h"
#include "mlbridge/protobuf_serdes.h"
#include "mlbridge/shm_model_runner.h"

#include "mlbridge.pb.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace mlbridge;

namespace {

TensorValue valueOf(TensorSpec Spec, const void *Data, size_t N) {
  TensorValue V(std::move(Spec));
  V.assign(Data, N);
  return V;
}

std::string varint(uint64_t N) {
  std::string S;
  while (N >= 0x80) {
    S.push_back(char((N & 0x7f) | 0x80));
    N >>= 7;
  }
  S.push_back(char(N));
  return S;
}

} // namespace

TEST(ProtobufSerDes, RunnersTakeItThroughOptions) {
  EXPECT_EQ(createProtobufSerDes()->kind(), SerDesKind::Protobuf);
  // The core library never makes it by kind alone.
  EXPECT_EQ(createSerDes(SerDesKind::Protobuf), nullptr);
  PipeOptions P;
  P.Format = SerDesKind::Protobuf;
  auto Without = PipeModelRunner::create("/nonexistent/mlb-channel", {},
                                         std::nullopt, P);
  ASSERT_FALSE(Without);
  EXPECT_NE(Without.status().message().find("ProtobufSerDes"),
            std::string::npos)
      << Without.status().toString();
  P.ProtobufSerDes = createProtobufSerDes;
  auto With = PipeModelRunner::create("/nonexistent/mlb-channel", {},
                                      std::nullopt, P);
  EXPECT_TRUE(With) << With.status().toString();
  ShmOptions S;
  S.Format = SerDesKind::Protobuf;
  S.ProtobufSerDes = createProtobufSerDes;
  auto Shm = ShmModelRunner::create("/nonexistent/mlb.sock", {}, std::nullopt, S);
  EXPECT_TRUE(Shm) << Shm.status().toString();
}

// A factory of the wrong kind is caught when the runner is made.
TEST(ProtobufSerDes, OptionsFactoryOfAnotherKindIsRejected) {
  PipeOptions P;
  P.Format = SerDesKind::Protobuf;
  P.ProtobufSerDes = [] { return createSerDes(SerDesKind::Json); };
  auto R = PipeModelRunner::create("/nonexistent/mlb-channel", {},
                                   std::nullopt, P);
  ASSERT_FALSE(R);
  EXPECT_EQ(R.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(R.status().message().find("\"json\""), std::string::npos)
      << R.status().toString();
}

TEST(ProtobufSerDes, CompilerMessagesRoundTrip) {
  auto C = createProtobufSerDes();
  auto M = createProtobufSerDes();
  const double D[3] = {1.5, -std::numeric_limits<double>::infinity(), 1e300};
  TensorValue F1 = valueOf(TensorSpec::create<double>("d", {3}), D, sizeof D);
  TensorValue F2 = valueOf(TensorSpec("s", DType::String, {5}), "h\xC3\xA9y!", 5);
  const unsigned char B[2] = {1, 0};
  TensorValue F3 = valueOf(TensorSpec("b", DType::Bool, {2}), B, 2);
  std::vector<const TensorValue *> Fs{&F1, &F2, &F3};
  const TensorSpec Advice = TensorSpec::create<int64_t>("a", {kDynamicDim});

  WireMessage W;
  C->encodeHeader(Fs, Advice, false, W);
  C->encodeContext("fn", W);
  ASSERT_TRUE(C->encodeObservation(7, Fs, W).isOk());
  const std::string Bytes = W.flatten();

  MemoryByteSource In(Bytes);
  SerDesLimits L;
  std::vector<TensorSpec> Specs;
  TensorSpec Adv;
  CompilerMessage Msg;
  ASSERT_TRUE(M->decodeMessage(In, L, Specs, Adv, Msg).isOk());
  EXPECT_EQ(Msg.Type, CompilerMessage::Kind::Header);
  EXPECT_FALSE(Msg.ContinuesSession);
  ASSERT_EQ(Specs.size(), 3u);
  EXPECT_EQ(Specs[1], TensorSpec("s", DType::String, {5}));
  EXPECT_EQ(Adv, Advice);
  ASSERT_TRUE(M->decodeMessage(In, L, Specs, Adv, Msg).isOk());
  EXPECT_EQ(Msg.Type, CompilerMessage::Kind::Context);
  EXPECT_EQ(Msg.Context, "fn");
  ASSERT_TRUE(M->decodeMessage(In, L, Specs, Adv, Msg).isOk());
  EXPECT_EQ(Msg.Type, CompilerMessage::Kind::Observation);
  EXPECT_EQ(Msg.ObservationIndex, 7);
  ASSERT_EQ(Msg.Features.size(), 3u);
  EXPECT_EQ(std::memcmp(Msg.Features[0].data(), D, sizeof D), 0);
  EXPECT_EQ(Msg.Features[1].asString(), "h\xC3\xA9y!");
  EXPECT_TRUE(In.atEnd());
}

TEST(ProtobufSerDes, AdviceRoundTripsAndErrorsAreReported) {
  auto S = createProtobufSerDes();
  const TensorSpec Spec = TensorSpec::create<float>("y", {kDynamicDim});
  const float Y[4] = {1, 2, 3, std::numeric_limits<float>::quiet_NaN()};
  TensorValue A = valueOf(TensorSpec::create<float>("y", {4}), Y, sizeof Y);
  WireMessage W;
  ASSERT_TRUE(S->encodeAdvice(Spec, A, W).isOk());
  std::string Bytes = W.flatten();
  MemoryByteSource In(Bytes);
  TensorValue Out;
  ASSERT_TRUE(S->decodeAdvice(In, Spec, SerDesLimits(), Out).isOk());
  ASSERT_EQ(Out.elementCount(), 4u);
  EXPECT_TRUE(std::isnan(Out.dataAs<float>()[3]));

  // A model-side error becomes Unavailable with the model's message.
  mlbridge::v1::Advice E;
  E.set_error("cannot decide");
  std::string Body = E.SerializeAsString();
  std::string Framed = varint(Body.size()) + Body;
  MemoryByteSource EIn(Framed);
  Status St = S->decodeAdvice(EIn, Spec, SerDesLimits(), Out);
  EXPECT_EQ(St.code(), ErrorCode::Unavailable);
  EXPECT_NE(St.message().find("cannot decide"), std::string::npos);

  // A fixed spec and advice bytes that do not fit it.
  WireMessage W2;
  EXPECT_EQ(S->encodeAdvice(TensorSpec::create<float>("y", {2}), A, W2).code(),
            ErrorCode::TypeMismatch);
}

TEST(ProtobufSerDes, LengthsAreBoundedBeforeAllocation) {
  auto S = createProtobufSerDes();
  SerDesLimits L;
  L.MaxMessageBytes = 1000;
  TensorValue Out;
  // A 1 GB length prefix followed by nothing: TooLarge, not an allocation.
  std::string Huge = varint(uint64_t(1) << 30);
  MemoryByteSource In(Huge);
  EXPECT_EQ(S->decodeAdvice(In, TensorSpec::create<float>("y"), L, Out).code(),
            ErrorCode::TooLarge);
  // An 11-byte varint is malformed.
  std::string Long(11, '\xff');
  MemoryByteSource In2(Long);
  EXPECT_EQ(S->decodeAdvice(In2, TensorSpec::create<float>("y"), L, Out).code(),
            ErrorCode::Malformed);
  // Garbage that is not an Advice message.
  std::string Junk = varint(4) + std::string("\xff\xff\xff\xff", 4);
  MemoryByteSource In3(Junk);
  EXPECT_EQ(S->decodeAdvice(In3, TensorSpec::create<float>("y"), L, Out).code(),
            ErrorCode::Malformed);
  // A truncated stream is the peer closing.
  std::string Cut = varint(10) + "abc";
  MemoryByteSource In4(Cut);
  EXPECT_EQ(S->decodeAdvice(In4, TensorSpec::create<float>("y"), L, Out).code(),
            ErrorCode::PeerClosed);
}

TEST(ProtobufSerDes, ObservationMustMatchTheHeader) {
  auto C = createProtobufSerDes();
  auto M = createProtobufSerDes();
  const int32_t I[2] = {1, 2};
  TensorValue F = valueOf(TensorSpec::create<int32_t>("i", {2}), I, sizeof I);
  TensorValue G = valueOf(TensorSpec::create<int32_t>("i", {1}), I, 4);
  WireMessage W;
  std::vector<const TensorValue *> Fs{&F}, Gs{&G};
  C->encodeHeader(Fs, TensorSpec::create<int32_t>("a"), false, W);
  ASSERT_TRUE(C->encodeObservation(0, Gs, W).isOk()); // shape [1], header [2]
  std::string Bytes = W.flatten();
  MemoryByteSource In(Bytes);
  std::vector<TensorSpec> Specs;
  TensorSpec Adv;
  CompilerMessage Msg;
  ASSERT_TRUE(M->decodeMessage(In, SerDesLimits(), Specs, Adv, Msg).isOk());
  Status S = M->decodeMessage(In, SerDesLimits(), Specs, Adv, Msg);
  EXPECT_EQ(S.code(), ErrorCode::Malformed);
  EXPECT_NE(S.message().find("header declared"), std::string::npos) << S.toString();

  // An observation before any header.
  WireMessage W2;
  ASSERT_TRUE(C->encodeObservation(0, Fs, W2).isOk());
  std::string B2 = W2.flatten();
  MemoryByteSource In2(B2);
  std::vector<TensorSpec> NoSpecs;
  TensorSpec NoAdv;
  EXPECT_EQ(M->decodeMessage(In2, SerDesLimits(), NoSpecs, NoAdv, Msg).code(),
            ErrorCode::Malformed);
}
