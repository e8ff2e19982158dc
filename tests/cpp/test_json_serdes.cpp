//===- tests/cpp/test_json_serdes.cpp - JSON SerDes -----------------------===//

#include "mlbridge/serdes.h"

#include "serdes_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace mlbridge;
using namespace mlbridge::testutil;

namespace {

/// Decodes one reply line for Spec.
Status decodeReply(const std::string &Line, const TensorSpec &Spec,
                   TensorValue &Out, SerDesLimits Limits = SerDesLimits()) {
  auto Codec = createSerDes(SerDesKind::Json);
  const std::string Bytes = Line + "\n";
  MemoryByteSource In(Bytes);
  Status S = Codec->decodeAdvice(In, Spec, Limits, Out);
  if (S.isOk()) {
    EXPECT_TRUE(In.atEnd());
  }
  return S;
}

template <typename T>
std::vector<T> replyValues(const std::string &Line, const TensorSpec &Spec) {
  TensorValue Out;
  const Status S = decodeReply(Line, Spec, Out);
  EXPECT_TRUE(S.isOk()) << Line << " -> " << S.message();
  return elements<T>(Out);
}

// ---- exact text -----------------------------------------------------------------

TEST(JsonSerDes, HeaderIsTheBitstreamHeaderLine) {
  auto Codec = createSerDes(SerDesKind::Json);
  TensorValue A = makeValue<int64_t>("a", {5});
  TensorValue B = makeValue<float>("b", {1, 2, 3, 4, 5, 6}, {2, 3});
  WireMessage M;
  Codec->encodeHeader({&A, &B}, TensorSpec::create<int64_t>("inlining_decision"), false, M);
  EXPECT_EQ(M.flatten(),
            R"({"features":[{"name":"a","type":"int64_t","port":0,"shape":[1]},)"
            R"({"name":"b","type":"float","port":0,"shape":[2,3]}],)"
            R"("advice":{"name":"inlining_decision","type":"int64_t","port":0,"shape":[1]}})"
            "\n");
  M.clear();
  Codec->encodeContext("f\n", M);
  EXPECT_EQ(M.flatten(), "{\"context\":\"f\\n\"}\n");
}

TEST(JsonSerDes, ObservationText) {
  auto Codec = createSerDes(SerDesKind::Json);
  std::vector<TensorValue> F;
  F.push_back(makeValue<int64_t>("a", {1}));
  F.push_back(makeValue<float>("b", {1.0f, 2.5f, 0.1f}));
  F.push_back(makeBool("c", {1}));
  F.push_back(makeBool("m", {0, 1}));
  F.push_back(makeValue<double>("d", {1e20, -0.0}, {1, 2}));
  F.push_back(makeString("s", "h\xC3\xA9\"\n"));
  F.push_back(makeValue<uint8_t>("u", {255}));
  F.push_back(makeValue<int8_t>("i", {-128, 7}));
  F.push_back(makeValue<float>(
      "nf", {std::numeric_limits<float>::quiet_NaN(),
             std::numeric_limits<float>::infinity(),
             -std::numeric_limits<float>::infinity()}));
  F.push_back(makeValue<int32_t>("e", {}));
  WireMessage M;
  ASSERT_OK(Codec->encodeObservation(7, pointers(F), M));
  EXPECT_EQ(M.flatten(),
            "{\"observation\":7,\"features\":{\"a\":1,\"b\":[1.0,2.5,0.1],"
            "\"c\":true,\"m\":[false,true],\"d\":[1e+20,-0.0],"
            "\"s\":\"h\xC3\xA9\\\"\\n\",\"u\":255,\"i\":[-128,7],"
            "\"nf\":[NaN,Infinity,-Infinity],\"e\":[]}}\n");
}

TEST(JsonSerDes, AdviceText) {
  auto Codec = createSerDes(SerDesKind::Json);
  WireMessage M;
  ASSERT_OK(Codec->encodeAdvice(TensorSpec::create<int64_t>("d"),
                                makeValue<int64_t>("d", {INT64_MIN}), M));
  EXPECT_EQ(M.flatten(), "{\"advice\":-9223372036854775808}\n");
  M.clear();
  // A dynamic advice is always an array, even with one element.
  ASSERT_OK(Codec->encodeAdvice(TensorSpec::create<float>("d", {-1}),
                                makeValue<float>("d", {3.0f}), M));
  EXPECT_EQ(M.flatten(), "{\"advice\":[3.0]}\n");
  M.clear();
  ASSERT_OK(Codec->encodeAdvice(TensorSpec::create<float>("d", {-1}),
                                makeValue<float>("d", {}), M));
  EXPECT_EQ(M.flatten(), "{\"advice\":[]}\n");
}

// ---- round trips -------------------------------------------------------------------

TEST(JsonSerDes, NonFiniteValuesRoundTrip) {
  auto Codec = createSerDes(SerDesKind::Json);
  std::vector<TensorValue> F;
  F.push_back(makeValue<float>("f", {std::numeric_limits<float>::quiet_NaN(),
                                     floatFromBits(0xffc00001),
                                     std::numeric_limits<float>::infinity(),
                                     -std::numeric_limits<float>::infinity()}));
  F.push_back(makeValue<double>("d", {-std::numeric_limits<double>::quiet_NaN(),
                                      -std::numeric_limits<double>::infinity()}));
  WireMessage M;
  Codec->encodeHeader(pointers(F), TensorSpec::create<int64_t>("a"), false, M);
  ASSERT_OK(Codec->encodeObservation(0, pointers(F), M));
  const std::string Bytes = M.flatten();
  ModelSide Model(SerDesKind::Json);
  MemoryByteSource In(Bytes);
  ASSERT_OK(Model.next(In));
  ASSERT_OK(Model.next(In));
  const std::vector<float> Fl = elements<float>(Model.Msg.Features[0]);
  EXPECT_TRUE(std::isnan(Fl[0]));
  EXPECT_TRUE(std::isnan(Fl[1]));
  EXPECT_TRUE(std::isinf(Fl[2]) && !std::signbit(Fl[2]));
  EXPECT_TRUE(std::isinf(Fl[3]) && std::signbit(Fl[3]));
  const std::vector<double> D = elements<double>(Model.Msg.Features[1]);
  EXPECT_TRUE(std::isnan(D[0]));
  EXPECT_TRUE(std::isinf(D[1]) && std::signbit(D[1]));
}

TEST(JsonSerDes, BoolAndStringAdvice) {
  auto Codec = createSerDes(SerDesKind::Json);
  WireMessage M;
  ASSERT_OK(Codec->encodeAdvice(TensorSpec::create<bool>("b", {3}),
                                makeBool("b", {1, 0, 1}), M));
  EXPECT_EQ(M.flatten(), "{\"advice\":[true,false,true]}\n");
  EXPECT_EQ(replyValues<uint8_t>("{\"advice\":[true,false,true]}",
                                 TensorSpec::create<bool>("b", {3})),
            (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(replyValues<uint8_t>("{\"advice\":false}",
                                 TensorSpec::create<bool>("b")),
            (std::vector<uint8_t>{0}));

  const TensorSpec S("s", DType::String, {-1});
  const std::string Text = "h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9D\x84\x9E";
  M.clear();
  ASSERT_OK(Codec->encodeAdvice(S, makeString("s", Text), M));
  EXPECT_EQ(M.flatten(), "{\"advice\":\"" + Text + "\"}\n");
  TensorValue Got;
  ASSERT_OK(decodeReply("{\"advice\":\"" + Text + "\"}", S, Got));
  EXPECT_EQ(Got.asString(), Text);
  EXPECT_EQ(Got.spec().shape(), std::vector<int64_t>{int64_t(Text.size())});
  ASSERT_OK(decodeReply(R"({"advice":"\ud834\udd1e"})", S, Got));
  EXPECT_EQ(Got.asString(), "\xF0\x9D\x84\x9E");
  ASSERT_OK(decodeReply(R"({"advice":""})", S, Got));
  EXPECT_EQ(Got.asString(), "");
  EXPECT_EQ(Got.spec().shape(), std::vector<int64_t>{0});
}

// ---- lenient where the protocol says so -------------------------------------------------

TEST(JsonSerDes, AcceptedReplyForms) {
  const TensorSpec I = TensorSpec::create<int64_t>("d");
  EXPECT_EQ(replyValues<int64_t>(R"({"advice":[5]})", I),
            std::vector<int64_t>{5}); // one-element array for [1]
  EXPECT_EQ(replyValues<int64_t>(R"( { "other" : {"x":[1,"y"]}, "advice" : -0 } )", I),
            std::vector<int64_t>{0});
  EXPECT_EQ(replyValues<uint64_t>(R"({"advice":-0})",
                                  TensorSpec::create<uint64_t>("u")),
            std::vector<uint64_t>{0});
  EXPECT_EQ(replyValues<uint64_t>(R"({"advice":18446744073709551615})",
                                  TensorSpec::create<uint64_t>("u")),
            std::vector<uint64_t>{UINT64_MAX});
  // Float dtypes accept integer tokens, exponents and the non-finite tokens.
  EXPECT_EQ(replyValues<float>(R"({"advice":[1,2e0,-3.5,1E2]})",
                               TensorSpec::create<float>("f", {4})),
            (std::vector<float>{1, 2, -3.5, 100}));
  const std::vector<double> NF = replyValues<double>(
      R"({"advice":[NaN,Infinity,-Infinity]})",
      TensorSpec::create<double>("f", {-1}));
  ASSERT_EQ(NF.size(), 3u);
  EXPECT_TRUE(std::isnan(NF[0]));
  EXPECT_EQ(NF[1], HUGE_VAL);
  EXPECT_EQ(NF[2], -HUGE_VAL);
  // Python's repr of a float32 value widened to double rounds back exactly.
  EXPECT_EQ(replyValues<float>(R"({"advice":0.10000000149011612})",
                               TensorSpec::create<float>("f")),
            std::vector<float>{0.1f});
  // Underflow becomes zero rather than an error.
  EXPECT_EQ(replyValues<float>(R"({"advice":1e-60})",
                               TensorSpec::create<float>("f")),
            std::vector<float>{0.0f});
}

// ---- strict typing and errors ------------------------------------------------------

struct BadReply {
  const char *Line;
  TensorSpec Spec;
  ErrorCode Code;
  const char *Fragment;
};

TEST(JsonSerDes, RejectsBadReplies) {
  const TensorSpec I64 = TensorSpec::create<int64_t>("x");
  const TensorSpec F32 = TensorSpec::create<float>("f");
  const TensorSpec Vec3 = TensorSpec::create<int64_t>("v", {3});
  const TensorSpec Dyn2 = TensorSpec::create<int32_t>("m", {-1, 2});
  const TensorSpec U8 = TensorSpec::create<uint8_t>("u");
  const TensorSpec B = TensorSpec::create<bool>("b");
  const TensorSpec Str = TensorSpec("s", DType::String, {-1});
  const BadReply Cases[] = {
      {R"({"advice":2.5})", I64, ErrorCode::TypeMismatch,
       "advice \"x\": expected int64_t, got float token 2.5"},
      {R"({"advice":2.0})", I64, ErrorCode::TypeMismatch, "got float token 2.0"},
      {R"({"advice":1e3})", I64, ErrorCode::TypeMismatch, "got float token 1e3"},
      {R"({"advice":true})", I64, ErrorCode::TypeMismatch,
       "expected int64_t, got true"},
      {R"({"advice":null})", I64, ErrorCode::TypeMismatch, "got null"},
      {R"({"advice":"3"})", I64, ErrorCode::TypeMismatch, "got string"},
      {R"({"advice":NaN})", I64, ErrorCode::TypeMismatch, "got NaN"},
      {R"({"advice":{}})", I64, ErrorCode::TypeMismatch, "got object"},
      {R"({"advice":9223372036854775808})", I64, ErrorCode::TypeMismatch,
       "integer token 9223372036854775808 is out of range for int64_t"},
      {R"({"advice":true})", F32, ErrorCode::TypeMismatch,
       "advice \"f\": expected float, got true"},
      {R"({"advice":"1.0"})", F32, ErrorCode::TypeMismatch,
       "expected float, got string"},
      {R"({"advice":1e39})", F32, ErrorCode::TypeMismatch,
       "float token 1e39 is out of range for float"},
      {R"({"advice":1e400})", TensorSpec::create<double>("d"),
       ErrorCode::TypeMismatch, "float token 1e400 is out of range for double"},
      {R"({"advice":1})", B, ErrorCode::TypeMismatch,
       "expected bool, got integer token 1"},
      {R"({"advice":256})", U8, ErrorCode::TypeMismatch,
       "integer token 256 is out of range for uint8_t"},
      {R"({"advice":-1})", U8, ErrorCode::TypeMismatch,
       "integer token -1 is out of range for uint8_t"},
      {R"({"advice":-129})", TensorSpec::create<int8_t>("i"),
       ErrorCode::TypeMismatch, "out of range for int8_t"},
      {R"({"advice":18446744073709551616})", TensorSpec::create<uint64_t>("u"),
       ErrorCode::TypeMismatch, "out of range for uint64_t"},
      {R"({"advice":[]})", I64, ErrorCode::TypeMismatch,
       "advice \"x\": expected 1 elements, got 0"},
      {R"({"advice":[1,2]})", Vec3, ErrorCode::TypeMismatch,
       "expected 3 elements, got 2"},
      {R"({"advice":[1,2,3,4,5]})", Vec3, ErrorCode::TypeMismatch,
       "expected 3 elements, got 5"},
      {R"({"advice":[1,"a",3]})", Vec3, ErrorCode::TypeMismatch,
       "advice \"v\": element 1: expected int64_t, got string"},
      {R"({"advice":[1,2.5,3]})", Vec3, ErrorCode::TypeMismatch,
       "element 1: expected int64_t, got float token 2.5"},
      {R"({"advice":[[1,2,3]]})", Vec3, ErrorCode::TypeMismatch,
       "element 0: expected int64_t, got array"},
      {R"({"advice":7})", Vec3, ErrorCode::TypeMismatch,
       "expected an array of 3 int64_t values, got integer token 7"},
      {R"({"advice":7})", Dyn2, ErrorCode::TypeMismatch,
       "expected an array of int32_t values"},
      {R"({"advice":[1,2,3]})", Dyn2, ErrorCode::TypeMismatch,
       "3 elements is not a multiple of 2"},
      {R"({"advice":5})", Str, ErrorCode::TypeMismatch,
       "expected string, got integer token 5"},
      {R"({"advice":"abc"})", TensorSpec("s", DType::String, {4}),
       ErrorCode::TypeMismatch, "expected a string of 4 bytes"},
      {"{\"advice\":\"\xC3\x28\"}", Str, ErrorCode::Malformed,
       "invalid UTF-8 byte 0xc3"},
      {R"({"advice":"\udc00"})", Str, ErrorCode::Malformed,
       "unpaired low surrogate"},
      {R"({"result":1})", I64, ErrorCode::Malformed, "no \"advice\" key"},
      {R"({})", I64, ErrorCode::Malformed, "no \"advice\" key"},
      {R"({"advice":1,"advice":2})", I64, ErrorCode::Malformed,
       "duplicate key \"advice\""},
      {R"([1])", I64, ErrorCode::Malformed, "expected a JSON object"},
      {R"()", I64, ErrorCode::Malformed, "expected a JSON object"},
      {R"({"advice":1)", I64, ErrorCode::Malformed,
       "expected ',' or '}' after an object member, got end of input"},
      {R"({"advice":1} 2)", I64, ErrorCode::Malformed, "expected end of input"},
      {R"({"advice":[1,]})", Vec3, ErrorCode::Malformed, "expected a"},
      {R"({"advice":01})", I64, ErrorCode::Malformed, "leading zeros"},
      {R"({"error":42})", I64, ErrorCode::Malformed,
       "\"error\" must be a string, got integer token 42"},
      {R"({"error":"model exploded"})", I64, ErrorCode::Unavailable,
       "model reported an error: model exploded"},
      {R"({"advice":1,"error":"both"})", I64, ErrorCode::Unavailable,
       "model reported an error: both"},
  };
  for (const BadReply &C : Cases) {
    TensorValue Out;
    const Status S = decodeReply(C.Line, C.Spec, Out);
    EXPECT_EQ(S.code(), C.Code) << C.Line << " -> " << S.message();
    EXPECT_NE(S.message().find(C.Fragment), std::string::npos)
        << C.Line << " -> " << S.message();
  }
}

TEST(JsonSerDes, ReplyLimits) {
  const TensorSpec Dyn = TensorSpec::create<int32_t>("v", {-1});
  SerDesLimits Small;
  Small.MaxMessageBytes = 16; // four int32
  TensorValue Out;
  ASSERT_OK(decodeReply(R"({"advice":[1,2,3,4]})", Dyn, Out, Small));
  EXPECT_STATUS(decodeReply(R"({"advice":[1,2,3,4,5]})", Dyn, Out, Small),
                ErrorCode::TooLarge, "exceeds the message size limit of 16");
  EXPECT_STATUS(decodeReply(R"({"advice":"abcdefghijklmnopq"})",
                            TensorSpec("s", DType::String, {-1}), Out, Small),
                ErrorCode::TooLarge, "exceeds the message size limit");
  EXPECT_STATUS(decodeReply(R"({"advice":[1]})",
                            TensorSpec::create<int32_t>("v", {5}), Out, Small),
                ErrorCode::TooLarge, "exceeds the message size limit");
  SerDesLimits Line;
  Line.MaxHeaderBytes = 32;
  EXPECT_STATUS(decodeReply(R"({"advice":[1,2,3,4,5,6,7,8,9,10,11,12]})", Dyn,
                            Out, Line),
                ErrorCode::TooLarge, "longer than the limit of 32 bytes");
}

TEST(JsonSerDes, TruncatedReplyIsPeerClosed) {
  auto Codec = createSerDes(SerDesKind::Json);
  MemoryByteSource In("{\"advice\":1");
  TensorValue Out;
  EXPECT_STATUS(Codec->decodeAdvice(In, TensorSpec::create<int64_t>("x"),
                                    SerDesLimits(), Out),
                ErrorCode::PeerClosed, "without a terminating newline");
}

TEST(JsonSerDes, EncodeErrors) {
  auto Codec = createSerDes(SerDesKind::Json);
  WireMessage M;
  M.appendText("keep|");
  TensorValue Ok = makeValue<int32_t>("ok", {1});
  TensorValue Bad = makeString("s", "ab\xFF");
  EXPECT_STATUS(Codec->encodeObservation(0, {&Ok, &Bad}, M),
                ErrorCode::InvalidArgument,
                "feature \"s\": string is not valid UTF-8 (bad byte at offset 2)");
  EXPECT_EQ(M.flatten(), "keep|"); // nothing half-written
  EXPECT_STATUS(Codec->encodeAdvice(TensorSpec("s", DType::String, {-1}),
                                    makeString("s", "\xC0\x80"), M),
                ErrorCode::InvalidArgument, "not valid UTF-8");
  EXPECT_STATUS(Codec->encodeAdvice(TensorSpec::create<int64_t>("d"),
                                    makeValue<double>("d", {1}), M),
                ErrorCode::TypeMismatch, "expected int64_t, got a double value");
  EXPECT_STATUS(Codec->encodeAdvice(TensorSpec::create<int64_t>("d", {2}),
                                    makeValue<int64_t>("d", {1}), M),
                ErrorCode::TypeMismatch, "expected 2 elements, got 1");
  EXPECT_EQ(M.flatten(), "keep|");
}

// ---- model side errors ----------------------------------------------------------------

std::string jsonHeader() {
  auto Codec = createSerDes(SerDesKind::Json);
  TensorValue A = makeValue<int64_t>("a", {1});
  TensorValue B = makeValue<float>("b", {1, 2});
  TensorValue S = makeString("s", "abc");
  WireMessage M;
  Codec->encodeHeader({&A, &B, &S}, TensorSpec::create<int64_t>("d"), false, M);
  return M.flatten();
}

Status decodeAfterHeader(const std::string &Line, ModelSide &Model) {
  const std::string Bytes = jsonHeader() + Line + "\n";
  MemoryByteSource In(Bytes);
  if (Status S = Model.next(In))
    return S;
  return Model.next(In);
}

TEST(JsonSerDes, ModelSideAcceptsAnyFeatureOrder) {
  ModelSide Model(SerDesKind::Json);
  ASSERT_OK(decodeAfterHeader(
      R"({"features":{"s":"xyz","b":[3,4.5],"a":-7},"observation":4,"note":null})",
      Model));
  EXPECT_EQ(Model.Msg.Type, CompilerMessage::Kind::Observation);
  EXPECT_EQ(Model.Msg.ObservationIndex, 4);
  EXPECT_EQ(elements<int64_t>(Model.Msg.Features[0]), std::vector<int64_t>{-7});
  EXPECT_EQ(elements<float>(Model.Msg.Features[1]), (std::vector<float>{3, 4.5}));
  EXPECT_EQ(Model.Msg.Features[2].asString(), "xyz");
}

TEST(JsonSerDes, ModelSideErrors) {
  const struct {
    const char *Line;
    ErrorCode Code;
    const char *Fragment;
  } Cases[] = {
      {R"({"observation":0,"features":{"a":1,"b":[1,2]}})", ErrorCode::Malformed,
       "missing feature \"s\""},
      {R"({"observation":0,"features":{"a":1,"b":[1,2],"s":"abc","z":0}})",
       ErrorCode::Malformed, "unknown feature \"z\""},
      {R"({"observation":0,"features":{"a":1,"a":2}})", ErrorCode::Malformed,
       "duplicate feature \"a\""},
      {R"({"observation":0,"features":{"a":1.5,"b":[1,2],"s":"abc"}})",
       ErrorCode::TypeMismatch, "feature \"a\": expected int64_t, got float token 1.5"},
      {R"({"observation":0,"features":{"a":1,"b":[1,2,3],"s":"abc"}})",
       ErrorCode::TypeMismatch, "feature \"b\": expected 2 elements, got 3"},
      {R"({"observation":0,"features":{"a":1,"b":[1,true],"s":"abc"}})",
       ErrorCode::TypeMismatch, "feature \"b\": element 1: expected float, got true"},
      {R"({"observation":0,"features":{"a":1,"b":[1,2],"s":"abcd"}})",
       ErrorCode::TypeMismatch, "feature \"s\": expected a string of 3 bytes"},
      {R"({"observation":0})", ErrorCode::Malformed,
       "observation 0 has no \"features\" object"},
      {R"({"observation":0,"features":[]})", ErrorCode::Malformed,
       "mixes the keys"},
      {R"({"outcome":0})", ErrorCode::Malformed, "unexpected {\"outcome\":N}"},
      {R"({"observation":0,"features":{"a":1,"b":[1,2],"s":"abc"},"features":{}})",
       ErrorCode::Malformed, "duplicate key \"features\""},
  };
  for (const auto &C : Cases) {
    ModelSide Model(SerDesKind::Json);
    const Status S = decodeAfterHeader(C.Line, Model);
    EXPECT_EQ(S.code(), C.Code) << C.Line << " -> " << S.message();
    EXPECT_NE(S.message().find(C.Fragment), std::string::npos)
        << C.Line << " -> " << S.message();
  }
  // Before any header.
  ModelSide Fresh(SerDesKind::Json);
  MemoryByteSource In("{\"observation\":0,\"features\":{\"a\":1}}\n");
  EXPECT_STATUS(Fresh.next(In), ErrorCode::Malformed,
                "observation before any header");
  // A JSON line past the limit.
  ModelSide Small(SerDesKind::Json);
  Small.Limits.MaxHeaderBytes = 64;
  const std::string Header = jsonHeader();
  MemoryByteSource In2(Header);
  EXPECT_STATUS(Small.next(In2), ErrorCode::TooLarge,
                "longer than the limit of 64 bytes");
}

TEST(JsonSerDes, HeaderWithScoreIsAccepted) {
  ModelSide Model(SerDesKind::Json);
  MemoryByteSource In(
      R"({"features":[{"name":"a","type":"int64_t","shape":[1]}],)"
      R"("score":{"name":"r","type":"float","shape":[1]},)"
      R"("advice":{"name":"d","type":"int64_t","shape":[1]}})"
      "\n{\"observation\":0,\"features\":{\"a\":3}}\n");
  ASSERT_OK(Model.next(In));
  ASSERT_OK(Model.next(In));
  EXPECT_EQ(elements<int64_t>(Model.Msg.Features[0]), std::vector<int64_t>{3});
}

TEST(JsonSerDes, EmptyFeatureSetAndEmptyValues) {
  auto Codec = createSerDes(SerDesKind::Json);
  WireMessage M;
  Codec->encodeHeader({}, TensorSpec::create<int64_t>("d"), false, M);
  ASSERT_OK(Codec->encodeObservation(0, {}, M));
  EXPECT_EQ(M.flatten().substr(M.flatten().find("{\"observation")),
            "{\"observation\":0,\"features\":{}}\n");
  const std::string Bytes = M.flatten();
  ModelSide Model(SerDesKind::Json);
  MemoryByteSource In(Bytes);
  ASSERT_OK(Model.next(In));
  ASSERT_OK(Model.next(In));
  EXPECT_EQ(Model.Msg.Type, CompilerMessage::Kind::Observation);
  EXPECT_TRUE(Model.Msg.Features.empty());
}

} // namespace
