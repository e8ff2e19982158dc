// User-defined messages filled and read by field name through reflection
// (tests/e2e/tools/grpc_user.proto, loaded at run time).
#include "user_message.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace mlbridge;
using namespace mlbridge::grpc_detail;

namespace {

UserMessageSchema schema() {
  UserMessageSchema S;
  S.ProtoFile = MLBRIDGE_TEST_USER_PROTO;
  S.Method = "/usertest.LoopOptimizer/Advise";
  S.RequestType = "usertest.LoopFeatures";
  S.ReplyType = "usertest.LoopAdvice";
  S.AdviceField = "decision.unroll";
  return S;
}

template <typename T>
TensorValue value(const std::string &Name, std::vector<T> V) {
  TensorValue X(TensorSpec::create<T>(Name, {int64_t(V.size())}));
  std::memcpy(X.data(), V.data(), V.size() * sizeof(T));
  return X;
}

TensorValue text(const std::string &Name, const std::string &S) {
  TensorValue X(TensorSpec(Name, DType::String, {int64_t(S.size())}));
  X.assign(S.data(), S.size());
  return X;
}

} // namespace

TEST(UserMessage, LoadsAndChecksTheSchema) {
  auto C = UserMessageCodec::load(schema());
  ASSERT_TRUE(C) << C.status().toString();

  // The error of loading schema() with one change (the load must fail).
  auto LoadError = [](auto Change) {
    UserMessageSchema S = schema();
    Change(S);
    auto E = UserMessageCodec::load(S);
    EXPECT_FALSE(E);
    return E ? Status::ok() : E.status();
  };
  Status E = LoadError([](auto &S) { S.Method = "/usertest.LoopOptimizer/Nope"; });
  EXPECT_NE(E.message().find("no method"), std::string::npos) << E.toString();
  E = LoadError([](auto &S) { S.AdviceField = "decision.unrol"; });
  EXPECT_NE(E.message().find("has no field 'unrol'"), std::string::npos) << E.toString();
  EXPECT_NE(E.message().find("unroll, order"), std::string::npos);
  E = LoadError([](auto &S) { S.AdviceField = "decision"; });
  EXPECT_NE(E.message().find("is a message"), std::string::npos) << E.toString();
  E = LoadError([](auto &S) { S.ProtoFile = "/nonexistent/x.proto"; });
  EXPECT_EQ(E.code(), ErrorCode::NotFound) << E.toString();
  E = LoadError([](auto &S) { S.RequestType = "usertest.Missing"; });
  EXPECT_FALSE(E.isOk());
}

TEST(UserMessage, FillsNestedAndRepeatedFieldsByName) {
  auto C = UserMessageCodec::load(schema());
  ASSERT_TRUE(C);
  TensorValue Trip = value<int64_t>("loop.trip_count", {1000});
  TensorValue Body = value<int32_t>("loop.body_size", {7});
  TensorValue W = value<float>("weights", {0.5f, 1.5f});
  TensorValue Fn = text("function", "main");
  TensorValue Blk = value<uint32_t>("blocks[2].size", {12});
  TensorValue Mode = value<int32_t>("mode", {1});
  ASSERT_TRUE((*C)->fillRequest({&Trip, &Body, &W, &Fn, &Blk, &Mode}).isOk());
  const std::string Dbg = (*C)->request().ShortDebugString();
  EXPECT_NE(Dbg.find("loop { trip_count: 1000 body_size: 7 }"), std::string::npos) << Dbg;
  EXPECT_NE(Dbg.find("weights: 0.5 weights: 1.5"), std::string::npos) << Dbg;
  EXPECT_NE(Dbg.find("function: \"main\""), std::string::npos) << Dbg;
  // blocks[2] creates blocks[0] and [1] (empty).
  EXPECT_NE(Dbg.find("blocks { } blocks { } blocks { size: 12 }"), std::string::npos) << Dbg;
  EXPECT_NE(Dbg.find("mode: MODE_FAST"), std::string::npos) << Dbg;
}

TEST(UserMessage, FieldErrorsAreClear) {
  auto C = UserMessageCodec::load(schema());
  ASSERT_TRUE(C);
  auto Fail = [&](const TensorValue &V) {
    return (*C)->fillRequest({&V});
  };
  Status S = Fail(value<int32_t>("loop.trip_cnt", {1}));
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(S.message().find("usertest.Loop has no field 'trip_cnt'"), std::string::npos)
      << S.toString();
  EXPECT_NE(S.message().find("trip_count, body_size"), std::string::npos);
  // A vector into a singular field; a float into an integer field; a value
  // out of range; an unknown enum number; a message as a leaf; an index on
  // a non-repeated message.
  EXPECT_EQ(Fail(value<int64_t>("loop.trip_count", {1, 2})).code(), ErrorCode::TypeMismatch);
  EXPECT_EQ(Fail(value<float>("loop.body_size", {1.0f})).code(), ErrorCode::TypeMismatch);
  EXPECT_EQ(Fail(value<int64_t>("loop.body_size", {int64_t(1) << 40})).code(),
            ErrorCode::TypeMismatch);
  EXPECT_EQ(Fail(value<int32_t>("mode", {7})).code(), ErrorCode::TypeMismatch);
  EXPECT_EQ(Fail(value<int32_t>("loop", {1})).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(Fail(value<int32_t>("loop[0].body_size", {1})).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(Fail(value<int32_t>("blocks.size", {1})).code(), ErrorCode::InvalidArgument);
  EXPECT_EQ(Fail(value<int32_t>("function", {1})).code(), ErrorCode::TypeMismatch);
  EXPECT_EQ(Fail(value<int32_t>("a..b", {1})).code(), ErrorCode::InvalidArgument);
  S = Fail(value<int32_t>("function.x", {1})); // a path through a scalar
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(S.message().find("'function' is not a message field"), std::string::npos)
      << S.toString();
  EXPECT_EQ(Fail(value<int32_t>("blocks[99999999].size", {1})).code(),
            ErrorCode::InvalidArgument);
}

TEST(UserMessage, ReadsTheAdviceExactlyAndNeverADefault) {
  auto C = UserMessageCodec::load(schema());
  ASSERT_TRUE(C);
  TensorValue Out;
  const TensorSpec I32 = TensorSpec::create<int32_t>("a");
  // Nothing set: the optional field is missing, not 0.
  Status S = (*C)->readAdvice(I32, Out);
  EXPECT_EQ(S.code(), ErrorCode::Malformed);
  EXPECT_NE(S.message().find("does not set field 'decision'"), std::string::npos)
      << S.toString();
  ASSERT_TRUE((*C)->reply().ParseFromString(std::string()));
  TensorValue Set = value<int32_t>("decision.unroll", {4});
  ASSERT_TRUE(UserMessageCodec::setField((*C)->reply(), "decision.unroll", Set).isOk());
  ASSERT_TRUE((*C)->readAdvice(I32, Out).isOk());
  EXPECT_EQ(*Out.dataAs<int32_t>(), 4);
  // Converted exactly: an int64 advice takes it; a bool advice does not.
  ASSERT_TRUE((*C)->readAdvice(TensorSpec::create<int64_t>("a"), Out).isOk());
  EXPECT_EQ(*Out.dataAs<int64_t>(), 4);
  EXPECT_EQ((*C)->readAdvice(TensorSpec::create<bool>("a"), Out).code(),
            ErrorCode::TypeMismatch);
  // A repeated field as a vector advice.
  TensorValue Order = value<int64_t>("decision.order", {3, 1, 2});
  ASSERT_TRUE(UserMessageCodec::setField((*C)->reply(), "decision.order", Order).isOk());
  ASSERT_TRUE(UserMessageCodec::getField((*C)->reply(), "decision.order",
                                         TensorSpec::create<int64_t>("o", {kDynamicDim}),
                                         Out)
                  .isOk());
  ASSERT_EQ(Out.elementCount(), 3u);
  EXPECT_EQ(Out.dataAs<int64_t>()[2], 2);
  // ... which does not fit a scalar spec, nor uint8 when a value is too big.
  EXPECT_EQ(UserMessageCodec::getField((*C)->reply(), "decision.order",
                                       TensorSpec::create<int64_t>("o"), Out)
                .code(),
            ErrorCode::TypeMismatch);
  TensorValue Big = value<int64_t>("decision.order", {300});
  ASSERT_TRUE(UserMessageCodec::setField((*C)->reply(), "decision.order", Big).isOk());
  EXPECT_EQ(UserMessageCodec::getField((*C)->reply(), "decision.order",
                                       TensorSpec::create<uint8_t>("o", {kDynamicDim}), Out)
                .code(),
            ErrorCode::TypeMismatch);
  // Strings.
  TensorValue Note = text("note", "ok");
  ASSERT_TRUE(UserMessageCodec::setField((*C)->reply(), "note", Note).isOk());
  ASSERT_TRUE(UserMessageCodec::getField((*C)->reply(), "note",
                                         TensorSpec("n", DType::String, {kDynamicDim}), Out)
                  .isOk());
  EXPECT_EQ(Out.asString(), "ok");
}
