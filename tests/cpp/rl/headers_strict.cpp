// Compiled with -std=c++17 -fno-exceptions -fno-rtti -Wall -Wextra
// -Wpedantic -Werror by ctest: the RL API (and the example environment
// built on it) works in LLVM-style code.
#include "mlbridge/rl.h"
#include "toy_phase_ordering.h"

size_t runToy(mlbridge::ModelRunner &Pass, mlbridge::ModelRunner &Factor) {
  toy::PhaseOrderingEnv Env(toy::makeProgram(1));
  mlbridge::rl::Driver D(Env);
  (void)D.addAgent("pass", Pass);
  (void)D.addAgent("factor", Factor, mlbridge::rl::ActionRule::Argmax);
  mlbridge::rl::EpisodeOptions O;
  O.OnDecision = [](const mlbridge::rl::Action &) {};
  mlbridge::Expected<mlbridge::rl::EpisodeResult> R = D.runEpisode(O);
  return R ? R->Steps : 0;
}
