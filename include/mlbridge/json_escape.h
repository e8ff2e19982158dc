//===- mlbridge/json_escape.h - JSON string escaping ------------*- C++ -*-===//
//
// The library's one JSON string escaper, for code that writes JSON next to
// the library's (the LLVM plugins' logs, test reports): escapes exactly as
// LLVM's llvm::json does, so every JSON text the project writes agrees.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_JSON_ESCAPE_H
#define MLBRIDGE_JSON_ESCAPE_H

#include <string>
#include <string_view>

namespace mlbridge {

/// Appends S escaped for the inside of a JSON string (no quotes): `"` and
/// `\` get a backslash, tab, newline and carriage return their short
/// escapes, other bytes below 0x20 `\u00xx` (lower-case hex); all other
/// bytes (DEL, UTF-8) are copied. S should be valid UTF-8.
void appendJsonEscaped(std::string &Out, std::string_view S);

/// S escaped as appendJsonEscaped does, as a new string.
std::string jsonEscape(std::string_view S);

} // namespace mlbridge

#endif // MLBRIDGE_JSON_ESCAPE_H
