//===- mlbridge/diagnostics.h - Where the library's messages go -*- C++ -*-===//
//
// The library never writes to stdout (compilers stream their output there)
// and is silent by default. A caller that wants messages (fallbacks taken,
// peers that died, slow replies) installs a sink.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_DIAGNOSTICS_H
#define MLBRIDGE_DIAGNOSTICS_H

#include <functional>
#include <string_view>

namespace mlbridge {

enum class Severity { Note, Warning, Error };

/// "note", "warning" or "error".
const char *severityName(Severity S);

/// Receives one complete message per call, without a trailing newline.
using DiagnosticSink = std::function<void(Severity, std::string_view)>;

/// A sink that writes "mlbridge: <severity>: <message>\n" to stderr.
DiagnosticSink stderrDiagnostics();

} // namespace mlbridge

#endif // MLBRIDGE_DIAGNOSTICS_H
