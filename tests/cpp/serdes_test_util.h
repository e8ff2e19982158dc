//===- tests/cpp/serdes_test_util.h - Helpers for SerDes tests --*- C++ -*-===//
#ifndef MLBRIDGE_TESTS_SERDES_TEST_UTIL_H
#define MLBRIDGE_TESTS_SERDES_TEST_UTIL_H

#include "mlbridge/serdes.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace mlbridge::testutil {

/// A value of dtype DTypeOf<T> with the given elements and shape (default:
/// [1] for one element, else [N]).
template <typename T>
TensorValue makeValue(const std::string &Name, const std::vector<T> &Elems,
                      std::vector<int64_t> Shape = {}) {
  if (Shape.empty())
    Shape = {static_cast<int64_t>(Elems.size())};
  TensorValue V(TensorSpec(Name, DTypeOf<T>::value, Shape));
  if (!Elems.empty())
    std::memcpy(V.data(), Elems.data(), Elems.size() * sizeof(T));
  return V;
}

inline TensorValue makeBool(const std::string &Name,
                            const std::vector<unsigned char> &Elems) {
  TensorValue V(TensorSpec(Name, DType::Bool,
                           {static_cast<int64_t>(Elems.size())}));
  if (!Elems.empty())
    std::memcpy(V.data(), Elems.data(), Elems.size());
  return V;
}

inline TensorValue makeString(const std::string &Name, std::string_view S) {
  TensorValue V(TensorSpec(Name, DType::String,
                           {static_cast<int64_t>(S.size())}));
  V.assign(S.data(), S.size());
  return V;
}

template <typename T> std::vector<T> elements(const TensorValue &V) {
  std::vector<T> Out(V.elementCount());
  if (!Out.empty())
    std::memcpy(Out.data(), V.data(), V.byteSize());
  return Out;
}

inline std::string bytesOf(const TensorValue &V) {
  return std::string(static_cast<const char *>(V.data()), V.byteSize());
}

template <typename T> std::string rawBytes(const std::vector<T> &Elems) {
  return std::string(reinterpret_cast<const char *>(Elems.data()),
                     Elems.size() * sizeof(T));
}

inline std::vector<const TensorValue *>
pointers(const std::vector<TensorValue> &Values) {
  std::vector<const TensorValue *> Out;
  for (const TensorValue &V : Values)
    Out.push_back(&V);
  return Out;
}

inline float floatFromBits(uint32_t Bits) {
  float F;
  std::memcpy(&F, &Bits, 4);
  return F;
}
inline double doubleFromBits(uint64_t Bits) {
  double D;
  std::memcpy(&D, &Bits, 8);
  return D;
}

/// Asserts on a Status's code and on a distinctive part of its message.
#define EXPECT_STATUS(Expr, Code, Fragment)                                    \
  do {                                                                         \
    const ::mlbridge::Status S_ = (Expr);                                      \
    EXPECT_EQ(S_.code(), (Code)) << S_.message();                              \
    EXPECT_NE(S_.message().find(Fragment), std::string::npos)                  \
        << "message: " << S_.message();                                        \
  } while (0)

#define ASSERT_OK(Expr)                                                        \
  do {                                                                         \
    const ::mlbridge::Status S_ = (Expr);                                      \
    ASSERT_TRUE(S_.isOk()) << S_.message();                                    \
  } while (0)

/// The model side of one stream: decodes every message in Bytes.
struct ModelSide {
  explicit ModelSide(SerDesKind Kind) : Codec(createSerDes(Kind)) {}
  std::unique_ptr<SerDes> Codec;
  SerDesLimits Limits;
  std::vector<TensorSpec> Specs;
  TensorSpec Advice;
  CompilerMessage Msg;

  Status next(ByteSource &In) {
    return Codec->decodeMessage(In, Limits, Specs, Advice, Msg);
  }
};

/// Encodes Values as advice of Shape, decodes them, expects the same bytes.
template <typename T>
void adviceRoundTrip(SerDesKind Kind, const std::vector<T> &Values,
                     std::vector<int64_t> Shape) {
  auto Codec = createSerDes(Kind);
  const TensorSpec Spec("adv", DTypeOf<T>::value, Shape);
  WireMessage M;
  ASSERT_OK(Codec->encodeAdvice(Spec, makeValue<T>("adv", Values), M));
  const std::string Bytes = M.flatten();
  MemoryByteSource In(Bytes);
  TensorValue Got;
  ASSERT_OK(Codec->decodeAdvice(In, Spec, SerDesLimits(), Got));
  EXPECT_TRUE(In.atEnd());
  EXPECT_EQ(Got.spec().name(), "adv");
  EXPECT_EQ(Got.type(), Spec.type());
  EXPECT_EQ(Got.elementCount(), Values.size());
  EXPECT_EQ(bytesOf(Got), rawBytes(Values));
}

} // namespace mlbridge::testutil

#endif // MLBRIDGE_TESTS_SERDES_TEST_UTIL_H
