//===- mlbridge/dtype.h - Element types of tensors --------------*- C++ -*-===//
//
// The element types a feature or an advice tensor can have, their names in
// LLVM's JSON tensor-spec form ("float", "int64_t", ...) and the mapping from
// C++ types. Strings are UTF-8 byte tensors (element size 1).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_DTYPE_H
#define MLBRIDGE_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace mlbridge {

/// The numeric dtypes, in enum order, as X(Enumerator, ElementType, Name):
/// the one list every switch over DType is written from, so a new dtype is
/// added here and nowhere else. Name is LLVM's TensorSpec type name. A
/// switch that dispatches on the element type looks like
///   switch (T) {
///   #define MLBRIDGE_CASE(E, Ty, Name) case DType::E: return f<Ty>(...);
///     MLBRIDGE_NUMERIC_DTYPES(MLBRIDGE_CASE)
///   #undef MLBRIDGE_CASE
///   case DType::Bool: ...
///   case DType::String: ...
///   }
#define MLBRIDGE_NUMERIC_DTYPES(X)                                             \
  X(Float, float, "float")                                                     \
  X(Double, double, "double")                                                  \
  X(Int8, int8_t, "int8_t")                                                    \
  X(Int16, int16_t, "int16_t")                                                 \
  X(Int32, int32_t, "int32_t")                                                 \
  X(Int64, int64_t, "int64_t")                                                 \
  X(UInt8, uint8_t, "uint8_t")                                                 \
  X(UInt16, uint16_t, "uint16_t")                                              \
  X(UInt32, uint32_t, "uint32_t")                                              \
  X(UInt64, uint64_t, "uint64_t")

/// Every dtype: the numeric ones, then Bool (one byte, 0 or 1; "bool" is an
/// extension to LLVM's names) and String (UTF-8 bytes, element size 1;
/// "string" is an extension too).
#define MLBRIDGE_DTYPES(X)                                                     \
  MLBRIDGE_NUMERIC_DTYPES(X)                                                   \
  X(Bool, uint8_t, "bool")                                                     \
  X(String, char, "string")

/// Float is IEEE-754 binary32, Double binary64.
enum class DType : uint8_t {
#define MLBRIDGE_DTYPE_ENUMERATOR(E, Ty, Name) E,
  MLBRIDGE_DTYPES(MLBRIDGE_DTYPE_ENUMERATOR)
#undef MLBRIDGE_DTYPE_ENUMERATOR
};

/// Number of dtypes; DType values are 0..kNumDTypes-1.
inline constexpr int kNumDTypes = 0
#define MLBRIDGE_DTYPE_COUNT(E, Ty, Name) +1
    MLBRIDGE_DTYPES(MLBRIDGE_DTYPE_COUNT)
#undef MLBRIDGE_DTYPE_COUNT
    ;

/// Bytes per element (1 for Bool and String).
size_t dtypeSize(DType T);

/// LLVM's name for the type: "float", "double", "int8_t" ... "uint64_t",
/// plus "bool" and "string".
std::string_view dtypeName(DType T);

/// Inverse of dtypeName; std::nullopt for an unknown name.
std::optional<DType> dtypeFromName(std::string_view Name);

inline bool isIntegral(DType T) { return T >= DType::Int8 && T <= DType::UInt64; }
inline bool isFloating(DType T) { return T == DType::Float || T == DType::Double; }

namespace detail {
template <typename T, typename = void> struct DTypeOfImpl {};

template <> struct DTypeOfImpl<float> {
  static constexpr DType value = DType::Float;
};
template <> struct DTypeOfImpl<double> {
  static constexpr DType value = DType::Double;
};
template <> struct DTypeOfImpl<bool> {
  static constexpr DType value = DType::Bool;
};
// Every integer type maps by width and signedness, so `int`, `long`,
// `long long`, `unsigned`, `size_t` and the <cstdint> aliases all work.
// Plain `char` is excluded: it is text, not a number.
template <typename T>
struct DTypeOfImpl<
    T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                        !std::is_same_v<T, char>>> {
  static constexpr DType value =
      std::is_signed_v<T>
          ? (sizeof(T) == 1   ? DType::Int8
             : sizeof(T) == 2 ? DType::Int16
             : sizeof(T) == 4 ? DType::Int32
                              : DType::Int64)
          : (sizeof(T) == 1   ? DType::UInt8
             : sizeof(T) == 2 ? DType::UInt16
             : sizeof(T) == 4 ? DType::UInt32
                              : DType::UInt64);
};
} // namespace detail

/// DTypeOf<T>::value is T's dtype; ill-formed for unsupported T.
template <typename T> using DTypeOf = detail::DTypeOfImpl<std::remove_cv_t<T>>;

/// True when T is a supported numeric element type.
template <typename T, typename = void>
struct IsElementType : std::false_type {};
template <typename T>
struct IsElementType<T, std::void_t<decltype(DTypeOf<T>::value)>>
    : std::true_type {};
template <typename T>
inline constexpr bool IsElementTypeV = IsElementType<T>::value;

} // namespace mlbridge

#endif // MLBRIDGE_DTYPE_H
