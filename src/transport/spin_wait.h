//===- spin_wait.h - Bounded, adaptive spinning before sleeping (internal) -===//
//
// Waking a sleeping reader costs tens of µs on an idle VM; polling for a
// few µs instead avoids it when the answer is quick. On a loaded machine
// the same polling steals the CPU the peer needs. SpinBudget keeps the
// polling where it pays: the budget (at most Max) halves after a wait the
// spin could not have shortened (the data came later than Max) and doubles
// after a wait that ended soon after the spin gave up. A budget of zero
// still probes now and then, so a machine that became idle gets the spin
// back. No spin ever outlives the wait's deadline: callers check it.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SRC_TRANSPORT_SPIN_WAIT_H
#define MLBRIDGE_SRC_TRANSPORT_SPIN_WAIT_H

#include <algorithm>
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
  explicit SpinBudget(Micros Max) : Max(Max), Budget(Max) {}

  /// How long the next wait should spin.
  Micros next() {
    if (Budget.count() == 0 && Max.count() > 0 && ++Idle % kProbeEvery == 0)
      return Max; // probe: has the machine become quiet?
    return Budget;
  }
  /// After a wait: whether the spin caught the data, and how long the
  /// whole wait took.
  void update(bool CaughtBySpin, Micros Waited) {
    if (CaughtBySpin)
      Budget = std::max(Budget, std::min(Max, Waited * 2));
    else if (Waited <= Max)
      Budget = std::min(Max, std::max(Budget * 2, Micros(1)));
    else
      Budget = Budget / 2;
  }

private:
  static constexpr unsigned kProbeEvery = 64;
  Micros Max, Budget;
  unsigned Idle = 0;
};

} // namespace mlbridge

#endif // MLBRIDGE_SRC_TRANSPORT_SPIN_WAIT_H
