//===- deadline.h - Waiting against a deadline (internal) -----------------===//
//
// What every transport's waits share: the clock, a deadline as a poll()
// timeout, and the backoff of a wait for something that has no descriptor
// to poll (a FIFO or socket that does not exist yet, a full listen queue).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SRC_TRANSPORT_DEADLINE_H
#define MLBRIDGE_SRC_TRANSPORT_DEADLINE_H

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <string>
#include <thread>

namespace mlbridge {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

/// Milliseconds left until Until for poll(); 0 once it has passed. Rounded
/// up, so a wait never ends just before its deadline.
inline int millisUntil(Deadline Until) {
  auto Left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  Until - Clock::now())
                  .count();
  if (Left <= 0)
    return 0;
  return static_cast<int>(std::min<long long>(Left + 1, INT_MAX));
}

/// Milliseconds since Start, for messages that say how long was waited.
inline long long millisSince(Clock::time_point Start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() -
                                                               Start)
      .count();
}

/// Sleeps for the next step of a 1 ms .. 20 ms backoff (Step starts at
/// 1 ms), never past Until.
inline void backoff(std::chrono::microseconds &Step, Deadline Until) {
  auto Left = std::chrono::duration_cast<std::chrono::microseconds>(
      Until - Clock::now());
  std::this_thread::sleep_for(std::min(Step, std::max(Left, {})));
  Step = std::min(Step * 2, std::chrono::microseconds(20000));
}

inline std::string errnoText(int E) { return std::strerror(E); }

} // namespace mlbridge

#endif // MLBRIDGE_SRC_TRANSPORT_DEADLINE_H
