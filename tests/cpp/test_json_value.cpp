//===- tests/cpp/test_json_value.cpp - support/: JSON reader/writer, UTF-8===//

#include "support/json.h"
#include "support/utf8.h"

#include "serdes_test_util.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace mlbridge;
using namespace mlbridge::json;
using mlbridge::support::isValidUtf8;

namespace {

Value parseOk(std::string_view Text) {
  Value V;
  Status S = parse(Text, V);
  EXPECT_TRUE(S.isOk()) << Text << " -> " << S.message();
  return V;
}

Status parseErr(std::string_view Text) {
  Value V;
  return parse(Text, V);
}

// ---- value tree -----------------------------------------------------------

TEST(JsonParse, Scalars) {
  EXPECT_TRUE(parseOk("null").isNull());
  EXPECT_TRUE(parseOk(" true ").boolean());
  EXPECT_FALSE(parseOk("false").boolean());
  EXPECT_EQ(parseOk("\"hi\"").string(), "hi");
  const Value N = parseOk("-12");
  ASSERT_TRUE(N.isNumber());
  EXPECT_TRUE(N.number().IsInteger);
  EXPECT_TRUE(N.number().HasInt64);
  EXPECT_FALSE(N.number().HasUInt64);
  EXPECT_EQ(N.number().Int, -12);
  EXPECT_EQ(N.number().Double, -12.0);
}

TEST(JsonParse, IntegersStayExact) {
  const Value Min = parseOk("-9223372036854775808");
  EXPECT_TRUE(Min.number().HasInt64);
  EXPECT_EQ(Min.number().Int, std::numeric_limits<int64_t>::min());
  const Value Max = parseOk("9223372036854775807");
  EXPECT_EQ(Max.number().Int, std::numeric_limits<int64_t>::max());
  EXPECT_TRUE(Max.number().HasUInt64);
  const Value UMax = parseOk("18446744073709551615");
  EXPECT_FALSE(UMax.number().HasInt64);
  EXPECT_TRUE(UMax.number().HasUInt64);
  EXPECT_EQ(UMax.number().UInt, std::numeric_limits<uint64_t>::max());
  const Value Big = parseOk("18446744073709551616");
  EXPECT_TRUE(Big.number().IsInteger);
  EXPECT_FALSE(Big.number().HasInt64);
  EXPECT_FALSE(Big.number().HasUInt64);
  EXPECT_EQ(Big.number().Double, 18446744073709551616.0);
  const Value TooNeg = parseOk("-9223372036854775809");
  EXPECT_FALSE(TooNeg.number().HasInt64);
  EXPECT_FALSE(TooNeg.number().HasUInt64);
  EXPECT_TRUE(parseOk("-0").number().HasInt64);
}

TEST(JsonParse, FloatTokensAreNotIntegers) {
  for (const char *T : {"2.0", "1e3", "1E+3", "-0.5e-2", "0.0"}) {
    const Value V = parseOk(T);
    EXPECT_FALSE(V.number().IsInteger) << T;
    EXPECT_FALSE(V.number().HasInt64) << T;
  }
  EXPECT_EQ(parseOk("1e3").number().Double, 1000.0);
  EXPECT_EQ(parseOk("-0.5e-2").number().Double, -0.005);
  EXPECT_EQ(parseOk("1e400").number().Double,
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(parseOk("-1e400").number().Double,
            -std::numeric_limits<double>::infinity());
  const double Tiny = parseOk("-1e-400").number().Double;
  EXPECT_EQ(Tiny, 0.0);
  EXPECT_TRUE(std::signbit(Tiny));
}

TEST(JsonParse, NonFiniteTokens) {
  EXPECT_TRUE(std::isnan(parseOk("NaN").number().Double));
  EXPECT_EQ(parseOk("Infinity").number().Double, HUGE_VAL);
  EXPECT_EQ(parseOk("-Infinity").number().Double, -HUGE_VAL);
  EXPECT_FALSE(parseOk("NaN").number().IsInteger);
  EXPECT_EQ(parseErr("nan").code(), ErrorCode::Malformed);
  EXPECT_EQ(parseErr("Inf").code(), ErrorCode::Malformed);
  EXPECT_EQ(parseErr("+1").code(), ErrorCode::Malformed);
}

TEST(JsonParse, Containers) {
  const Value V = parseOk(R"( {"a":[1,2.5,"x",null,{"b":false}],"c":{}} )");
  ASSERT_TRUE(V.isObject());
  ASSERT_EQ(V.keys().size(), 2u);
  EXPECT_EQ(V.keys()[0], "a");
  const Value *A = V.find("a");
  ASSERT_NE(A, nullptr);
  ASSERT_TRUE(A->isArray());
  ASSERT_EQ(A->items().size(), 5u);
  EXPECT_EQ(A->items()[1].number().Double, 2.5);
  EXPECT_EQ(A->items()[2].string(), "x");
  EXPECT_TRUE(A->items()[3].isNull());
  EXPECT_FALSE(A->items()[4].find("b")->boolean());
  EXPECT_TRUE(V.find("c")->isObject());
  EXPECT_EQ(V.find("zzz"), nullptr);
  EXPECT_TRUE(parseOk("[]").items().empty());
}

TEST(JsonParse, StringEscapesAndUnicode) {
  EXPECT_EQ(parseOk(R"("a\"b\\c\/d\b\f\n\r\t")").string(),
            "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(parseOk(R"("\u00e9\u00E9")").string(), "\xC3\xA9\xC3\xA9");
  EXPECT_EQ(parseOk(R"("\u2713")").string(), "\xE2\x9C\x93");
  EXPECT_EQ(parseOk(R"("\ud834\udd1e")").string(), "\xF0\x9D\x84\x9E"); // 𝄞
  EXPECT_EQ(parseOk(R"("\u0000")").string(), std::string(1, '\0'));
  // Raw UTF-8 passes through.
  EXPECT_EQ(parseOk("\"h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9D\x84\x9E\"").string(),
            "h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9D\x84\x9E");
}

TEST(JsonParse, StringErrors) {
  EXPECT_STATUS(parseErr(R"("\udd1e")"), ErrorCode::Malformed,
                "unpaired low surrogate");
  EXPECT_STATUS(parseErr(R"("\ud834")"), ErrorCode::Malformed,
                "unpaired high surrogate");
  EXPECT_STATUS(parseErr(R"("\ud834\u0041")"), ErrorCode::Malformed,
                "unpaired high surrogate");
  EXPECT_STATUS(parseErr(R"("\u12G4")"), ErrorCode::Malformed,
                "four hex digits");
  EXPECT_STATUS(parseErr(R"("\x")"), ErrorCode::Malformed,
                "invalid escape '\\x'");
  EXPECT_STATUS(parseErr("\"abc"), ErrorCode::Malformed, "unterminated string");
  EXPECT_STATUS(parseErr("\"a\nb\""), ErrorCode::Malformed,
                "control character 0x0a");
  // Invalid UTF-8: stray continuation, overlong, surrogate, > U+10FFFF,
  // truncated sequence, bytes that never occur.
  for (const char *Bad : {"\"\x80\"", "\"\xC0\x80\"", "\"\xE0\x80\x80\"",
                          "\"\xED\xA0\x80\"", "\"\xF4\x90\x80\x80\"",
                          "\"\xE2\x9C\"", "\"\xFF\""}) {
    EXPECT_STATUS(parseErr(Bad), ErrorCode::Malformed, "invalid UTF-8 byte");
  }
}

TEST(JsonParse, ErrorsCarryOffsetAndExpectation) {
  EXPECT_STATUS(parseErr(R"({"a":1,})"), ErrorCode::Malformed,
                "at offset 7: expected a string key after ','");
  EXPECT_STATUS(parseErr("[1 2]"), ErrorCode::Malformed,
                "at offset 3: expected ',' or ']' after an array element, got '2'");
  EXPECT_STATUS(parseErr(R"({"a" 1})"), ErrorCode::Malformed,
                "expected ':' after an object key, got '1'");
  EXPECT_STATUS(parseErr("[1,]"), ErrorCode::Malformed,
                "at offset 3: expected a value, got ']'");
  EXPECT_STATUS(parseErr("01"), ErrorCode::Malformed, "leading zeros");
  EXPECT_STATUS(parseErr("1."), ErrorCode::Malformed, "a digit after '.'");
  EXPECT_STATUS(parseErr("1e"), ErrorCode::Malformed, "a digit in the exponent");
  EXPECT_STATUS(parseErr("-"), ErrorCode::Malformed, "expected a digit");
  EXPECT_STATUS(parseErr("tru"), ErrorCode::Malformed, "expected true or false");
  EXPECT_STATUS(parseErr(""), ErrorCode::Malformed, "got end of input");
  EXPECT_STATUS(parseErr("1 2"), ErrorCode::Malformed,
                "at offset 2: expected end of input, got '2'");
  EXPECT_STATUS(parseErr(std::string("[\x01]")), ErrorCode::Malformed,
                "got byte 0x01");
  EXPECT_STATUS(parseErr(R"({"k":1,"k":2})"), ErrorCode::Malformed,
                "duplicate key \"k\"");
}

TEST(JsonParse, DepthLimit) {
  std::string Ok(64, '['), Deep(65, '[');
  Ok += std::string(64, ']');
  Deep += std::string(65, ']');
  parseOk(Ok);
  EXPECT_STATUS(parseErr(Deep), ErrorCode::Malformed, "nesting deeper than 64");
  // The reader's skip path is bounded too.
  Reader R(Deep);
  EXPECT_STATUS(R.skipValue(), ErrorCode::Malformed, "nesting deeper");
  // A custom limit.
  Value V;
  EXPECT_STATUS(parse("[[[1]]]", V, 2), ErrorCode::Malformed,
                "nesting deeper than 2");
}

TEST(JsonParse, ManyDuplicateKeysAreFast) {
  std::string Big = "{";
  for (int I = 0; I < 20000; ++I)
    Big += "\"k" + std::to_string(I) + "\":0,";
  Big += "\"k7\":1}";
  EXPECT_STATUS(parseErr(Big), ErrorCode::Malformed, "duplicate key \"k7\"");
}

// ---- reader ----------------------------------------------------------------

TEST(JsonReader, IteratesNestedContainers) {
  Reader R(R"({"a":{"b":[1,[2,3]],"c":"x"},"d":4})");
  ASSERT_OK(R.beginObject());
  bool First = true, Has = false;
  std::string Key;
  std::vector<std::string> Keys;
  for (;;) {
    ASSERT_OK(R.nextMember(First, Has, Key));
    if (!Has)
      break;
    Keys.push_back(Key);
    if (Key == "a") {
      ASSERT_OK(R.beginObject());
      bool F2 = true, H2 = false;
      std::string K2;
      ASSERT_OK(R.nextMember(F2, H2, K2));
      ASSERT_TRUE(H2);
      EXPECT_EQ(K2, "b");
      EXPECT_EQ(R.describeAhead(), "array");
      ASSERT_OK(R.skipValue());
      ASSERT_OK(R.nextMember(F2, H2, K2));
      EXPECT_EQ(K2, "c");
      EXPECT_EQ(R.describeAhead(), "string");
      ASSERT_OK(R.skipValue());
      ASSERT_OK(R.nextMember(F2, H2, K2));
      EXPECT_FALSE(H2);
    } else {
      NumberToken Tok;
      EXPECT_EQ(R.describeAhead(), "integer token 4");
      ASSERT_OK(R.readNumber(Tok));
      EXPECT_EQ(Tok.Text, "4");
      EXPECT_EQ(Tok.Kind, NumberToken::Form::Integer);
    }
  }
  EXPECT_EQ(Keys, (std::vector<std::string>{"a", "d"}));
  ASSERT_OK(R.finish());
}

TEST(JsonReader, DescribeAheadDoesNotConsume) {
  Reader R("  2.5");
  EXPECT_EQ(R.describeAhead(), "float token 2.5");
  EXPECT_EQ(R.describeAhead(), "float token 2.5");
  NumberToken Tok;
  ASSERT_OK(R.readNumber(Tok));
  EXPECT_EQ(Tok.Kind, NumberToken::Form::Decimal);
  EXPECT_EQ(R.describeAhead(), "end of input");
  Reader N("-Infinity");
  EXPECT_EQ(N.describeAhead(), "-Infinity");
  Reader T("true");
  EXPECT_EQ(T.describeAhead(), "true");
  Reader O("{}");
  EXPECT_EQ(O.describeAhead(), "object");
}

// ---- numbers -----------------------------------------------------------------

TEST(JsonNumbers, TokenToFloatEdges) {
  float F = 0;
  EXPECT_TRUE(tokenToFloat("0.1", F));
  EXPECT_EQ(F, 0.1f);
  // Between FLT_MAX (3.40282347e38) and the rounding midpoint to 2^128
  // (3.40282357e38): rounds to FLT_MAX, whatever from_chars<float> says.
  EXPECT_TRUE(tokenToFloat("3.40282355e38", F));
  EXPECT_EQ(F, FLT_MAX);
  EXPECT_TRUE(tokenToFloat("-3.40282350e38", F));
  EXPECT_EQ(F, -FLT_MAX);
  EXPECT_FALSE(tokenToFloat("3.4028236e38", F)); // above the midpoint
  EXPECT_FALSE(tokenToFloat("3.5e38", F));
  EXPECT_FALSE(tokenToFloat("1e39", F));
  EXPECT_TRUE(tokenToFloat("1e-40", F)); // subnormal
  EXPECT_GT(F, 0.0f);
  EXPECT_LT(F, FLT_MIN);
  EXPECT_TRUE(tokenToFloat("-1e-50", F));
  EXPECT_EQ(F, 0.0f);
  EXPECT_TRUE(std::signbit(F));
  EXPECT_TRUE(tokenToFloat("16777217", F)); // integer token, rounded
  EXPECT_EQ(F, 16777216.0f);
  double D = 0;
  EXPECT_TRUE(tokenToDouble("4.9e-324", D));
  EXPECT_EQ(D, std::numeric_limits<double>::denorm_min());
  EXPECT_TRUE(tokenToDouble("1e-400", D));
  EXPECT_EQ(D, 0.0);
  EXPECT_FALSE(tokenToDouble("1.8e308", D));
  EXPECT_FALSE(tokenToDouble("123456789e302", D));
  EXPECT_TRUE(tokenToDouble("123456789e299", D));
  EXPECT_EQ(D, 1.23456789e307);
  EXPECT_TRUE(tokenToDouble("0.00000000001e-320", D));
  EXPECT_EQ(D, 0.0);
}

// ---- writers -----------------------------------------------------------------

std::string dbl(double V) {
  std::string S;
  appendDouble(S, V);
  return S;
}
std::string flt(float V) {
  std::string S;
  appendFloat(S, V);
  return S;
}

TEST(JsonWrite, FloatingPointTokens) {
  EXPECT_EQ(dbl(1.0), "1.0");
  EXPECT_EQ(dbl(0.1), "0.1");
  EXPECT_EQ(dbl(-0.0), "-0.0");
  EXPECT_EQ(dbl(100.0), "100.0");
  EXPECT_EQ(dbl(1e20), "1e+20");
  EXPECT_EQ(dbl(2.5e-7), "2.5e-07");
  EXPECT_EQ(dbl(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(dbl(-std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(dbl(HUGE_VAL), "Infinity");
  EXPECT_EQ(dbl(-HUGE_VAL), "-Infinity");
  EXPECT_EQ(dbl(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(flt(0.1f), "0.1");
  EXPECT_EQ(flt(1.0f), "1.0");
  EXPECT_EQ(flt(16777216.0f), "16777216.0");
  EXPECT_EQ(flt(FLT_MAX), "3.4028235e+38");
  EXPECT_EQ(flt(-std::numeric_limits<float>::infinity()), "-Infinity");
}

TEST(JsonWrite, ShortestRoundTripIsBitExact) {
  std::mt19937_64 Rng(42);
  for (int I = 0; I < 20000; ++I) {
    const uint64_t Bits = Rng();
    double D;
    std::memcpy(&D, &Bits, 8);
    if (!std::isfinite(D))
      continue;
    const std::string T = dbl(D);
    ASSERT_TRUE(T.find('.') != std::string::npos ||
                T.find('e') != std::string::npos)
        << T;
    double Back;
    ASSERT_TRUE(tokenToDouble(T, Back)) << T;
    ASSERT_EQ(std::memcmp(&Back, &D, 8), 0) << T;
    ASSERT_LE(T.size(), kMaxNumberChars);

    const uint32_t FBits = uint32_t(Bits >> 32);
    float F;
    std::memcpy(&F, &FBits, 4);
    if (!std::isfinite(F))
      continue;
    const std::string TF = flt(F);
    float FBack;
    ASSERT_TRUE(tokenToFloat(TF, FBack)) << TF;
    ASSERT_EQ(std::memcmp(&FBack, &F, 4), 0) << TF;
    ASSERT_LE(TF.size(), 24u);
  }
}

TEST(JsonWrite, Integers) {
  std::string S;
  appendInteger(S, std::numeric_limits<int64_t>::min());
  S += ' ';
  appendInteger(S, std::numeric_limits<uint64_t>::max());
  S += ' ';
  appendInteger(S, int8_t(-128));
  EXPECT_EQ(S, "-9223372036854775808 18446744073709551615 -128");
}

TEST(JsonWrite, QuotedMatchesLLVM) {
  std::string S;
  appendQuoted(S, std::string("q\"b\\t\tn\nr\rb\bf\f") + '\0' + "\x7f\xC3\xA9");
  EXPECT_EQ(S, std::string("\"q\\\"b\\\\t\\tn\\nr\\rb\\u0008f\\u000c\\u0000") +
                   "\x7f\xC3\xA9\"");
  // And the reader decodes it back.
  Value V;
  ASSERT_OK(parse(S, V));
  EXPECT_EQ(V.string(),
            std::string("q\"b\\t\tn\nr\rb\bf\f") + '\0' + "\x7f\xC3\xA9");
}

TEST(JsonUtf8, Validation) {
  EXPECT_TRUE(isValidUtf8(""));
  EXPECT_TRUE(isValidUtf8("plain ascii text longer than eight bytes"));
  EXPECT_TRUE(isValidUtf8("h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9D\x84\x9E"));
  EXPECT_TRUE(isValidUtf8("\xF4\x8F\xBF\xBF")); // U+10FFFF
  size_t Off = 99;
  EXPECT_FALSE(isValidUtf8("abcdefghij\xC0\xAF", &Off)); // overlong '/'
  EXPECT_EQ(Off, 10u);
  EXPECT_FALSE(isValidUtf8("\xED\xBF\xBF", &Off)); // surrogate
  EXPECT_EQ(Off, 0u);
  EXPECT_FALSE(isValidUtf8("ok\xF0\x9D\x84", &Off)); // truncated
  EXPECT_EQ(Off, 2u);
  EXPECT_FALSE(isValidUtf8("\xF5\x80\x80\x80"));
}

} // namespace
