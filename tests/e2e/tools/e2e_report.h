//===- e2e_report.h - JSON result lines of the e2e compiler programs ------===//
//
// The e2e "compiler" programs (pipe and gRPC) print one JSON object per
// result on stdout; the pytest side parses them. Shared helpers for that.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_TESTS_E2E_REPORT_H
#define MLBRIDGE_TESTS_E2E_REPORT_H

#include "mlbridge/status.h"

#include "mlbridge/json_escape.h"

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

#include <unistd.h>

namespace e2e {

using Clock = std::chrono::steady_clock;

inline double msSince(Clock::time_point T) {
  return std::chrono::duration<double, std::milli>(Clock::now() - T).count();
}

using mlbridge::jsonEscape;

/// {"event":"error","where":...,"code":...,"message":...,"elapsed_ms":...}
inline void printError(const char *Where, const mlbridge::Status &S,
                       double Ms) {
  std::printf("{\"event\":\"error\",\"where\":\"%s\",\"code\":\"%s\","
              "\"message\":\"%s\",\"elapsed_ms\":%.1f}\n",
              Where, mlbridge::errorCodeName(S.code()),
              jsonEscape(S.message()).c_str(), Ms);
  std::fflush(stdout);
}

/// Resident set size of this process in KiB (Linux /proc).
inline long rssKiB() {
  long Pages = 0, Resident = 0;
  if (FILE *F = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(F, "%ld %ld", &Pages, &Resident) != 2)
      Resident = 0;
    std::fclose(F);
  }
  return Resident * (::sysconf(_SC_PAGESIZE) / 1024);
}

/// The "soak" scenario: Count requests of {"i": k} (k pseudo-random) on
/// runners made by Make() (features "i", advice "twice", both int64),
/// expecting 2k, through whatever faults the model side injects: after an
/// error that makes the runner unavailable it is replaced (a new session)
/// and the requests go on. Prints each wrong answer at once and then one
/// summary: right and wrong answers, sessions, errors by code, RSS after
/// the first 1% of requests and at the end. True if no answer was wrong.
template <typename MakeRunner>
bool soakRequests(int64_t Count, MakeRunner Make) {
  uint64_t Right = 0, Wrong = 0, Sessions = 0;
  std::map<std::string, uint64_t> Errors;
  long RssEarly = 0;
  uint64_t X = 88172645463325252ull; // xorshift64
  decltype(Make()) Runner;
  for (int64_t K = 0; K < Count; ++K) {
    if (!Runner) {
      Runner = Make();
      if (!Runner)
        return false;
      ++Sessions;
    }
    X ^= X << 13, X ^= X >> 7, X ^= X << 17;
    const int64_t I = static_cast<int64_t>(X >> 20);
    *Runner->template getTensor<int64_t>(0) = I;
    mlbridge::Expected<int64_t> Got = Runner->template evaluate<int64_t>();
    if (!Got) {
      ++Errors[mlbridge::errorCodeName(Got.status().code())];
      if (Runner->isUnavailable())
        Runner.reset();
    } else if (*Got == 2 * I) {
      ++Right;
    } else {
      ++Wrong;
      std::printf("{\"event\":\"wrong\",\"k\":%" PRId64 ",\"i\":%" PRId64
                  ",\"got\":%" PRId64 "}\n",
                  K, I, *Got);
      std::fflush(stdout);
    }
    if (K == Count / 100)
      RssEarly = rssKiB();
  }
  std::string Codes;
  for (const auto &[Code, N] : Errors)
    Codes += (Codes.empty() ? "" : ",") + ("\"" + Code + "\":") +
             std::to_string(N);
  std::printf("{\"event\":\"soak\",\"right\":%" PRIu64 ",\"wrong\":%" PRIu64
              ",\"sessions\":%" PRIu64 ",\"errors\":{%s},"
              "\"rss_kib_early\":%ld,\"rss_kib_end\":%ld}\n",
              Right, Wrong, Sessions, Codes.c_str(), RssEarly, rssKiB());
  return Wrong == 0;
}

} // namespace e2e

#endif // MLBRIDGE_TESTS_E2E_REPORT_H
