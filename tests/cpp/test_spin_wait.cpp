// SpinBudget (spin or sleep, measured) and SpinPacer (the looks of one
// bounded spin), src/transport/spin_wait.h.
#include "transport/spin_wait.h"

#include <gtest/gtest.h>

namespace mlbridge {
namespace {

using Micros = SpinBudget::Micros;

bool idle() { return false; }
bool crowded() { return true; }

TEST(SpinBudget, ZeroMaxNeverSpins) {
  SpinBudget B(Micros(0), idle);
  for (int I = 0; I < 40; ++I) {
    EXPECT_EQ(B.next(), Micros(0));
    B.update(Micros(5));
  }
}

// Feeds `Waits` waits: spinning ones take SpinUs, sleeping ones SleepUs.
// Returns how many of the last 32 spun.
int spinsAfter(SpinBudget &B, int Waits, long SpinUs, long SleepUs) {
  int Spun = 0;
  for (int I = 0; I < Waits; ++I) {
    const bool Spin = B.next().count() > 0;
    B.update(Micros(Spin ? SpinUs : SleepUs));
    if (I >= Waits - 32)
      Spun += Spin;
  }
  return Spun;
}

// How many of the last 32 of 200 waits spin, given how long spinning and
// sleeping waits take. Every 16th wait tries the other mode.
struct SpinCase {
  const char *Name;
  long SpinUs, SleepUs;
  bool (*Crowded)();
  int Spun;
};

class SpinBudgetChoice : public ::testing::TestWithParam<SpinCase> {};

TEST_P(SpinBudgetChoice, SpinsOnlyWhereItPays) {
  const SpinCase &C = GetParam();
  SpinBudget B(Micros(50), C.Crowded);
  EXPECT_EQ(spinsAfter(B, 200, C.SpinUs, C.SleepUs), C.Spun);
}

INSTANTIATE_TEST_SUITE_P(
    SpinBudget, SpinBudgetChoice,
    ::testing::Values(
        // 30 of the last 32 spin (2 try sleeping).
        SpinCase{"SpinsWhileSpinningIsClearlyFaster", 5, 40, idle, 30},
        SpinCase{"SleepsWhenSpinningIsNotFaster", 38, 40, idle, 2},
        // Spinning waits average less than sleeping ones, but they end
        // after the 50 µs budget: the spin is pure cost on top of a
        // sleep, so no.
        SpinCase{"StopsSpinningWhenMostSpinsRunOut", 60, 200, idle, 2},
        SpinCase{"NeverSpinsWhileTheCpusAreCrowded", 5, 40, crowded, 0}),
    [](const auto &Info) { return std::string(Info.param.Name); });

TEST(SpinBudget, ReadsTheRunnableCountOfLoadavg) {
  EXPECT_EQ(runnableFromLoadavg("0.52 0.41 0.30 3/241 1234\n"), 3);
  EXPECT_EQ(runnableFromLoadavg("15.40 8.59 5.81 12/193 18459"), 12);
  EXPECT_EQ(runnableFromLoadavg("0.00 0.00 0.00"), -1);
  EXPECT_EQ(runnableFromLoadavg("/"), -1);
}

TEST(SpinPacer, EndsAtItsEndAndNotBefore) {
  using Clock = SpinPacer::Clock;
  const auto Start = Clock::now();
  SpinPacer Over(Start, Start);
  EXPECT_FALSE(Over.pause());

  // Long enough to pass from pause instructions to yielding.
  const auto End = Start + std::chrono::microseconds(2000);
  SpinPacer Pacer(Start, End);
  long Looks = 0;
  while (Pacer.pause())
    ++Looks;
  EXPECT_GT(Looks, 0);
  EXPECT_GE(Clock::now(), End);
  EXPECT_FALSE(Pacer.pause());
}

} // namespace
} // namespace mlbridge
