#include "mlbridge/diagnostics.h"

#include <cstdio>
#include <string>

namespace mlbridge {

const char *severityName(Severity S) {
  switch (S) {
  case Severity::Note:
    return "note";
  case Severity::Warning:
    return "warning";
  case Severity::Error:
    return "error";
  }
  return "unknown";
}

DiagnosticSink stderrDiagnostics() {
  return [](Severity S, std::string_view Message) {
    // One fputs per message keeps lines whole when threads share stderr.
    std::string Line = "mlbridge: ";
    Line += severityName(S);
    Line += ": ";
    Line += Message;
    Line += '\n';
    std::fputs(Line.c_str(), stderr);
  };
}

} // namespace mlbridge
