//===- swap_runner.cpp - Swap the runner, keep the pass --------------------===//
//
// Runs the toy phase-ordering environment (toy_phase_ordering.h) on a few
// programs with two agents, "pass" and "factor", reached through either
//
//   --pipe BASE   Python agents over named pipes (training): the channels
//                 BASE.pass and BASE.factor, served by python_agent.py;
//   --onnx DIR    the exported agents in-process (deployment):
//                 DIR/rl_pass_agent.onnx and DIR/rl_factor_agent.onnx.
//
// The environment and the driver are the same in both modes; only the two
// lines that make the runners differ. Prints one JSON line per episode:
//   {"program":0,"decisions":[["pass",0],["pass",4],["factor",1],...],
//    "fallbacks":0,"final":[...counters...]}
//
//===----------------------------------------------------------------------===//

#include "toy_phase_ordering.h"

#include "mlbridge/pipe_model_runner.h"
#ifdef MLBRIDGE_EXAMPLE_HAS_ONNX
#include "mlbridge/onnx_model_runner.h"
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

using namespace mlbridge;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: mlbridge-rl-example (--pipe BASE | --onnx MODEL_DIR) "
               "[--programs N] [--first SEED]\n");
  return 2;
}

Expected<std::unique_ptr<ModelRunner>> makeRunner(const std::string &Mode,
                                                  const std::string &Where,
                                                  const std::string &Agent) {
  if (Mode == "--pipe") {
    PipeOptions O;
    O.OpenTimeout = std::chrono::seconds(20);
    O.ReplyTimeout = std::chrono::seconds(20);
    auto R = PipeModelRunner::create(Where + "." + Agent, {}, std::nullopt, O);
    if (!R)
      return R.takeStatus();
    return std::unique_ptr<ModelRunner>(std::move(*R));
  }
#ifdef MLBRIDGE_EXAMPLE_HAS_ONNX
  auto R = OnnxModelRunner::create(Where + "/rl_" + Agent + "_agent.onnx");
  if (!R)
    return R.takeStatus();
  return std::unique_ptr<ModelRunner>(std::move(*R));
#else
  return Status(ErrorCode::InvalidArgument,
                "built without ONNX Runtime (MLBRIDGE_ENABLE_ONNX=OFF)");
#endif
}

} // namespace

int main(int argc, char **argv) {
  std::string Mode, Where;
  long Programs = 5, First = 0;
  for (int I = 1; I < argc; ++I) {
    if ((!std::strcmp(argv[I], "--pipe") || !std::strcmp(argv[I], "--onnx")) &&
        I + 1 < argc) {
      Mode = argv[I];
      Where = argv[++I];
    } else if (!std::strcmp(argv[I], "--programs") && I + 1 < argc) {
      Programs = std::strtol(argv[++I], nullptr, 10);
    } else if (!std::strcmp(argv[I], "--first") && I + 1 < argc) {
      First = std::strtol(argv[++I], nullptr, 10);
    } else {
      return usage();
    }
  }
  if (Mode.empty() || Programs < 0)
    return usage();

  // The only mode-specific lines: which runner each agent uses.
  auto PassRunner = makeRunner(Mode, Where, "pass");
  auto FactorRunner = makeRunner(Mode, Where, "factor");
  if (!PassRunner || !FactorRunner) {
    std::fprintf(stderr, "error: %s\n",
                 (!PassRunner ? PassRunner : FactorRunner)
                     .status().toString().c_str());
    return 1;
  }

  for (long P = First; P < First + Programs; ++P) {
    toy::PhaseOrderingEnv Env(toy::makeProgram(static_cast<uint64_t>(P)));
    rl::Driver Driver(Env);
    Driver.addAgent("pass", **PassRunner);
    Driver.addAgent("factor", **FactorRunner);
    rl::EpisodeOptions Opts;
    Opts.Context = "program" + std::to_string(P);
    Expected<rl::EpisodeResult> R = Driver.runEpisode(Opts);
    if (!R) {
      std::fprintf(stderr, "error: program %ld: %s\n", P,
                   R.status().toString().c_str());
      return 1;
    }
    std::string Line = "{\"program\":" + std::to_string(P) + ",\"decisions\":[";
    for (size_t K = 0; K < Env.trace().size(); ++K)
      Line += (K ? ",[\"" : "[\"") + Env.trace()[K].Agent + "\"," +
              std::to_string(Env.trace()[K].Action) + "]";
    Line += "],\"fallbacks\":" + std::to_string(R->FallbackSteps) +
            ",\"final\":[";
    for (size_t K = 0; K < Env.state().size(); ++K)
      Line += (K ? "," : "") + std::to_string(Env.state()[K]);
    Line += "]}\n";
    std::fputs(Line.c_str(), stdout);
    std::fflush(stdout);
  }
  return 0;
}
