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
// SpinPacer paces the looks of one spin: pause instructions for its first
// few µs, then the CPU is given away between looks (sched_yield). On a
// machine with as many busy processes as CPUs -- several compilers, one
// model -- a spinner must not keep the peer it waits for from running.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SRC_TRANSPORT_SPIN_WAIT_H
#define MLBRIDGE_SRC_TRANSPORT_SPIN_WAIT_H

#include <chrono>

#include <sched.h>

namespace mlbridge {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class SpinBudget {
public:
  using Micros = std::chrono::microseconds;
  explicit SpinBudget(Micros Max) : Max(Max) {}

  /// How long the next wait should spin (Max or zero).
  Micros next() {
    if (Max.count() == 0)
      return Max;
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
