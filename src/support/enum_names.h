//===- support/enum_names.h - The names of an enum, one table ---*- C++ -*-===//
//
// Internal to the library. An enum whose enumerators are 0, 1, 2, ... keeps
// its names in one array, in declaration order; these look a name up and
// parse one back, so each name is written once.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SUPPORT_ENUM_NAMES_H
#define MLBRIDGE_SUPPORT_ENUM_NAMES_H

#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>

namespace mlbridge::support {

/// Names[Value] for an enum whose enumerators are 0, 1, ..., Last, named in
/// that order; "unknown" for a value outside (the C API casts whatever int a
/// caller passes).
template <auto Last, size_t N>
const char *enumName(decltype(Last) Value, const char *const (&Names)[N]) {
  static_assert(N == static_cast<size_t>(Last) + 1, "one name per enumerator");
  using U = std::underlying_type_t<decltype(Last)>;
  const U I = static_cast<U>(Value);
  if constexpr (std::is_signed_v<U>) {
    if (I < 0)
      return "unknown";
  }
  return static_cast<size_t>(I) < N ? Names[I] : "unknown";
}

/// The enumerator (0, 1, ..., Last, as in enumName) whose name is exactly
/// Name (case-sensitive), if any.
template <auto Last, size_t N>
std::optional<decltype(Last)> enumFromName(std::string_view Name,
                                           const char *const (&Names)[N]) {
  static_assert(N == static_cast<size_t>(Last) + 1, "one name per enumerator");
  for (size_t I = 0; I < N; ++I)
    if (Name == Names[I])
      return static_cast<decltype(Last)>(I);
  return std::nullopt;
}

} // namespace mlbridge::support

#endif // MLBRIDGE_SUPPORT_ENUM_NAMES_H
