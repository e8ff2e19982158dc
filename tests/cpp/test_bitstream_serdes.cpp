//===- tests/cpp/test_bitstream_serdes.cpp - Bitstream SerDes, byte I/O ---===//

#include "mlbridge/byte_stream.h"
#include "mlbridge/serdes.h"

#include "serdes_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace mlbridge;
using namespace mlbridge::testutil;

namespace {

// ---- WireMessage / MemoryByteSource ------------------------------------------

TEST(WireMessage, MergesOwnedTextAndBorrowsWithoutCopy) {
  WireMessage M;
  const std::string Payload = "PAYLOAD";
  M.appendText("ab");
  M.appendChar('c');
  M.appendBorrowed(Payload.data(), Payload.size());
  M.appendBorrowed(Payload.data(), 0); // ignored
  std::string &B = M.ownedBuffer();
  const size_t Start = B.size();
  B += "xyz";
  M.commitOwned(Start);
  std::vector<ByteRange> R;
  M.ranges(R);
  ASSERT_EQ(R.size(), 3u);
  EXPECT_EQ(std::string(static_cast<const char *>(R[0].Data), R[0].Size), "abc");
  EXPECT_EQ(R[1].Data, Payload.data()); // borrowed, not copied
  EXPECT_EQ(R[1].Size, Payload.size());
  EXPECT_EQ(std::string(static_cast<const char *>(R[2].Data), R[2].Size), "xyz");
  EXPECT_EQ(M.totalSize(), 13u);
  EXPECT_EQ(M.flatten(), "abcPAYLOADxyz");
  M.clear();
  EXPECT_EQ(M.totalSize(), 0u);
  EXPECT_EQ(M.flatten(), "");
  M.ranges(R);
  EXPECT_TRUE(R.empty());
}

TEST(WireMessage, OwnedSegmentsSurviveReallocation) {
  WireMessage M;
  M.appendText("first|");
  int X = 7;
  M.appendBorrowed(&X, sizeof X);
  M.appendText(std::string(100000, 'z')); // forces the owned buffer to grow
  const std::string Flat = M.flatten();
  EXPECT_EQ(Flat.substr(0, 6), "first|");
  EXPECT_EQ(Flat.size(), 6 + sizeof X + 100000);
}

TEST(MemoryByteSource, ReadExactAndEnd) {
  MemoryByteSource In("abcdef");
  char Buf[8] = {};
  ASSERT_OK(In.readExact(Buf, 4));
  EXPECT_EQ(std::string(Buf, 4), "abcd");
  EXPECT_EQ(In.position(), 4u);
  EXPECT_STATUS(In.readExact(Buf, 8), ErrorCode::PeerClosed,
                "unexpected end of stream: needed 8 bytes, have 2");
  ASSERT_OK(In.readExact(Buf, 2));
  EXPECT_TRUE(In.atEnd());
  ASSERT_OK(In.readExact(Buf, 0));
}

TEST(MemoryByteSource, ReadLineLimits) {
  MemoryByteSource In("hello\n\n0123456789\nrest");
  std::string Line;
  ASSERT_OK(In.readLine(Line, 5));
  EXPECT_EQ(Line, "hello");
  ASSERT_OK(In.readLine(Line, 0));
  EXPECT_EQ(Line, "");
  EXPECT_STATUS(In.readLine(Line, 9), ErrorCode::TooLarge,
                "longer than the limit of 9 bytes");
  MemoryByteSource In2("0123456789\nrest");
  ASSERT_OK(In2.readLine(Line, 10));
  EXPECT_EQ(Line, "0123456789");
  EXPECT_STATUS(In2.readLine(Line, 100), ErrorCode::PeerClosed,
                "4 bytes without a terminating newline");
  MemoryByteSource Empty("");
  EXPECT_STATUS(Empty.readLine(Line, 100), ErrorCode::PeerClosed,
                "end of stream");
  MemoryByteSource Unbounded("x\n");
  ASSERT_OK(Unbounded.readLine(Line, SIZE_MAX));
  EXPECT_EQ(Line, "x");
}

// ---- factory -------------------------------------------------------------------

TEST(SerDesFactory, KindsAndNames) {
  EXPECT_STREQ(serdesKindName(SerDesKind::Bitstream), "bitstream");
  EXPECT_STREQ(serdesKindName(SerDesKind::Json), "json");
  Expected<SerDesKind> K = serdesKindFromName("json");
  ASSERT_TRUE(K);
  EXPECT_EQ(*K, SerDesKind::Json);
  ASSERT_TRUE(serdesKindFromName("bitstream"));
  Expected<SerDesKind> Bad = serdesKindFromName("JSON");
  ASSERT_FALSE(Bad);
  EXPECT_STATUS(Bad.status(), ErrorCode::InvalidArgument,
                "unknown SerDes \"JSON\"");
  EXPECT_EQ(createSerDes(SerDesKind::Bitstream)->kind(), SerDesKind::Bitstream);
  EXPECT_EQ(createSerDes(SerDesKind::Json)->kind(), SerDesKind::Json);
}

// ---- exact bytes -----------------------------------------------------------------

const char *const kHeader =
    R"({"features":[{"name":"a","type":"int64_t","port":0,"shape":[1]},)"
    R"({"name":"b","type":"float","port":0,"shape":[2,3]}],)"
    R"("advice":{"name":"inlining_decision","type":"int64_t","port":0,"shape":[1]}})"
    "\n";

TEST(BitstreamSerDes, HeaderBytesAreLLVMs) {
  auto Codec = createSerDes(SerDesKind::Bitstream);
  TensorValue A = makeValue<int64_t>("a", {5});
  TensorValue B = makeValue<float>("b", {1, 2, 3, 4, 5, 6}, {2, 3});
  WireMessage M;
  Codec->encodeHeader({&A, &B}, TensorSpec::create<int64_t>("inlining_decision"), false, M);
  EXPECT_EQ(M.flatten(), kHeader);
}

TEST(BitstreamSerDes, ContextAndObservationBytes) {
  auto Codec = createSerDes(SerDesKind::Bitstream);
  WireMessage M;
  Codec->encodeContext("main\"fn", M);
  EXPECT_EQ(M.flatten(), "{\"context\":\"main\\\"fn\"}\n");

  M.clear();
  TensorValue A = makeValue<int64_t>("a", {0x0102030405060708});
  TensorValue B = makeValue<float>("b", {1, 2, 3, 4, 5, 6}, {2, 3});
  ASSERT_OK(Codec->encodeObservation(0, {&A, &B}, M));
  const std::string Expected =
      std::string("{\"observation\":0}\n") + bytesOf(A) + bytesOf(B) + "\n";
  EXPECT_EQ(M.flatten(), Expected);
  // Little-endian payload, exactly as LLVM writes it.
  EXPECT_EQ(M.flatten().substr(18, 8), std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));

  // The feature payloads are borrowed, never copied.
  std::vector<ByteRange> R;
  M.ranges(R);
  ASSERT_EQ(R.size(), 4u);
  EXPECT_EQ(R[1].Data, A.data());
  EXPECT_EQ(R[2].Data, B.data());
  EXPECT_EQ(R[2].Size, 24u);

  M.clear();
  ASSERT_OK(Codec->encodeObservation(12345, {&A}, M));
  EXPECT_EQ(M.flatten().substr(0, 22), "{\"observation\":12345}\n");
}

TEST(BitstreamSerDes, AdviceReplyIsRawPayload) {
  auto Codec = createSerDes(SerDesKind::Bitstream);
  const TensorSpec Spec = TensorSpec::create<int64_t>("inlining_decision");
  WireMessage M;
  ASSERT_OK(Codec->encodeAdvice(Spec, makeValue<int64_t>("x", {1}), M));
  EXPECT_EQ(M.flatten(), std::string("\x01\0\0\0\0\0\0\0", 8));

  M.clear();
  const TensorSpec Priority = TensorSpec::create<float>("priority");
  ASSERT_OK(Codec->encodeAdvice(Priority, makeValue<float>("p", {1.5f}), M));
  EXPECT_EQ(M.flatten(), rawBytes(std::vector<float>{1.5f}));

  // Dynamic: 8-byte LE count + payload.
  M.clear();
  const TensorSpec Dyn = TensorSpec::create<int16_t>("v", {-1});
  ASSERT_OK(Codec->encodeAdvice(Dyn, makeValue<int16_t>("v", {-2, 3, 4}), M));
  EXPECT_EQ(M.flatten(), std::string("\x03\0\0\0\0\0\0\0", 8) +
                             rawBytes(std::vector<int16_t>{-2, 3, 4}));
}

// ---- round trips -----------------------------------------------------------------

// Bitstream payloads are raw bytes: NaN payloads and signs survive both
// ways (the format-independent round trips: test_serdes_contract.cpp).
TEST(BitstreamSerDes, NonFiniteValuesRoundTripBitExact) {
  auto Codec = createSerDes(SerDesKind::Bitstream);
  std::vector<TensorValue> F;
  F.push_back(makeValue<float>(
      "f32", {0.1f, -0.0f, std::numeric_limits<float>::infinity(),
              -std::numeric_limits<float>::infinity(),
              floatFromBits(0x7fc00001), floatFromBits(0xffc00000),
              std::numeric_limits<float>::denorm_min(),
              std::numeric_limits<float>::max()}));
  F.push_back(makeValue<double>(
      "f64", {1e300, -2.5, std::numeric_limits<double>::quiet_NaN(),
              doubleFromBits(0x7ff0000000000001), // signalling NaN payload
              -std::numeric_limits<double>::infinity(),
              std::numeric_limits<double>::denorm_min()},
      {2, 3}));
  WireMessage M;
  Codec->encodeHeader(pointers(F), TensorSpec::create<int64_t>("a"), false, M);
  ASSERT_OK(Codec->encodeObservation(0, pointers(F), M));
  const std::string Bytes = M.flatten();
  ModelSide Model(SerDesKind::Bitstream);
  MemoryByteSource In(Bytes);
  ASSERT_OK(Model.next(In));
  ASSERT_OK(Model.next(In));
  for (size_t I = 0; I < F.size(); ++I)
    EXPECT_EQ(bytesOf(Model.Msg.Features[I]), bytesOf(F[I]))
        << F[I].spec().name();

  adviceRoundTrip<float>(SerDesKind::Bitstream,
                         {std::numeric_limits<float>::quiet_NaN()}, {1});
  adviceRoundTrip<float>(SerDesKind::Bitstream,
                         {-0.0f, std::numeric_limits<float>::infinity(),
                          floatFromBits(0xff800001)},
                         {3});
}

// Strings are UTF-8 on the wire (as the Python side checks): a reply or a
// feature with other bytes is malformed, not passed on.
TEST(BitstreamSerDes, InvalidUtf8StringsAreMalformedBothWays) {
  auto Codec = createSerDes(SerDesKind::Bitstream);
  const TensorSpec S("s", DType::String, {-1});
  const std::string Reply("\x02\0\0\0\0\0\0\0\xC3\x28", 10);
  MemoryByteSource In(Reply);
  TensorValue Got;
  Status E = Codec->decodeAdvice(In, S, SerDesLimits(), Got);
  EXPECT_EQ(E.code(), ErrorCode::Malformed) << E.toString();
  EXPECT_NE(E.message().find("not valid UTF-8"), std::string::npos);

  const std::string Stream =
      "{\"features\":[{\"name\":\"t\",\"type\":\"string\",\"port\":0,"
      "\"shape\":[2]}],\"advice\":{\"name\":\"a\",\"type\":\"int64_t\","
      "\"port\":0,\"shape\":[1]}}\n{\"observation\":0}\n\xC3\x28\n";
  MemoryByteSource Obs(Stream);
  std::vector<TensorSpec> Specs;
  TensorSpec Advice;
  CompilerMessage Msg;
  ASSERT_OK(Codec->decodeMessage(Obs, SerDesLimits(), Specs, Advice, Msg));
  E = Codec->decodeMessage(Obs, SerDesLimits(), Specs, Advice, Msg);
  EXPECT_EQ(E.code(), ErrorCode::Malformed) << E.toString();
}

TEST(BitstreamSerDes, SessionIdIsAnExtraHeaderKeyOnlyWhenGiven) {
  auto Codec = createSerDes(SerDesKind::Bitstream);
  TensorValue A = makeString("t", "x");
  WireMessage M;
  Codec->encodeHeader({&A}, TensorSpec::create<int64_t>("a"), false,
                      0x00ab000000000001ULL, M);
  const std::string Line = M.flatten();
  EXPECT_NE(Line.find(",\"session\":\"00ab000000000001\"}\n"),
            std::string::npos)
      << Line;
  MemoryByteSource In(Line);
  std::vector<TensorSpec> Specs;
  TensorSpec Advice;
  CompilerMessage Msg;
  ASSERT_OK(Codec->decodeMessage(In, SerDesLimits(), Specs, Advice, Msg));
  EXPECT_EQ(Msg.SessionId, 0x00ab000000000001ULL);
  M.clear();
  Codec->encodeHeader({&A}, TensorSpec::create<int64_t>("a"), false, M);
  EXPECT_EQ(M.flatten().find("session"), std::string::npos);
}

TEST(BitstreamSerDes, FeatureCountIsLimited) {
  auto Codec = createSerDes(SerDesKind::Bitstream);
  std::vector<TensorValue> F;
  for (int I = 0; I < 5; ++I)
    F.push_back(makeString("f" + std::to_string(I), "x"));
  WireMessage M;
  Codec->encodeHeader(pointers(F), TensorSpec::create<int64_t>("a"), false, M);
  const std::string Line = M.flatten();
  SerDesLimits L;
  L.MaxFeatures = 4;
  MemoryByteSource In(Line);
  std::vector<TensorSpec> Specs;
  TensorSpec Advice;
  CompilerMessage Msg;
  Status E = Codec->decodeMessage(In, L, Specs, Advice, Msg);
  EXPECT_EQ(E.code(), ErrorCode::TooLarge) << E.toString();
  L.MaxFeatures = 5;
  MemoryByteSource In2(Line);
  EXPECT_TRUE(Codec->decodeMessage(In2, L, Specs, Advice, Msg).isOk());
}

// ---- errors ------------------------------------------------------------------------

TEST(BitstreamSerDes, TruncatedAdviceIsPeerClosed) {
  auto Codec = createSerDes(SerDesKind::Bitstream);
  MemoryByteSource In(std::string_view("\x01\x02\x03", 3));
  TensorValue Got;
  EXPECT_STATUS(Codec->decodeAdvice(In, TensorSpec::create<int64_t>("d"),
                                    SerDesLimits(), Got),
                ErrorCode::PeerClosed, "needed 8 bytes, have 3");
  MemoryByteSource In2(std::string_view("\x02\0\0\0\0\0\0\0\x01\0\0\0", 12));
  EXPECT_STATUS(Codec->decodeAdvice(In2, TensorSpec::create<int32_t>("d", {-1}),
                                    SerDesLimits(), Got),
                ErrorCode::PeerClosed, "reading advice \"d\"");
}

TEST(BitstreamSerDes, OversizedDynamicCountIsRejectedBeforeAllocating) {
  auto Codec = createSerDes(SerDesKind::Bitstream);
  const uint64_t Huge = uint64_t(1) << 62;
  char LE[8];
  std::memcpy(LE, &Huge, 8);
  MemoryByteSource In(std::string_view(LE, 8));
  TensorValue Got;
  EXPECT_STATUS(Codec->decodeAdvice(In, TensorSpec::create<float>("v", {-1}),
                                    SerDesLimits(), Got),
                ErrorCode::TooLarge,
                "4611686018427387904 elements exceed the message size limit");
  EXPECT_EQ(Got.byteSize(), 0u);

  // count * size would overflow 64 bits: still TooLarge, not a wrap-around.
  const uint64_t Wrap = (uint64_t(1) << 61) + 1;
  std::memcpy(LE, &Wrap, 8);
  MemoryByteSource In2(std::string_view(LE, 8));
  EXPECT_STATUS(Codec->decodeAdvice(In2, TensorSpec::create<double>("v", {-1}),
                                    SerDesLimits(), Got),
                ErrorCode::TooLarge, "exceed the message size limit");

  // A small custom limit.
  SerDesLimits Small;
  Small.MaxMessageBytes = 16;
  const uint64_t Five = 5;
  std::memcpy(LE, &Five, 8);
  MemoryByteSource In3(std::string_view(LE, 8));
  EXPECT_STATUS(Codec->decodeAdvice(In3, TensorSpec::create<int32_t>("v", {-1}),
                                    Small, Got),
                ErrorCode::TooLarge, "5 elements exceed");
  // A fixed spec over the limit.
  MemoryByteSource In4("");
  EXPECT_STATUS(Codec->decodeAdvice(In4, TensorSpec::create<int32_t>("v", {5}),
                                    Small, Got),
                ErrorCode::TooLarge, "exceeds the message size limit of 16");
}

TEST(BitstreamSerDes, DynamicCountMustBeAMultipleOfFixedDims) {
  auto Codec = createSerDes(SerDesKind::Bitstream);
  const uint64_t Three = 3;
  std::string Bytes(reinterpret_cast<const char *>(&Three), 8);
  Bytes += std::string(12, '\0');
  MemoryByteSource In(Bytes);
  TensorValue Got;
  EXPECT_STATUS(Codec->decodeAdvice(In, TensorSpec::create<int32_t>("m", {-1, 2}),
                                    SerDesLimits(), Got),
                ErrorCode::Malformed, "element count 3 is not a multiple of 2");
}

TEST(BitstreamSerDes, BadBoolByteIsMalformed) {
  auto Codec = createSerDes(SerDesKind::Bitstream);
  MemoryByteSource In(std::string_view("\x01\x02", 2));
  TensorValue Got;
  EXPECT_STATUS(Codec->decodeAdvice(In, TensorSpec::create<bool>("b", {2}),
                                    SerDesLimits(), Got),
                ErrorCode::Malformed, "bool element 1 is byte 0x02");
}

TEST(BitstreamSerDes, EncodeAdviceChecksTypeAndCount) {
  auto Codec = createSerDes(SerDesKind::Bitstream);
  WireMessage M;
  EXPECT_STATUS(Codec->encodeAdvice(TensorSpec::create<int64_t>("d"),
                                    makeValue<float>("d", {1}), M),
                ErrorCode::TypeMismatch, "expected int64_t, got a float value");
  EXPECT_STATUS(Codec->encodeAdvice(TensorSpec::create<int64_t>("d"),
                                    makeValue<int64_t>("d", {1, 2}), M),
                ErrorCode::TypeMismatch, "expected 1 elements, got 2");
  EXPECT_STATUS(Codec->encodeAdvice(TensorSpec::create<int64_t>("d", {-1, 2}),
                                    makeValue<int64_t>("d", {1, 2, 3}), M),
                ErrorCode::TypeMismatch, "3 elements is not a multiple of 2");
  EXPECT_EQ(M.totalSize(), 0u);
}

TEST(BitstreamSerDes, EncodeObservationChecksBuffers) {
  auto Codec = createSerDes(SerDesKind::Bitstream);
  TensorValue V = makeValue<float>("v", {1, 2, 3});
  V.resizeBytes(8); // shape says 12 bytes
  WireMessage M;
  EXPECT_STATUS(Codec->encodeObservation(0, {&V}, M), ErrorCode::InvalidArgument,
                "buffer holds 8 bytes but its shape float[3] v needs 12");
  EXPECT_STATUS(Codec->encodeObservation(-1, {}, M), ErrorCode::InvalidArgument,
                "observation index must be >= 0");
  EXPECT_EQ(M.totalSize(), 0u);
}

std::string headerFor(const std::vector<TensorValue> &F, const TensorSpec &A) {
  auto Codec = createSerDes(SerDesKind::Bitstream);
  WireMessage M;
  Codec->encodeHeader(pointers(F), A, false, M);
  return M.flatten();
}

/// Decodes the header at the start of Stream (it must be valid), then
/// returns what decoding the next message says.
Status afterHeader(const std::string &Stream) {
  ModelSide Model(SerDesKind::Bitstream);
  MemoryByteSource In(Stream);
  const Status Header = Model.next(In);
  EXPECT_TRUE(Header.isOk()) << Header.toString();
  return Model.next(In);
}

TEST(BitstreamSerDes, MissingRecordNewlineIsMalformed) {
  std::vector<TensorValue> F;
  F.push_back(makeValue<int32_t>("a", {7}));
  const std::string Stream = headerFor(F, TensorSpec::create<int64_t>("d")) +
                             "{\"observation\":0}\n" + bytesOf(F[0]) + "X";
  EXPECT_STATUS(afterHeader(Stream), ErrorCode::Malformed,
                "observation 0: expected '\\n' after the payload, got 0x58");
}

TEST(BitstreamSerDes, TruncatedObservationIsPeerClosed) {
  std::vector<TensorValue> F;
  F.push_back(makeValue<int64_t>("a", {7}));
  const std::string Stream = headerFor(F, TensorSpec::create<int64_t>("d")) +
                             "{\"observation\":3}\n" +
                             std::string("\x07\0\0", 3);
  EXPECT_STATUS(afterHeader(Stream), ErrorCode::PeerClosed,
                "observation 3: reading feature \"a\": unexpected end of "
                "stream: needed 8 bytes");
  // No trailing newline at all.
  const std::string NoNewline = headerFor(F, TensorSpec::create<int64_t>("d")) +
                                "{\"observation\":0}\n" + bytesOf(F[0]);
  MemoryByteSource In2(NoNewline);
  ModelSide M2(SerDesKind::Bitstream);
  ASSERT_OK(M2.next(In2));
  EXPECT_STATUS(M2.next(In2), ErrorCode::PeerClosed, "needed 1 bytes, have 0");
}

TEST(BitstreamSerDes, HeaderLinePastTheLimitIsTooLarge) {
  std::vector<TensorValue> F;
  for (int I = 0; I < 100; ++I)
    F.push_back(makeValue<int64_t>("feature_" + std::to_string(I), {0}));
  const std::string Header = headerFor(F, TensorSpec::create<int64_t>("d"));
  ModelSide Model(SerDesKind::Bitstream);
  Model.Limits.MaxHeaderBytes = 1024;
  ASSERT_GT(Header.size(), 1024u);
  MemoryByteSource In(Header);
  EXPECT_STATUS(Model.next(In), ErrorCode::TooLarge,
                "longer than the limit of 1024 bytes");
}

TEST(BitstreamSerDes, HeaderSpecsBeyondTheMessageLimitAreTooLarge) {
  const struct {
    const char *Header;
    size_t MaxMessageBytes; // 0: the default limit
    const char *Fragment;
  } Cases[] = {
      {R"({"features":[{"name":"big","type":"double","port":0,"shape":[4611686018427387904,4]}],)"
       R"("advice":{"name":"d","type":"int64_t","port":0,"shape":[1]}})",
       0, "header: feature 0: tensor spec \"big\""},
      // Each feature fits, their sum does not.
      {R"({"features":[{"name":"a","type":"int64_t","port":0,"shape":[10]},)"
       R"({"name":"b","type":"int64_t","port":0,"shape":[10]}],)"
       R"("advice":{"name":"d","type":"int64_t","port":0,"shape":[1]}})",
       100, "the features total more than the message size limit of 100"},
      {R"({"features":[],"advice":{"name":"d","type":"int64_t","port":0,"shape":[-1,20]}})",
       100, "header: advice"},
  };
  for (const auto &C : Cases) {
    ModelSide Model(SerDesKind::Bitstream);
    if (C.MaxMessageBytes)
      Model.Limits.MaxMessageBytes = C.MaxMessageBytes;
    const std::string Line = std::string(C.Header) + "\n";
    MemoryByteSource In(Line);
    EXPECT_STATUS(Model.next(In), ErrorCode::TooLarge, C.Fragment);
  }
}

TEST(BitstreamSerDes, MalformedControlLines) {
  const struct {
    const char *Line;
    const char *Fragment;
  } Cases[] = {
      {"garbage\n", "expected a JSON object"},
      {"{\"observation\":0}\n", "observation 0 before any header"},
      {"{\"hello\":1}\n", "unrecognized message"},
      {"{\"observation\":-1}\n", "\"observation\" must be a non-negative"},
      {"{\"observation\":1.5}\n", "\"observation\" must be a non-negative 64-bit "
                                  "integer, got 1.5"},
      {"{\"context\":3}\n", "\"context\" must be a string, got integer token 3"},
      {"{\"context\":\"a\",\"observation\":0}\n", "mixes the keys"},
      {"{\"context\":\"a\",\"context\":\"b\"}\n", "duplicate key \"context\""},
      {"{\"features\":{\"a\":1},\"observation\":0}\n",
       "a \"features\" object (JSON format) in a bitstream session"},
      {"{\"features\":[{\"name\":\"a\",\"type\":\"float\",\"port\":0,"
       "\"shape\":[-1]}],\"advice\":{\"name\":\"d\",\"type\":\"float\","
       "\"shape\":[1]}}\n",
       "header: feature 0: tensor spec \"a\": \"shape\"[0] must be >= 0, got -1"},
      {"{\"features\":[],\"advice\":{\"name\":\"d\",\"type\":\"float\"}}\n",
       "header: advice: tensor spec \"d\": missing key \"shape\""},
      {"{\"features\":[1]}\n", "must be a JSON object, got integer 1"},
      {"{\"context\":\"\xFF\"}\n", "invalid UTF-8 byte 0xff"},
      {"{\"outcome\":0}\n", "the header declared no \"score\""},
  };
  for (const auto &C : Cases) {
    ModelSide Model(SerDesKind::Bitstream);
    MemoryByteSource In(C.Line);
    const Status S = Model.next(In);
    EXPECT_EQ(S.code(), ErrorCode::Malformed) << C.Line << " -> " << S.message();
    EXPECT_NE(S.message().find(C.Fragment), std::string::npos)
        << C.Line << " -> " << S.message();
  }
}

TEST(BitstreamSerDes, BadBoolFeatureByteIsMalformed) {
  const std::string Stream =
      headerFor({makeBool("m", {0, 0})}, TensorSpec::create<int64_t>("d")) +
      "{\"observation\":0}\n" + std::string("\x01\x07", 2) + "\n";
  EXPECT_STATUS(afterHeader(Stream), ErrorCode::Malformed,
                "feature \"m\": bool element 1 is byte 0x07");
}

TEST(BitstreamSerDes, NewHeaderMidStreamChangesShapes) {
  // Extension 1: a variable-length feature grows; the compiler re-announces.
  auto Codec = createSerDes(SerDesKind::Bitstream);
  const TensorSpec Advice = TensorSpec::create<int64_t>("d");
  std::vector<TensorValue> F1{makeValue<float>("v", {1, 2})};
  std::vector<TensorValue> F2{makeValue<float>("v", {3, 4, 5})};
  WireMessage M;
  Codec->encodeHeader(pointers(F1), Advice, false, M);
  ASSERT_OK(Codec->encodeObservation(0, pointers(F1), M));
  Codec->encodeHeader(pointers(F2), Advice, /*ContinuesSession=*/true, M);
  ASSERT_OK(Codec->encodeObservation(1, pointers(F2), M));
  const std::string Bytes = M.flatten();

  ModelSide Model(SerDesKind::Bitstream);
  MemoryByteSource In(Bytes);
  ASSERT_OK(Model.next(In));
  ASSERT_OK(Model.next(In));
  EXPECT_EQ(elements<float>(Model.Msg.Features[0]), (std::vector<float>{1, 2}));
  ASSERT_OK(Model.next(In));
  EXPECT_EQ(Model.Msg.Type, CompilerMessage::Kind::Header);
  EXPECT_TRUE(Model.Msg.ContinuesSession);
  EXPECT_NE(Bytes.find("[1]},\"continue\":true}\n"), std::string::npos)
      << "only the update header carries the key";
  EXPECT_EQ(Bytes.find("continue"), Bytes.rfind("continue"));
  ASSERT_OK(Model.next(In));
  EXPECT_EQ(elements<float>(Model.Msg.Features[0]),
            (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(Model.Msg.Features[0].spec().shape(), std::vector<int64_t>{3});
}

TEST(BitstreamSerDes, ReadsLLVMTrainingLogWithScoreAndNoAdvice) {
  // As LLVM's Logger writes a development-mode log: a "score" spec in the
  // header, no "advice", and an outcome record after each observation.
  const std::string Stream =
      std::string(R"({"features":[{"name":"f","type":"int64_t","port":0,"shape":[2]}],)"
                  R"("score":{"name":"reward","type":"float","port":0,"shape":[1]}})") +
      "\n{\"context\":\"foo\"}\n{\"observation\":0}\n" +
      rawBytes(std::vector<int64_t>{1, 2}) + "\n{\"outcome\":0}\n" +
      rawBytes(std::vector<float>{0.5f}) + "\n{\"observation\":1}\n" +
      rawBytes(std::vector<int64_t>{3, 4}) + "\n{\"outcome\":1}\n" +
      rawBytes(std::vector<float>{1.5f}) + "\n";
  ModelSide Model(SerDesKind::Bitstream);
  MemoryByteSource In(Stream);
  ASSERT_OK(Model.next(In));
  EXPECT_EQ(Model.Msg.Type, CompilerMessage::Kind::Header);
  EXPECT_TRUE(Model.Msg.AdviceSpec.name().empty());
  ASSERT_OK(Model.next(In));
  EXPECT_EQ(Model.Msg.Context, "foo");
  ASSERT_OK(Model.next(In));
  EXPECT_EQ(elements<int64_t>(Model.Msg.Features[0]),
            (std::vector<int64_t>{1, 2}));
  ASSERT_OK(Model.next(In));
  EXPECT_EQ(Model.Msg.ObservationIndex, 1);
  EXPECT_EQ(elements<int64_t>(Model.Msg.Features[0]),
            (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(In.atEnd());

  // A score header without the outcome record that should follow.
  const std::string Bad =
      Stream.substr(0, Stream.find("{\"outcome\":0}")) + "{\"observation\":1}\n";
  ModelSide M2(SerDesKind::Bitstream);
  MemoryByteSource In2(Bad);
  ASSERT_OK(M2.next(In2));
  ASSERT_OK(M2.next(In2));
  EXPECT_STATUS(M2.next(In2), ErrorCode::Malformed,
                "expected an {\"outcome\":N} record");
}

TEST(BitstreamSerDes, UnknownKeysAreIgnoredAndOrderIsFree) {
  const std::string Stream =
      R"({"advice":{"shape":[1],"type":"int64_t","name":"d"},"version":2,)"
      R"("features":[{"type":"uint8_t","shape":[3],"name":"u","extra":null}]})"
      "\n{\"x\":[1,{}],\"observation\":0}\n\x01\x02\x03\n";
  ModelSide Model(SerDesKind::Bitstream);
  MemoryByteSource In(Stream);
  ASSERT_OK(Model.next(In));
  EXPECT_EQ(Model.Specs[0], TensorSpec::create<uint8_t>("u", {3}));
  ASSERT_OK(Model.next(In));
  EXPECT_EQ(elements<uint8_t>(Model.Msg.Features[0]),
            (std::vector<uint8_t>{1, 2, 3}));
}

} // namespace
