// Tensors <-> generic messages: every check on values from the wire.
#include "proto_tensor.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace mlbridge;
using namespace mlbridge::grpc_detail;

namespace {

pb::Tensor floats(std::vector<float> V, std::vector<int64_t> Shape) {
  pb::Tensor T;
  T.set_name("t");
  T.set_dtype(pb::DTYPE_FLOAT);
  for (int64_t D : Shape)
    T.add_shape(D);
  T.set_data(V.data(), V.size() * sizeof(float));
  return T;
}

} // namespace

TEST(ProtoTensor, DTypeValuesAreCorePlusOne) {
  for (int I = 0; I < kNumDTypes; ++I) {
    DType T = static_cast<DType>(I);
    EXPECT_EQ(static_cast<int>(toProto(T)), I + 1);
    DType Back;
    ASSERT_TRUE(fromProto(I + 1, Back, "x").isOk());
    EXPECT_EQ(Back, T);
  }
  DType Out;
  Status Unset = fromProto(0, Out, "advice");
  EXPECT_EQ(Unset.code(), ErrorCode::Malformed);
  EXPECT_NE(Unset.message().find("not set"), std::string::npos);
  EXPECT_EQ(fromProto(13, Out, "advice").code(), ErrorCode::Malformed);
  // The generated enum agrees.
  EXPECT_EQ(pb::DTYPE_STRING, static_cast<int>(DType::String) + 1);
  EXPECT_EQ(pb::DTYPE_BOOL, static_cast<int>(DType::Bool) + 1);
}

TEST(ProtoTensor, RoundTripsAValue) {
  TensorValue V(TensorSpec::create<int16_t>("v", {2, 3}));
  int16_t *P = V.dataAs<int16_t>();
  for (int I = 0; I < 6; ++I)
    P[I] = int16_t(-I * 1000);
  pb::Tensor T;
  tensorToProto(V, &T);
  EXPECT_EQ(T.name(), "v");
  EXPECT_EQ(T.dtype(), pb::DTYPE_INT16);
  ASSERT_EQ(T.shape_size(), 2);
  EXPECT_EQ(T.data().size(), 12u);
  TensorValue Back;
  ASSERT_TRUE(tensorFromProto(T, 1 << 20, Back).isOk());
  EXPECT_EQ(Back.spec(), V.spec());
  EXPECT_EQ(std::memcmp(Back.data(), V.data(), 12), 0);
}

TEST(ProtoTensor, AdviceMustFitTheSpec) {
  TensorValue Out;
  const TensorSpec Fixed = TensorSpec::create<float>("y", {2});
  ASSERT_TRUE(adviceFromProto(floats({1, 2}, {2}), Fixed, 1 << 20, Out).isOk());
  EXPECT_EQ(Out.dataAs<float>()[1], 2.0f);
  // Wrong count, wrong dtype: TypeMismatch.
  EXPECT_EQ(adviceFromProto(floats({1, 2, 3}, {3}), Fixed, 1 << 20, Out).code(),
            ErrorCode::TypeMismatch);
  pb::Tensor D = floats({1, 2}, {2});
  D.set_dtype(pb::DTYPE_INT32);
  Status S = adviceFromProto(D, Fixed, 1 << 20, Out);
  EXPECT_EQ(S.code(), ErrorCode::TypeMismatch);
  EXPECT_NE(S.message().find("int32_t"), std::string::npos) << S.toString();
  // A dynamic spec takes any multiple of its row.
  const TensorSpec Dyn = TensorSpec::create<float>("y", {kDynamicDim, 2});
  ASSERT_TRUE(adviceFromProto(floats({1, 2, 3, 4}, {2, 2}), Dyn, 1 << 20, Out).isOk());
  EXPECT_EQ(Out.spec().shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(adviceFromProto(floats({1, 2, 3}, {3}), Dyn, 1 << 20, Out).code(),
            ErrorCode::TypeMismatch);
}

TEST(ProtoTensor, InconsistentTensorsAreMalformed) {
  TensorValue Out;
  const TensorSpec Spec = TensorSpec::create<float>("y", {kDynamicDim});
  // Shape says 3 elements, data holds 2.
  EXPECT_EQ(adviceFromProto(floats({1, 2}, {3}), Spec, 1 << 20, Out).code(),
            ErrorCode::Malformed);
  // No shape at all.
  EXPECT_EQ(adviceFromProto(floats({1}, {}), Spec, 1 << 20, Out).code(),
            ErrorCode::Malformed);
  // Bytes not a whole number of elements.
  pb::Tensor T = floats({1}, {1});
  T.mutable_data()->push_back('x');
  EXPECT_EQ(adviceFromProto(T, Spec, 1 << 20, Out).code(), ErrorCode::Malformed);
  // Negative dimension.
  EXPECT_EQ(adviceFromProto(floats({}, {-1}), Spec, 1 << 20, Out).code(),
            ErrorCode::Malformed);
  // Bool bytes other than 0/1, strings that are not UTF-8.
  pb::Tensor B;
  B.set_dtype(pb::DTYPE_BOOL);
  B.add_shape(2);
  B.set_data(std::string("\x01\x02", 2));
  EXPECT_EQ(adviceFromProto(B, TensorSpec("b", DType::Bool, {2}), 1 << 20, Out).code(),
            ErrorCode::Malformed);
  pb::Tensor Str;
  Str.set_dtype(pb::DTYPE_STRING);
  Str.add_shape(2);
  Str.set_data("\xff\xfe");
  EXPECT_EQ(adviceFromProto(Str, TensorSpec("s", DType::String, {kDynamicDim}),
                            1 << 20, Out)
                .code(),
            ErrorCode::Malformed);
}

TEST(ProtoTensor, SizeLimitIsCheckedFirst) {
  TensorValue Out;
  std::vector<float> Big(1000, 1.0f);
  EXPECT_EQ(adviceFromProto(floats(Big, {1000}),
                            TensorSpec::create<float>("y", {kDynamicDim}), 3999, Out)
                .code(),
            ErrorCode::TooLarge);
  pb::TensorSpec S;
  specToProto(TensorSpec::create<double>("x", {1 << 20}), &S);
  TensorSpec Back;
  EXPECT_EQ(specFromProto(S, false, 1 << 20, Back).code(), ErrorCode::TooLarge);
  ASSERT_TRUE(specFromProto(S, false, 8 << 20, Back).isOk());
  EXPECT_EQ(Back, TensorSpec::create<double>("x", {1 << 20}));
  S.clear_shape();
  S.add_shape(-1);
  EXPECT_EQ(specFromProto(S, false, 1 << 20, Back).code(), ErrorCode::Malformed);
  EXPECT_TRUE(specFromProto(S, true, 1 << 20, Back).isOk());
  S.add_shape(-1);
  EXPECT_EQ(specFromProto(S, true, 1 << 20, Back).code(), ErrorCode::Malformed);
}
