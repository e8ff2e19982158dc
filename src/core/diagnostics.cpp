#include "mlbridge/diagnostics.h"

#include "support/enum_names.h"

#include <cstdio>
#include <string>

namespace mlbridge {

const char *severityName(Severity S) {
  static constexpr const char *Names[] = {"note", "warning", "error"};
  return support::enumName<Severity::Error>(S, Names);
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
