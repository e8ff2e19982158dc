// ModelRunner's feature table, typed setters, advice checks and fallback,
// tested through a fault-injecting fake runner (no transport involved).
#include "fake_model_runner.h"
#include "mlbridge/model_runner.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

using namespace mlbridge;
using mlbridge::test::FakeModelRunner;

TEST(ModelRunner, DeclaredFeaturesAreWrittenInPlace) {
  FakeModelRunner R({TensorSpec::create<int64_t>("a"),
                     TensorSpec::create<float>("b", {2, 3})},
                    TensorSpec::create<int64_t>("decision"));
  ASSERT_TRUE(R.constructionStatus().isOk());
  ASSERT_NE(R.getTensor<int64_t>(0), nullptr);
  EXPECT_EQ(R.getTensor<float>(0), nullptr) << "wrong dtype must not alias";
  EXPECT_EQ(R.getTensor<int64_t>(7), nullptr);
  *R.getTensor<int64_t>(0) = 42;
  R.getTensor<float>(1)[5] = 2.5f;
  R.answer<int64_t>({1});
  Expected<int64_t> A = R.evaluate<int64_t>();
  ASSERT_TRUE(A) << A.status().toString();
  EXPECT_EQ(*A, 1);
  EXPECT_TRUE(R.LastChanged) << "first call announces the features";
  ASSERT_EQ(R.SentSpecs.size(), 2u);
  EXPECT_EQ(R.SentSpecs[1].shape(), (std::vector<int64_t>{2, 3}));
  ASSERT_TRUE(R.evaluate<int64_t>());
  EXPECT_FALSE(R.LastChanged) << "nothing changed since";
}

// LLVM's pattern: a runner hands the base its model's own input buffers,
// and features are written straight into them.
TEST(ModelRunner, RunnerSuppliedFeatureBuffersAreWrittenInPlace) {
  FakeModelRunner R({TensorSpec::create<int64_t>("a"),
                     TensorSpec::create<float>("b", {2, 3}),
                     TensorSpec::create<float>("v", {kDynamicDim})},
                    TensorSpec::create<int64_t>("decision"));
  *R.getTensor<int64_t>(0) = 7;
  int64_t A = 0;
  float B[6] = {};
  ASSERT_TRUE(R.useFeatureBuffer(0, &A).isOk());
  EXPECT_EQ(A, 7) << "the current value moves into the supplied buffer";
  ASSERT_TRUE(R.useFeatureBuffer(1, B).isOk());
  EXPECT_EQ(R.getTensor<int64_t>(0), &A);
  EXPECT_EQ(R.getTensor<float>(1), B);
  ASSERT_TRUE(R.setFeature("a", int64_t(9)).isOk());
  EXPECT_EQ(A, 9);
  R.getTensor<float>(1)[4] = 1.5f;
  EXPECT_EQ(B[4], 1.5f);
  ASSERT_TRUE(R.setFeature("v", std::vector<float>{1, 2}).isOk());
  R.answer<int64_t>({1});
  ASSERT_TRUE(R.evaluate<int64_t>());
  ASSERT_EQ(R.SentData.size(), 3u);
  EXPECT_EQ(R.SentData[0], &A) << "evaluation sees the buffer, not a copy";
  EXPECT_EQ(R.SentData[1], B);
  // A variable-length feature has no fixed size to supply a buffer for.
  float V[2];
  EXPECT_EQ(R.useFeatureBuffer(2, V).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(R.useFeatureBuffer(3, V).code(), ErrorCode::InvalidArgument);
  // A copy of a borrowing value owns its bytes.
  TensorValue Copy = R.feature(0);
  EXPECT_FALSE(Copy.isBorrowed());
  EXPECT_TRUE(R.feature(0).isBorrowed());
  EXPECT_NE(Copy.data(), static_cast<const void *>(&A));
  EXPECT_EQ(*Copy.dataAs<int64_t>(), 9);
}

TEST(TensorValue, BorrowingStopsWhenTheSizeChanges) {
  int32_t Buf[2] = {1, 2};
  TensorValue V =
      TensorValue::borrowing(TensorSpec::create<int32_t>("x", {2}), Buf);
  ASSERT_TRUE(V.isBorrowed());
  EXPECT_EQ(V.byteSize(), 8u);
  V.reshape({2}); // same size: still the caller's buffer
  EXPECT_EQ(V.data(), static_cast<void *>(Buf));
  V.reshape({3});
  EXPECT_FALSE(V.isBorrowed());
  EXPECT_EQ(V.dataAs<int32_t>()[1], 2) << "the bytes that fit are kept";
  TensorValue Moved = TensorValue::borrowing(V.spec(), Buf);
  TensorValue Target(std::move(Moved));
  EXPECT_EQ(Target.data(), static_cast<void *>(Buf));
}

TEST(ModelRunner, PopulateFeaturesAcceptsThePapersTypes) {
  FakeModelRunner R; // features declared on first use
  unsigned U = 7;
  size_t Z = 9;
  int64_t I = -3;
  Status S = R.populateFeatures(
      std::make_pair("u", U), std::make_pair("z", Z), std::make_pair("i", I),
      std::make_pair("name", "foo"), std::make_pair("flag", true),
      std::make_pair("vec", std::vector<double>{1.0, 2.0, 3.0}),
      std::make_pair("bits", std::vector<bool>{true, false}));
  ASSERT_TRUE(S.isOk()) << S.toString();
  ASSERT_EQ(R.featureCount(), 7u);
  EXPECT_EQ(R.featureSpec(0).type(), DType::UInt32);
  EXPECT_EQ(R.featureSpec(1).type(), DType::UInt64);
  EXPECT_EQ(R.featureSpec(2).type(), DType::Int64);
  EXPECT_EQ(R.featureSpec(3).type(), DType::String)
      << "a const char* is a string, not a bool";
  EXPECT_EQ(R.featureSpec(3).shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(R.featureSpec(4).type(), DType::Bool);
  EXPECT_EQ(R.featureSpec(5).shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(R.featureSpec(6).type(), DType::Bool);
  EXPECT_EQ(*R.getTensor<size_t>(1), 9u);
}

TEST(ModelRunner, VariableLengthFeaturesAnnounceNewShapes) {
  FakeModelRunner R;
  R.answer<float>({0.5f});
  ASSERT_TRUE(R.setFeature("v", std::vector<float>(5, 1.0f)).isOk());
  ASSERT_TRUE(R.evaluate<float>());
  EXPECT_TRUE(R.LastChanged);
  ASSERT_TRUE(R.setFeature("v", std::vector<float>(5, 2.0f)).isOk());
  ASSERT_TRUE(R.evaluate<float>());
  EXPECT_FALSE(R.LastChanged);
  ASSERT_TRUE(R.setFeature("v", std::vector<float>(50000, 3.0f)).isOk());
  ASSERT_TRUE(R.evaluate<float>());
  EXPECT_TRUE(R.LastChanged);
  EXPECT_EQ(R.SentSpecs[0].shape(), (std::vector<int64_t>{50000}));
}

TEST(ModelRunner, DeclaredShapesAndTypesAreEnforced) {
  FakeModelRunner R({TensorSpec::create<float>("x", {4}),
                     TensorSpec::create<int32_t>("rows", {kDynamicDim, 2})});
  Status S = R.setFeature("x", std::vector<float>(3));
  EXPECT_EQ(S.code(), ErrorCode::TypeMismatch);
  EXPECT_NE(S.message().find("4 elements"), std::string::npos) << S.message();
  S = R.setFeature("x", std::vector<double>(4));
  EXPECT_EQ(S.code(), ErrorCode::TypeMismatch);
  EXPECT_NE(S.message().find("float"), std::string::npos) << S.message();
  S = R.setFeature("nope", 1.0f);
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(S.message().find("unknown feature 'nope'"), std::string::npos);
  EXPECT_TRUE(R.setFeature("rows", std::vector<int32_t>(6)).isOk());
  EXPECT_EQ(R.featureSpec(1).shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(R.setFeature("rows", std::vector<int32_t>(5)).code(),
            ErrorCode::TypeMismatch);
}

TEST(ModelRunner, FailedSetterIsReportedByTheNextEvaluation) {
  FakeModelRunner R({TensorSpec::create<float>("x")},
                    TensorSpec::create<int64_t>("d"));
  R.answer<int64_t>({5});
  R.setFeature("x", 1); // int into a float feature: ignored by the caller
  Expected<int64_t> A = R.evaluate<int64_t>();
  ASSERT_FALSE(A);
  EXPECT_EQ(A.status().code(), ErrorCode::TypeMismatch);
  EXPECT_EQ(R.Calls, 0) << "stale features must not be sent";
  EXPECT_EQ(R.evaluateOr<int64_t>(-1), 5) << "the error is reported once";
}

TEST(ModelRunner, AdviceTypeIsChecked) {
  FakeModelRunner R({TensorSpec::create<float>("x")},
                    TensorSpec::create<int64_t>("decision"));
  R.answer<int64_t>({3});
  Expected<float> F = R.evaluate<float>();
  ASSERT_FALSE(F);
  EXPECT_EQ(F.status().code(), ErrorCode::TypeMismatch);
  EXPECT_NE(F.status().message().find("int64_t"), std::string::npos);
  EXPECT_EQ(R.Calls, 0) << "checked before anything is sent";
  Expected<int32_t> I = R.evaluate<int32_t>();
  EXPECT_FALSE(I) << "int64 advice is not silently narrowed to int";
  Expected<std::vector<int64_t>> V = R.evaluate<std::vector<int64_t>>();
  ASSERT_TRUE(V);
  EXPECT_EQ(*V, std::vector<int64_t>{3});
}

TEST(ModelRunner, ScalarEvaluateOfSeveralElementsIsAnError) {
  FakeModelRunner R({TensorSpec::create<float>("x")});
  R.answer<float>({1.0f, 2.0f});
  Expected<float> F = R.evaluate<float>(); // derives advice [1]
  ASSERT_FALSE(F);
  EXPECT_EQ(F.status().code(), ErrorCode::TypeMismatch);
}

TEST(ModelRunner, FallbackAndDiagnostics) {
  std::vector<std::string> Seen;
  RunnerOptions O;
  O.Diagnostics = [&](Severity S, std::string_view M) {
    Seen.push_back(std::string(severityName(S)) + ":" + std::string(M));
  };
  FakeModelRunner R({TensorSpec::create<float>("x")}, std::nullopt, O);
  R.failWith(Status(ErrorCode::PeerClosed, "model went away"));
  EXPECT_EQ(R.evaluateOr<int64_t>(17), 17);
  ASSERT_EQ(Seen.size(), 1u);
  EXPECT_NE(Seen[0].find("warning:"), std::string::npos);
  EXPECT_NE(Seen[0].find("model went away"), std::string::npos);
}

TEST(ModelRunner, InvalidConstructionIsReported) {
  FakeModelRunner Dup({TensorSpec::create<float>("x"),
                       TensorSpec::create<int32_t>("x")});
  EXPECT_EQ(Dup.constructionStatus().code(), ErrorCode::InvalidArgument);
  EXPECT_FALSE(Dup.evaluate<int>());
  FakeModelRunner Huge({TensorSpec::create<double>("x", {1 << 20, 1 << 20})});
  EXPECT_FALSE(Huge.constructionStatus().isOk());
}

TEST(ModelRunner, StringsMustBeUtf8AndVariableLength) {
  FakeModelRunner R({TensorSpec("s", DType::String, {kDynamicDim})});
  EXPECT_TRUE(R.setFeature("s", "short").isOk());
  EXPECT_TRUE(R.setFeature("s", std::string("a much longer string")).isOk());
  EXPECT_EQ(R.featureSpec(0).shape(), (std::vector<int64_t>{20}));
  EXPECT_TRUE(R.setFeature("s", "").isOk());
  Status S = R.setFeature("s", std::string("\xff\xfe"));
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(S.message().find("UTF-8"), std::string::npos);
}

TEST(ModelRunner, UnsetVariableFeatureBlocksEvaluation) {
  FakeModelRunner R({TensorSpec::create<float>("v", {kDynamicDim})});
  R.answer<float>({1.0f});
  Expected<float> F = R.evaluate<float>();
  ASSERT_FALSE(F);
  EXPECT_NE(F.status().message().find("has not been set"), std::string::npos);
}

TEST(ModelRunner, ContextsReachTheImplementation) {
  FakeModelRunner R;
  EXPECT_TRUE(R.switchContext("f").isOk());
  EXPECT_TRUE(R.switchContext("g").isOk());
  EXPECT_EQ(R.Contexts, (std::vector<std::string>{"f", "g"}));
}

TEST(ModelRunner, BoolFeaturesAreNormalized) {
  FakeModelRunner R;
  unsigned char Raw[3] = {0, 7, 1};
  ASSERT_TRUE(R.setFeatureBytes("b", DType::Bool, {3}, Raw, 3).isOk());
  const unsigned char *P = static_cast<const unsigned char *>(
      static_cast<void *>(R.getTensor<bool>(0)));
  EXPECT_EQ(P[1], 1) << "non-zero becomes exactly 1 on the wire";
}
