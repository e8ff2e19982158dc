//===- tests/cpp/test_serdes_contract.cpp - What every SerDes promises ----===//
//
// One suite, run for each format (bitstream, JSON): what the compiler
// sends reaches the model side with the same specs and values, what the
// model answers reaches the compiler with the same dtype, shape and
// values, and decoding reuses the caller's storage. Exact bytes, non-finite
// values and errors are format-specific: test_bitstream_serdes.cpp,
// test_json_serdes.cpp.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/serdes.h"

#include "serdes_test_util.h"

#include <gtest/gtest.h>

#include <limits>

using namespace mlbridge;
using namespace mlbridge::testutil;

namespace {

class SerDesContract : public ::testing::TestWithParam<SerDesKind> {
protected:
  std::unique_ptr<SerDes> codec() const { return createSerDes(GetParam()); }
};

/// Every dtype with extreme finite values (shortest round-trip text keeps
/// them bit-exact in JSON too), scalars, vectors, matrices, strings with
/// control bytes, empty tensors.
std::vector<TensorValue> allFeatures() {
  std::vector<TensorValue> F;
  F.push_back(makeValue<float>("f32", {0.1f, -0.0f, 3.4028235e38f,
                                       std::numeric_limits<float>::denorm_min(),
                                       1.0f, 16777216.0f, -1.5e-10f}));
  F.push_back(makeValue<double>("f64",
                                {0.1, 1e300, -2.5, 5e-324,
                                 1.7976931348623157e308, 123456789012345680.0},
                                {2, 3}));
  F.push_back(makeValue<int8_t>("i8", {INT8_MIN, INT8_MAX, 0, -1}));
  F.push_back(makeValue<int16_t>("i16", {INT16_MIN, INT16_MAX}));
  F.push_back(makeValue<int32_t>("i32", {INT32_MIN}));
  F.push_back(makeValue<int64_t>("i64", {INT64_MIN, INT64_MAX, -1}));
  F.push_back(makeValue<uint8_t>("u8", {0, 255}));
  F.push_back(makeValue<uint16_t>("u16", {UINT16_MAX}));
  F.push_back(makeValue<uint32_t>("u32", {UINT32_MAX, 0}));
  F.push_back(makeValue<uint64_t>("u64", {UINT64_MAX, 0, 1}));
  F.push_back(makeBool("flag", {1}));
  F.push_back(makeBool("mask", {1, 0, 0, 1, 1}));
  F.push_back(makeString("text", "h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9D\x84\x9E"));
  F.push_back(makeString("ctl", std::string("tab\tnul") + '\0' + "\x7f"));
  F.push_back(makeString("empty", ""));
  F.push_back(makeValue<int64_t>("scalar", {42}));
  F.push_back(makeValue<float>("scalar_f", {42.0f}));
  F.push_back(makeValue<double>("none", {}));
  return F;
}

TEST_P(SerDesContract, CompilerToModelRoundTripKeepsEveryFeature) {
  const std::vector<TensorValue> F = allFeatures();
  for (const TensorSpec &Advice : {TensorSpec::create<int64_t>("decision", {-1}),
                                   TensorSpec::create<float>("decision", {-1})}) {
    auto Codec = codec();
    WireMessage M;
    Codec->encodeHeader(pointers(F), Advice, false, M);
    Codec->encodeContext("ctx \xE2\x9C\x93", M);
    ASSERT_OK(Codec->encodeObservation(0, pointers(F), M));
    Codec->encodeContext("\xF0\x9D\x84\x9E ctx", M);
    ASSERT_OK(Codec->encodeObservation(1, pointers(F), M));
    const std::string Bytes = M.flatten();

    ModelSide Model(GetParam());
    MemoryByteSource In(Bytes);
    ASSERT_OK(Model.next(In));
    ASSERT_EQ(Model.Msg.Type, CompilerMessage::Kind::Header);
    ASSERT_EQ(Model.Msg.FeatureSpecs.size(), F.size());
    for (size_t I = 0; I < F.size(); ++I)
      EXPECT_EQ(Model.Msg.FeatureSpecs[I], F[I].spec());
    EXPECT_EQ(Model.Msg.AdviceSpec, Advice);
    EXPECT_EQ(Model.Specs, Model.Msg.FeatureSpecs);
    EXPECT_EQ(Model.Advice, Advice);

    for (int64_t Obs = 0; Obs < 2; ++Obs) {
      ASSERT_OK(Model.next(In));
      ASSERT_EQ(Model.Msg.Type, CompilerMessage::Kind::Context);
      EXPECT_EQ(Model.Msg.Context, Obs ? "\xF0\x9D\x84\x9E ctx" : "ctx \xE2\x9C\x93");
      ASSERT_OK(Model.next(In));
      ASSERT_EQ(Model.Msg.Type, CompilerMessage::Kind::Observation);
      EXPECT_EQ(Model.Msg.ObservationIndex, Obs);
      ASSERT_EQ(Model.Msg.Features.size(), F.size());
      for (size_t I = 0; I < F.size(); ++I) {
        EXPECT_EQ(Model.Msg.Features[I].spec(), F[I].spec());
        EXPECT_EQ(bytesOf(Model.Msg.Features[I]), bytesOf(F[I]))
            << F[I].spec().name(); // bit-exact, -0.0 and subnormals included
      }
    }
    EXPECT_TRUE(In.atEnd());
    EXPECT_EQ(Model.next(In).code(), ErrorCode::PeerClosed);
  }
}

TEST_P(SerDesContract, ModelSideReusesFeatureStorage) {
  auto Codec = codec();
  TensorValue V = makeValue<double>("v", std::vector<double>(1000, 1.0));
  WireMessage M;
  Codec->encodeHeader({&V}, TensorSpec::create<int64_t>("a"), false, M);
  ASSERT_OK(Codec->encodeObservation(0, {&V}, M));
  ASSERT_OK(Codec->encodeObservation(1, {&V}, M));
  const std::string Bytes = M.flatten();
  ModelSide Model(GetParam());
  MemoryByteSource In(Bytes);
  ASSERT_OK(Model.next(In));
  ASSERT_OK(Model.next(In));
  const void *First = Model.Msg.Features[0].data();
  ASSERT_OK(Model.next(In));
  EXPECT_EQ(Model.Msg.Features[0].data(), First);
}

TEST_P(SerDesContract, ModelToCompilerRoundTripEveryDType) {
  const SerDesKind K = GetParam();
  adviceRoundTrip<float>(K, {0.1f}, {1});
  adviceRoundTrip<float>(K, {-0.0f, std::numeric_limits<float>::infinity(),
                             std::numeric_limits<float>::max()},
                         {3});
  adviceRoundTrip<double>(K, {-std::numeric_limits<double>::infinity(), 1e-310},
                          {-1});
  adviceRoundTrip<int8_t>(K, {INT8_MIN}, {1});
  adviceRoundTrip<int16_t>(K, {INT16_MIN, INT16_MAX}, {2});
  adviceRoundTrip<int32_t>(K, {INT32_MAX}, {1});
  adviceRoundTrip<int64_t>(K, {INT64_MIN}, {1});
  adviceRoundTrip<int64_t>(K, {INT64_MIN, 0, INT64_MAX}, {-1});
  adviceRoundTrip<uint8_t>(K, {255, 0}, {-1});
  adviceRoundTrip<uint16_t>(K, {UINT16_MAX}, {1});
  adviceRoundTrip<uint32_t>(K, {UINT32_MAX}, {1});
  adviceRoundTrip<uint64_t>(K, {UINT64_MAX}, {1});
  adviceRoundTrip<uint64_t>(K, {}, {-1}); // empty dynamic advice
  adviceRoundTrip<int32_t>(K, {1, 2, 3, 4, 5, 6}, {-1, 3});
  adviceRoundTrip<int32_t>(K, {1, 2, 3, 4}, {2, 2});
}

TEST_P(SerDesContract, BoolAndStringAdvice) {
  auto Codec = codec();
  auto RoundTrip = [&](const TensorSpec &Spec, const TensorValue &Reply,
                       TensorValue &Got) {
    WireMessage M;
    ASSERT_OK(Codec->encodeAdvice(Spec, Reply, M));
    const std::string Bytes = M.flatten();
    MemoryByteSource In(Bytes);
    ASSERT_OK(Codec->decodeAdvice(In, Spec, SerDesLimits(), Got));
    EXPECT_TRUE(In.atEnd());
  };
  TensorValue Got;
  RoundTrip(TensorSpec::create<bool>("b", {2}), makeBool("b", {1, 0}), Got);
  EXPECT_EQ(bytesOf(Got), std::string("\x01\x00", 2));
  RoundTrip(TensorSpec::create<bool>("b", {3}), makeBool("b", {1, 0, 1}), Got);
  EXPECT_EQ(elements<uint8_t>(Got), (std::vector<uint8_t>{1, 0, 1}));

  const TensorSpec S("s", DType::String, {-1});
  for (const std::string &Text :
       {std::string("h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9D\x84\x9E"),
        std::string("")}) {
    RoundTrip(S, makeString("s", Text), Got);
    EXPECT_EQ(Got.asString(), Text);
    EXPECT_EQ(Got.spec().shape(), std::vector<int64_t>{int64_t(Text.size())});
  }
}

TEST_P(SerDesContract, DecodeAdviceReusesStorageAndResolvesShape) {
  auto Codec = codec();
  const TensorSpec Vec = TensorSpec::create<double>("v", {-1});
  std::vector<double> Big(1000);
  for (int I = 0; I < 1000; ++I)
    Big[size_t(I)] = I + 0.5;
  WireMessage M;
  ASSERT_OK(Codec->encodeAdvice(Vec, makeValue<double>("v", Big), M));
  ASSERT_OK(Codec->encodeAdvice(Vec, makeValue<double>("v", {1.5, 2.5}), M));
  const std::string Bytes = M.flatten();
  MemoryByteSource In(Bytes);
  TensorValue Out;
  ASSERT_OK(Codec->decodeAdvice(In, Vec, SerDesLimits(), Out));
  EXPECT_EQ(Out.elementCount(), 1000u);
  EXPECT_EQ(elements<double>(Out)[999], 999.5);
  EXPECT_EQ(Out.spec().shape(), std::vector<int64_t>{1000});
  const void *P = Out.data();
  ASSERT_OK(Codec->decodeAdvice(In, Vec, SerDesLimits(), Out));
  EXPECT_EQ(elements<double>(Out), (std::vector<double>{1.5, 2.5}));
  EXPECT_EQ(Out.spec().shape(), std::vector<int64_t>{2});
  EXPECT_EQ(Out.data(), P); // shrinking keeps the buffer

  const TensorSpec Rows = TensorSpec::create<float>("r", {-1, 2});
  M.clear();
  ASSERT_OK(Codec->encodeAdvice(Rows, makeValue<float>("r", {1, 2, 3, 4}), M));
  ASSERT_OK(Codec->encodeAdvice(Rows, makeValue<float>("r", {5, 6}), M));
  const std::string RowBytes = M.flatten();
  MemoryByteSource In2(RowBytes);
  TensorValue Got;
  ASSERT_OK(Codec->decodeAdvice(In2, Rows, SerDesLimits(), Got));
  EXPECT_EQ(Got.spec().shape(), (std::vector<int64_t>{2, 2}));
  const void *Q = Got.data();
  ASSERT_OK(Codec->decodeAdvice(In2, Rows, SerDesLimits(), Got));
  EXPECT_EQ(Got.spec().shape(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(elements<float>(Got), (std::vector<float>{5, 6}));
  EXPECT_EQ(Got.data(), Q);
}

INSTANTIATE_TEST_SUITE_P(Formats, SerDesContract,
                         ::testing::Values(SerDesKind::Bitstream,
                                           SerDesKind::Json),
                         [](const ::testing::TestParamInfo<SerDesKind> &I) {
                           return std::string(serdesKindName(I.param));
                         });

} // namespace
