//===- toy_phase_ordering.h - A two-agent RL environment --------*- C++ -*-===//
//
// A toy phase-ordering "pass": a program is eight counters (instructions,
// loads, stores, branches, calls, loops, constants, dead instructions); each
// decision applies an optimization that changes them. Two agents act:
//
//   "pass"   picks dce, constprop, inline, licm, unroll or stop;
//   "factor" picks the unroll factor (2, 4, 8) right after "pass" chose
//            unroll -- the environment hands over to it, then back.
//
// Both observe "obs": float[1,8] = log1p(counter) / 5. Nothing here knows
// which model answers: the same class runs against Python agents over pipes
// and against ONNX agents in-process (swap_runner.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_EXAMPLES_RL_TOY_PHASE_ORDERING_H
#define MLBRIDGE_EXAMPLES_RL_TOY_PHASE_ORDERING_H

#include "mlbridge/rl.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace toy {

enum Counter { Insts, Loads, Stores, Branches, Calls, Loops, Consts, Dead };
enum PassAction { DCE, ConstProp, Inline, LICM, Unroll, Stop, NumPasses };
inline constexpr int NumFactors = 3; // unroll by 2 << index

using Program = std::array<int64_t, 8>;

/// A deterministic pseudo-random program for Seed.
inline Program makeProgram(uint64_t Seed) {
  uint64_t X = Seed * 6364136223846793005ULL + 1442695040888963407ULL;
  auto Next = [&X](uint64_t Mod) {
    X = X * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((X >> 33) % Mod);
  };
  Program P{};
  P[Insts] = 30 + Next(600);
  P[Loads] = P[Insts] * (5 + Next(40)) / 100;
  P[Stores] = P[Insts] * (2 + Next(18)) / 100;
  P[Branches] = P[Insts] * (2 + Next(28)) / 100;
  P[Calls] = Next(10);
  P[Loops] = Next(5);
  P[Consts] = P[Insts] * Next(40) / 100;
  P[Dead] = P[Insts] * Next(30) / 100;
  return P;
}

/// One decision as taken: agent and action.
struct Decision {
  std::string Agent;
  int64_t Action;
};

class PhaseOrderingEnv final : public mlbridge::rl::Environment {
public:
  explicit PhaseOrderingEnv(Program Start, size_t MaxDecisions = 16)
      : Start(Start), MaxDecisions(MaxDecisions) {}

  mlbridge::Status reset() override {
    State = Start;
    Trace.clear();
    setNextAgent("pass");
    return mlbridge::Status::ok();
  }

  mlbridge::Status observe(mlbridge::ModelRunner &Runner) override {
    for (size_t I = 0; I < State.size(); ++I)
      Obs[I] = static_cast<float>(std::log1p(static_cast<double>(State[I])) / 5.0);
    // The same call feeds an ONNX input float[1,8] and a pipe feature.
    return Runner.setFeature("obs", Obs);
  }

  mlbridge::Status step(const mlbridge::rl::Action &A) override {
    const bool IsPass = A.Agent == "pass";
    const int64_t Limit = IsPass ? NumPasses : NumFactors;
    if (A.Index < 0 || A.Index >= Limit)
      return mlbridge::Status(mlbridge::ErrorCode::InvalidArgument,
                              "action " + std::to_string(A.Index) +
                                  " out of range for agent '" +
                                  std::string(A.Agent) + "'");
    Trace.push_back({std::string(A.Agent), A.Index});
    if (IsPass)
      applyPass(static_cast<PassAction>(A.Index));
    else
      applyUnroll(int64_t(2) << A.Index);
    if (Trace.size() >= MaxDecisions)
      setDone();
    return mlbridge::Status::ok();
  }

  /// Without a model: stop optimizing (the compiler's safe default).
  std::optional<int64_t> fallbackAction() override {
    return nextAgent() == "pass" ? int64_t(Stop) : int64_t(0);
  }

  const Program &state() const { return State; }
  const std::vector<Decision> &trace() const { return Trace; }

private:
  void applyPass(PassAction P) {
    Program &S = State;
    switch (P) {
    case DCE:
      S[Insts] -= S[Dead];
      S[Dead] = 0;
      break;
    case ConstProp: {
      int64_t K = S[Consts] / 2;
      S[Consts] -= K;
      S[Dead] += K;
      S[Branches] -= S[Branches] / 5;
      break;
    }
    case Inline:
      S[Insts] += S[Calls] * 6;
      S[Dead] += S[Calls] * 2;
      S[Consts] += S[Calls];
      S[Calls] = 0;
      break;
    case LICM:
      S[Loads] -= S[Loads] / 3;
      break;
    case Unroll:
      setNextAgent("factor"); // the factor agent decides how much
      break;
    case Stop:
    case NumPasses:
      setDone();
      break;
    }
  }

  void applyUnroll(int64_t Factor) {
    State[Insts] += State[Loops] * Factor * 4;
    State[Consts] += Factor;
    State[Loops] = 0;
    setNextAgent("pass");
  }

  Program Start;
  Program State{};
  size_t MaxDecisions;
  std::vector<float> Obs = std::vector<float>(8);
  std::vector<Decision> Trace;
};

} // namespace toy

#endif // MLBRIDGE_EXAMPLES_RL_TOY_PHASE_ORDERING_H
