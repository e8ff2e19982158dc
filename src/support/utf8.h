//===- support/utf8.h - UTF-8 validation and encoding -----------*- C++ -*-===//
//
// Internal to the library. String tensors, spec names and JSON text must be
// well-formed UTF-8; every check in the tree calls these.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SUPPORT_UTF8_H
#define MLBRIDGE_SUPPORT_UTF8_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mlbridge::support {

/// True when S is well-formed UTF-8 (no overlongs, surrogates or code points
/// above U+10FFFF). On failure *ErrorOffset (if given) is the offset of the
/// first byte of the bad sequence.
bool isValidUtf8(std::string_view S, size_t *ErrorOffset = nullptr);

/// Length of the well-formed UTF-8 sequence at P (Unicode table 3-7), or 0.
/// Needs P < End and *P >= 0x80.
size_t utf8SequenceLength(const char *P, const char *End);

/// Appends code point CP (at most U+10FFFF, no surrogate) as UTF-8.
void appendUtf8(std::string &Out, uint32_t CP);

} // namespace mlbridge::support

#endif // MLBRIDGE_SUPPORT_UTF8_H
