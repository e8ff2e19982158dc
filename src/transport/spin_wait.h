//===- spin_wait.h - Bounded spinning before sleeping, where it pays (internal) -===//
//
// Waking a sleeping reader costs tens of µs on an idle VM; polling for a
// few µs instead avoids it when the answer is quick. On a loaded machine
// the same polling steals the CPU the peer needs to produce the answer,
// and the wait gets longer. SpinBudget measures instead of guessing: it
// keeps an average of the whole wait (request sent -> reply seen) with
// spinning (up to Max) and with sleeping at once, uses the faster mode,
// and tries the other one every 16th wait so both averages stay current.
// Spinning must win clearly (by 1/8) to be chosen, and only while at least
// half of the spins see the answer within Max (a spin that runs out costs
// its whole length on top of the sleep). No spin ever outlives the wait's
// deadline (callers bound it); an idle channel sleeps.
//
// Nor does anything spin while more tasks are runnable than the machine has
// CPUs, plus one (the runnable count of /proc/loadavg, read at most every
// 20 ms per thread): there a spin only takes CPU time that someone -- often
// the peer it waits for -- needs, and the wait averages do not show that
// cost, which the peer pays.
//
// SpinPacer paces the looks of one spin: pause instructions for its first
// few µs, then the CPU is given away between looks (sched_yield). On a
// machine with as many busy processes as CPUs -- several compilers, one
// model -- a spinner must not keep the peer it waits for from running.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SRC_TRANSPORT_SPIN_WAIT_H
#define MLBRIDGE_SRC_TRANSPORT_SPIN_WAIT_H

#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

namespace mlbridge {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// The runnable-task count of a /proc/loadavg line ("0.52 0.41 0.30 3/241
/// 1234": 3), or -1 if the line is not one.
inline long runnableFromLoadavg(const char *Line) {
  const char *Slash = std::strchr(Line, '/');
  if (!Slash)
    return -1;
  const char *Begin = Slash;
  while (Begin > Line && Begin[-1] >= '0' && Begin[-1] <= '9')
    --Begin;
  return Begin == Slash ? -1 : std::strtol(Begin, nullptr, 10);
}

/// True while more tasks are runnable than there are CPUs plus one.
/// Sampled at most every 20 ms per thread; false when it cannot be read.
inline bool cpusCrowded() {
  using Clock = std::chrono::steady_clock;
  thread_local Clock::time_point NextLook;
  thread_local bool Crowded = false;
  const auto Now = Clock::now();
  if (Now < NextLook)
    return Crowded;
  NextLook = Now + std::chrono::milliseconds(20);
  Crowded = false;
  int Fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (Fd < 0)
    return Crowded;
  char Line[128];
  const ssize_t N = ::read(Fd, Line, sizeof Line - 1);
  ::close(Fd);
  if (N <= 0)
    return Crowded;
  Line[N] = 0;
  static const long Cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  const long Runnable = runnableFromLoadavg(Line);
  Crowded = Cpus > 0 && Runnable > Cpus + 1;
  return Crowded;
}

class SpinBudget {
public:
  using Micros = std::chrono::microseconds;
  /// Crowded: whether the CPUs are too busy to spin (replaceable in tests).
  explicit SpinBudget(Micros Max, bool (*Crowded)() = cpusCrowded)
      : Max(Max), Crowded(Crowded) {}

  /// How long the next wait should spin (Max or zero).
  Micros next() {
    if (Max.count() == 0)
      return Max;
    if (Crowded()) {
      Spinning = false;
      return Micros(0);
    }
    Spinning = (++Waits % kTryOtherEvery == 0) ? !spinningWins() : spinningWins();
    return Spinning ? Max : Micros(0);
  }
  /// After the wait next() was asked for: how long it took in all.
  void update(Micros Waited) {
    double &Avg = Spinning ? SpinAvg : SleepAvg;
    Avg = Avg < 0 ? double(Waited.count())
                  : Avg + (double(Waited.count()) - Avg) / 8;
    if (Spinning)
      HitAvg += ((Waited <= Max ? 1.0 : 0.0) - HitAvg) / 8;
  }

private:
  static constexpr unsigned kTryOtherEvery = 16;
  bool spinningWins() const {
    if (HitAvg < 0.5)
      return false;
    return SpinAvg < 0 || SleepAvg < 0 || SpinAvg < SleepAvg * 7 / 8;
  }
  Micros Max;
  bool (*Crowded)();
  double SpinAvg = -1, SleepAvg = -1; // µs; -1: not measured yet
  double HitAvg = 1;                  // share of spins answered within Max
  unsigned Waits = 0;
  bool Spinning = false;
};

class SpinPacer {
public:
  using Clock = std::chrono::steady_clock;
  /// A spin that began at Start and must end by End.
  SpinPacer(Clock::time_point Start, Clock::time_point End)
      : YieldFrom(Start + kPauseOnly), End(End) {}
  /// Waits a little before the next look; false once the spin is over.
  bool pause() {
    const auto Now = Clock::now();
    if (Now >= End)
      return false;
    if (Now < YieldFrom)
      cpuRelax();
    else
      sched_yield();
    return true;
  }

private:
  static constexpr std::chrono::microseconds kPauseOnly{3};
  Clock::time_point YieldFrom, End;
};

} // namespace mlbridge

#endif // MLBRIDGE_SRC_TRANSPORT_SPIN_WAIT_H
