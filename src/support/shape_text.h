//===- support/shape_text.h - Shapes in error messages ----------*- C++ -*-===//
//
// Internal to the library. The one way a shape is written in a message:
// "[2,3]", a dynamic dimension as -1 (the spec notation).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SUPPORT_SHAPE_TEXT_H
#define MLBRIDGE_SUPPORT_SHAPE_TEXT_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace mlbridge::support {

std::string shapeText(const int64_t *Dims, size_t Rank);

/// Any contiguous container of int64_t (std::vector, protobuf's
/// RepeatedField).
template <typename Dims> std::string shapeText(const Dims &D) {
  return shapeText(D.data(), static_cast<size_t>(D.size()));
}

} // namespace mlbridge::support

#endif // MLBRIDGE_SUPPORT_SHAPE_TEXT_H
