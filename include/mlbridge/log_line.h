//===- mlbridge/log_line.h - An integration's one log line ------*- C++ -*-===//
//
// Every integration reports what it did in one JSON object on one line,
// appended to a file the user names (never stdout), so that the lines of
// many concurrent compiler processes can be collected in one file.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_LOG_LINE_H
#define MLBRIDGE_LOG_LINE_H

#include "mlbridge/status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge {

/// The one log line of every integration: a JSON object on one line,
///   {"integration":"<name>","module":"<input>","runner":"<kind>",
///    "asked":N,"fallbacks":N, <the integration's own fields>}
/// (docs/llvm-plugins.md, docs/mlir.md, docs/c-tool.md).
class LogLine {
public:
  LogLine(std::string_view Integration, std::string_view Module,
          std::string_view Runner, uint64_t Asked, uint64_t Fallbacks);
  LogLine &add(std::string_view Key, int64_t V);
  LogLine &add(std::string_view Key, std::string_view V);
  LogLine &add(std::string_view Key, const std::vector<int64_t> &V);
  /// The line, without the newline.
  std::string str() const { return Text + "}"; }

private:
  void key(std::string_view Key);
  std::string Text;
};

/// Appends Line and a newline to the file at Path with one write call
/// (O_APPEND), so lines of concurrent compiler processes do not interleave.
Status appendLine(const std::string &Path, const std::string &Line);

} // namespace mlbridge

#endif // MLBRIDGE_LOG_LINE_H
