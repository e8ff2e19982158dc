//===- e2e_report.h - JSON result lines of the e2e compiler programs ------===//
//
// The e2e "compiler" programs (pipe and gRPC) print one JSON object per
// result on stdout; the pytest side parses them. Shared helpers for that.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_TESTS_E2E_REPORT_H
#define MLBRIDGE_TESTS_E2E_REPORT_H

#include "mlbridge/status.h"

#include <chrono>
#include <cstdio>
#include <string>

namespace e2e {

using Clock = std::chrono::steady_clock;

inline double msSince(Clock::time_point T) {
  return std::chrono::duration<double, std::milli>(Clock::now() - T).count();
}

inline std::string jsonEscape(const std::string &S) {
  std::string Out;
  for (char C : S) {
    if (C == '"' || C == '\\') {
      Out += '\\';
      Out += C;
    } else if (static_cast<unsigned char>(C) < 0x20) {
      char Buf[8];
      std::snprintf(Buf, sizeof Buf, "\\u%04x", C);
      Out += Buf;
    } else {
      Out += C;
    }
  }
  return Out;
}

/// {"event":"error","where":...,"code":...,"message":...,"elapsed_ms":...}
inline void printError(const char *Where, const mlbridge::Status &S,
                       double Ms) {
  std::printf("{\"event\":\"error\",\"where\":\"%s\",\"code\":\"%s\","
              "\"message\":\"%s\",\"elapsed_ms\":%.1f}\n",
              Where, mlbridge::errorCodeName(S.code()),
              jsonEscape(S.message()).c_str(), Ms);
  std::fflush(stdout);
}

} // namespace e2e

#endif // MLBRIDGE_TESTS_E2E_REPORT_H
