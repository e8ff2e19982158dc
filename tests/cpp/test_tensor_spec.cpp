//===- tests/cpp/test_tensor_spec.cpp - dtype and TensorSpec --------------===//

#include "mlbridge/dtype.h"
#include "mlbridge/tensor_spec.h"

#include "serdes_test_util.h"

#include <gtest/gtest.h>

using namespace mlbridge;

namespace {

TEST(DTypeList, CoversEveryDTypeInOrder) {
  int I = 0;
#define MLBRIDGE_CHECK(E, Ty, Name)                                            \
  EXPECT_EQ(static_cast<int>(DType::E), I++);                                  \
  EXPECT_EQ(dtypeName(DType::E), Name);                                        \
  EXPECT_EQ(dtypeSize(DType::E), sizeof(Ty));
  MLBRIDGE_DTYPES(MLBRIDGE_CHECK)
#undef MLBRIDGE_CHECK
  EXPECT_EQ(I, kNumDTypes);
}

TEST(DType, NamesAndSizesRoundTrip) {
  const struct {
    DType T;
    const char *Name;
    size_t Size;
  } Cases[] = {
      {DType::Float, "float", 4},       {DType::Double, "double", 8},
      {DType::Int8, "int8_t", 1},       {DType::Int16, "int16_t", 2},
      {DType::Int32, "int32_t", 4},     {DType::Int64, "int64_t", 8},
      {DType::UInt8, "uint8_t", 1},     {DType::UInt16, "uint16_t", 2},
      {DType::UInt32, "uint32_t", 4},   {DType::UInt64, "uint64_t", 8},
      {DType::Bool, "bool", 1},         {DType::String, "string", 1},
  };
  static_assert(sizeof(Cases) / sizeof(Cases[0]) == kNumDTypes);
  for (const auto &C : Cases) {
    EXPECT_EQ(dtypeName(C.T), C.Name);
    EXPECT_EQ(dtypeSize(C.T), C.Size);
    ASSERT_TRUE(dtypeFromName(C.Name).has_value()) << C.Name;
    EXPECT_EQ(*dtypeFromName(C.Name), C.T);
  }
  EXPECT_FALSE(dtypeFromName("int").has_value());
  EXPECT_FALSE(dtypeFromName("Float").has_value());
  EXPECT_FALSE(dtypeFromName("").has_value());
  EXPECT_FALSE(dtypeFromName("float ").has_value());
}

TEST(DType, DTypeOfMapsCppTypes) {
  EXPECT_EQ(DTypeOf<float>::value, DType::Float);
  EXPECT_EQ(DTypeOf<long long>::value, DType::Int64);
  EXPECT_EQ(DTypeOf<unsigned>::value, DType::UInt32);
  EXPECT_EQ(DTypeOf<signed char>::value, DType::Int8);
  EXPECT_EQ(DTypeOf<bool>::value, DType::Bool);
  EXPECT_TRUE(isIntegral(DType::UInt64));
  EXPECT_FALSE(isIntegral(DType::Bool));
  EXPECT_TRUE(isFloating(DType::Double));
}

TEST(TensorSpec, ToJSONIsLLVMsCompactForm) {
  EXPECT_EQ(TensorSpec::create<int64_t>("x").toJson(),
            R"({"name":"x","type":"int64_t","port":0,"shape":[1]})");
  EXPECT_EQ(TensorSpec::create<float>("b", {2, 3}).toJson(),
            R"({"name":"b","type":"float","port":0,"shape":[2,3]})");
  EXPECT_EQ(TensorSpec("s", DType::String, {-1}).toJson(),
            R"({"name":"s","type":"string","port":0,"shape":[-1]})");
  EXPECT_EQ(TensorSpec("p", DType::UInt8, {1, 33}, 2).toJson(),
            R"({"name":"p","type":"uint8_t","port":2,"shape":[1,33]})");
  std::string Out = "prefix:";
  TensorSpec::create<bool>("flag").appendJson(Out);
  EXPECT_EQ(Out, R"(prefix:{"name":"flag","type":"bool","port":0,"shape":[1]})");
}

TEST(TensorSpec, ToJSONEscapesNamesLikeLLVM) {
  // llvm::json: backslash before " and \, short escapes only for \t \n \r,
  // other control bytes as \u00xx (lower-case), everything else raw.
  const std::string Name = std::string("a\"b\\c\td\ne\rf\bg\fh") + '\x01' +
                           '\x1f' + "\x7f" + "h\xC3\xA9llo \xE2\x9C\x93";
  EXPECT_EQ(TensorSpec::create<float>(Name).toJson(),
            "{\"name\":\"a\\\"b\\\\c\\td\\ne\\rf\\u0008g\\u000ch\\u0001\\u001f"
            "\x7fh\xC3\xA9llo \xE2\x9C\x93\",\"type\":\"float\",\"port\":0,"
            "\"shape\":[1]}");
}

TEST(TensorSpec, ToJSONReplacesInvalidUtf8) {
  EXPECT_EQ(TensorSpec::create<float>("a\xFFz").toJson(),
            "{\"name\":\"a\xEF\xBF\xBDz\",\"type\":\"float\",\"port\":0,"
            "\"shape\":[1]}");
}

TEST(TensorSpec, FromJSONRoundTripsEveryDType) {
  for (int I = 0; I < kNumDTypes; ++I) {
    const TensorSpec Spec("feature_" + std::to_string(I), DType(I), {3, 4});
    Expected<TensorSpec> Back = TensorSpec::fromJson(Spec.toJson());
    ASSERT_TRUE(Back) << Back.status().message();
    EXPECT_EQ(*Back, Spec);
  }
  const TensorSpec Escaped("we\"ird\\ \xF0\x9D\x84\x9E\n", DType::Int8, {-1});
  Expected<TensorSpec> Back = TensorSpec::fromJson(Escaped.toJson());
  ASSERT_TRUE(Back) << Back.status().message();
  EXPECT_EQ(*Back, Escaped);
}

TEST(TensorSpec, FromJSONAcceptsAnyKeyOrderUnknownKeysAndNoPort) {
  Expected<TensorSpec> S = TensorSpec::fromJson(
      R"( { "shape" : [ 1 , 33 ], "extra": {"nested":[null,true]},
            "type":"int32_t", "name":"mask" } )");
  ASSERT_TRUE(S) << S.status().message();
  EXPECT_EQ(*S, TensorSpec::create<int32_t>("mask", {1, 33}));
  EXPECT_EQ(S->port(), 0);

  Expected<TensorSpec> P =
      TensorSpec::fromJson(R"({"port":3,"name":"q","type":"double","shape":[2]})");
  ASSERT_TRUE(P);
  EXPECT_EQ(P->port(), 3);
}

struct BadSpec {
  const char *Json;
  const char *Fragment;
};

TEST(TensorSpec, FromJSONRejectsBadSpecsNamingTheKey) {
  const BadSpec Cases[] = {
      {R"({"type":"float","shape":[1]})", "missing key \"name\""},
      {R"({"name":"x","shape":[1]})", "missing key \"type\""},
      {R"({"name":"x","type":"float"})", "missing key \"shape\""},
      {R"({"name":"","type":"float","shape":[1]})", "\"name\" is empty"},
      {R"({"name":7,"type":"float","shape":[1]})", "\"name\" must be a string"},
      {R"({"name":"x","type":"int128_t","shape":[1]})",
       "unknown \"type\" \"int128_t\""},
      {R"({"name":"x","type":3,"shape":[1]})", "\"type\" must be a string"},
      {R"({"name":"x","type":"float","shape":[0]})",
       "\"shape\"[0] must be > 0 or -1, got 0"},
      {R"({"name":"x","type":"float","shape":[2,-2]})",
       "\"shape\"[1] must be > 0 or -1, got -2"},
      {R"({"name":"x","type":"float","shape":[1.5]})",
       "\"shape\"[0] must be an integer, got number 1.5"},
      {R"({"name":"x","type":"float","shape":[2.0]})",
       "\"shape\"[0] must be an integer"},
      {R"({"name":"x","type":"float","shape":["3"]})",
       "\"shape\"[0] must be an integer, got string"},
      {R"({"name":"x","type":"float","shape":[99999999999999999999]})",
       "\"shape\"[0] is out of range"},
      {R"({"name":"x","type":"float","shape":[-1,-1]})",
       "more than one variable (-1) dimension"},
      {R"({"name":"x","type":"float","shape":3})",
       "\"shape\" must be an array of integers, got integer 3"},
      {R"({"name":"x","type":"float","shape":[1],"port":"0"})",
       "\"port\" must be an integer"},
      {R"({"name":"x","type":"float","shape":[1],"port":1.5})",
       "\"port\" must be an integer"},
      {R"([1,2])", "must be a JSON object, got array"},
      {R"({"name":"x","type":"float","shape":[1])", "expected ',' or '}'"},
      {R"({"name":"x","type":"float","shape":[1]} x)", "expected end of input"},
      {R"({"name":"x","name":"y","type":"float","shape":[1]})",
       "duplicate key \"name\""},
  };
  for (const BadSpec &C : Cases) {
    Expected<TensorSpec> S = TensorSpec::fromJson(C.Json);
    ASSERT_FALSE(S) << C.Json;
    EXPECT_EQ(S.status().code(), ErrorCode::Malformed) << C.Json;
    EXPECT_NE(S.status().message().find(C.Fragment), std::string::npos)
        << C.Json << " -> " << S.status().message();
  }
  // Errors after the name say which spec they are about.
  Expected<TensorSpec> S =
      TensorSpec::fromJson(R"({"name":"callee_users","type":"f","shape":[1]})");
  ASSERT_FALSE(S);
  EXPECT_NE(S.status().message().find("tensor spec \"callee_users\""),
            std::string::npos);
}

TEST(TensorSpec, ElementCountByteSizeAndDynamic) {
  const TensorSpec S = TensorSpec::create<double>("x", {2, 3, 4});
  EXPECT_EQ(S.elementCount(), 24u);
  EXPECT_EQ(S.byteSize(), 192u);
  EXPECT_FALSE(S.isDynamic());
  const TensorSpec D = TensorSpec::create<float>("v", {-1, 8});
  EXPECT_TRUE(D.isDynamic());
  EXPECT_EQ(D.elementCount(), 0u);
  EXPECT_EQ(D.byteSize(), 0u);
  EXPECT_EQ(TensorSpec::create<int8_t>("e", {}).elementCount(), 1u);
  // An overflowing shape must not wrap to a small size.
  const TensorSpec Huge =
      TensorSpec::create<double>("h", {int64_t(1) << 40, int64_t(1) << 40});
  EXPECT_GE(Huge.byteSize(), size_t(1) << 40);
}

TEST(TensorSpec, Validate) {
  EXPECT_TRUE(TensorSpec::create<float>("x", {1, 33}).validate(1 << 20).isOk());
  EXPECT_TRUE(TensorSpec::create<float>("x", {-1}).validate(16).isOk());
  EXPECT_STATUS(TensorSpec::create<float>("", {1}).validate(100),
                ErrorCode::InvalidArgument, "empty name");
  EXPECT_TRUE(TensorSpec::create<float>("x", {2, 0}).validate(100).isOk())
      << "empty tensors (an empty string or vector) are legitimate";
  EXPECT_STATUS(TensorSpec::create<float>("x", {-3}).validate(100),
                ErrorCode::InvalidArgument, "dimension 0 is -3");
  EXPECT_STATUS(TensorSpec::create<float>("x", {-1, -1}).validate(100),
                ErrorCode::InvalidArgument, "more than one variable");
  EXPECT_STATUS(TensorSpec::create<float>("x", {26}).validate(100),
                ErrorCode::TooLarge, "exceeds the size limit of 100 bytes");
  EXPECT_TRUE(TensorSpec::create<float>("x", {25}).validate(100).isOk());
  EXPECT_STATUS(TensorSpec::create<double>(
                    "x", {int64_t(1) << 40, int64_t(1) << 40, 1 << 20})
                    .validate(SIZE_MAX),
                ErrorCode::TooLarge, "exceeds the size limit");
  EXPECT_STATUS(TensorSpec::create<float>("bad\xC0\x80").validate(100),
                ErrorCode::InvalidArgument, "not valid UTF-8");
}

TEST(TensorSpec, Describe) {
  EXPECT_EQ(TensorSpec::create<float>("features", {1, 33}).describe(),
            "float[1,33] features");
  EXPECT_EQ(TensorSpec::create<int64_t>("advice", {-1}).describe(),
            "int64_t[-1] advice");
}

} // namespace
