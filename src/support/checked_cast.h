//===- support/checked_cast.h - Integer conversions that cannot wrap -*- C++ -*-===//
//
// Internal to the library. Values from the wire, from users and from models
// are converted between integer types only through these, so a value that
// does not fit is an error (or a clamp, where the caller says so), never a
// silent wrap-around.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SUPPORT_CHECKED_CAST_H
#define MLBRIDGE_SUPPORT_CHECKED_CAST_H

#include <limits>
#include <optional>
#include <type_traits>

namespace mlbridge::support {

/// True when the integer V is representable in the integer type To.
template <typename To, typename From> constexpr bool fitsIn(From V) {
  static_assert(std::is_integral_v<To> && std::is_integral_v<From>,
                "fitsIn converts between integer types");
  using ToL = std::numeric_limits<To>;
  if constexpr (std::is_signed_v<From>) {
    if (V < 0)
      return std::is_signed_v<To> &&
             static_cast<long long>(V) >= static_cast<long long>(ToL::min());
  }
  return static_cast<unsigned long long>(V) <=
         static_cast<unsigned long long>(ToL::max());
}

/// V as To, or std::nullopt when it does not fit.
template <typename To, typename From>
constexpr std::optional<To> checkedCast(From V) {
  if (!fitsIn<To>(V))
    return std::nullopt;
  return static_cast<To>(V);
}

/// V as To, clamped into To's range.
template <typename To, typename From> constexpr To saturatingCast(From V) {
  if (fitsIn<To>(V))
    return static_cast<To>(V);
  if constexpr (std::is_signed_v<From>)
    if (V < 0)
      return std::numeric_limits<To>::min();
  return std::numeric_limits<To>::max();
}

} // namespace mlbridge::support

#endif // MLBRIDGE_SUPPORT_CHECKED_CAST_H
