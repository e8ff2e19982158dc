//===- spin_wait.h - Bounded spinning before sleeping, where it pays (internal) -===//
//
// Waking a sleeping reader costs tens of µs on an idle VM; polling for a
// few µs instead avoids it when the answer is quick. On a loaded machine
// the same polling steals the CPU the peer needs to produce the answer,
// and the wait gets longer. SpinBudget measures instead of guessing: it
// keeps an average of the whole wait (request sent -> reply seen) with
// spinning (up to Max) and with sleeping at once, uses the faster mode,
// and tries the other one every 16th wait so both averages stay current.
// Spinning must win clearly (by 1/8) to be chosen. No spin ever outlives
// the wait's deadline (callers check it); an idle channel sleeps.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SRC_TRANSPORT_SPIN_WAIT_H
#define MLBRIDGE_SRC_TRANSPORT_SPIN_WAIT_H

#include <chrono>

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
  }

private:
  static constexpr unsigned kTryOtherEvery = 16;
  bool spinningWins() const {
    return SpinAvg < 0 || SleepAvg < 0 || SpinAvg < SleepAvg * 7 / 8;
  }
  Micros Max;
  double SpinAvg = -1, SleepAvg = -1; // µs; -1: not measured yet
  unsigned Waits = 0;
  bool Spinning = false;
};

} // namespace mlbridge

#endif // MLBRIDGE_SRC_TRANSPORT_SPIN_WAIT_H
