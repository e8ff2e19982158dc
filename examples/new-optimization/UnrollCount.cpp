// The unroll count of each innermost loop, chosen by a model: the loop's
// features go out, an action (an index into Counts) comes back. Action 0
// leaves the loop to LLVM (no metadata: a model declines when unsure); the
// others become the loop's llvm.loop.unroll.count, which LLVM's unroller
// applies as far as it is legal. The model is the one the UNROLL_*
// environment variables name (UNROLL_CHANNEL: pipes, UNROLL_SOCKET: shared
// memory; runner_settings.h), else the model compiled in (CMake
// -DUNROLL_MODEL=file.onnx), else none: LLVM decides, as without the
// plugin. A failed request: LLVM decides the rest of the compile.
#include "mlbridge/feature_binding.h"
#include "mlbridge/llvm/Decision.h"
#include "mlbridge/llvm/Features.h"
#include "mlbridge/llvm/PluginEntry.h"
#include "mlbridge/runner_settings.h"
#ifdef MLBRIDGE_PLUGIN_HAS_MODEL
#include "UnrollCountModel.h" // generated from the ONNX model
#include "mlbridge/compiled_model_runner.h"
#endif

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Transforms/Utils/LoopUtils.h"

#include <optional>

using namespace llvm;
using namespace mlbridge::plugins;

namespace {
// 0: LLVM decides. Counts above 8 pay on callgrind's Ir (fewer compares and
// branches per element) where LLVM's own unrolling stops at 4 or 8.
constexpr int64_t Counts[] = {0, 1, 2, 4, 8, 16};

// One per pass pipeline (no process-wide state: ThinLTO runs many at once).
struct Model {
  std::optional<mlbridge::BoundRunner> Bound; // Runner null: no model named
};

struct UnrollCountPass : PassInfoMixin<UnrollCountPass> {
  std::shared_ptr<Model> M;

  PreservedAnalyses run(Function &F, FunctionAnalysisManager &AM) {
    if (!M->Bound) {
      mlbridge::RunnerSettings Runners;
#ifdef MLBRIDGE_PLUGIN_HAS_MODEL
      Runners.Runners.push_back(
          mlbridge::compiledRunnerFactory<mlbridge_model::UnrollCountModel>());
#endif
      M->Bound.emplace();
      auto Settings = mlbridge::readRunnerSettings("UNROLL", std::move(Runners));
      if (!Settings)
        return fail(Settings.status().message());
      // An in-process model takes the features it names, as floats if it
      // likes: the binding converts; over pipes it is every feature.
      auto B = mlbridge::makeBoundRunner(
          *Settings, loopFeatureSpecs(), mlbridge::defaultActionSpec(mlbridge::ActionRule::Value),
          "model", "unroll-count");
      if (!B)
        return fail(B.status().message());
      M->Bound = std::move(*B);
    }
    mlbridge::ModelRunner *R = M->Bound->Runner.get();
    if (!R)
      return PreservedAnalyses::all();
    LoopInfo &LI = AM.getResult<LoopAnalysis>(F);
    ScalarEvolution &SE = AM.getResult<ScalarEvolutionAnalysis>(F);
    for (Loop *L : LI.getLoopsInPreorder()) {
      if (!L->isInnermost() || hasUnrollTransformation(L) != TM_Unspecified)
        continue; // a pragma of the user's wins
      R->switchContext(decisionName(*L, LI));
      writeFeatures(*M->Bound, loopFeatures(*L, SE));
      // Auto: an action from Python, the best score from a compiled model.
      auto Action = R->evaluateAction(std::vector<bool>(std::size(Counts), true));
      if (!Action)
        return fail(Action.status().message());
      if (Counts[*Action] != 0)
        addStringMetadataToLoop(L, "llvm.loop.unroll.count", unsigned(Counts[*Action]));
    }
    return PreservedAnalyses::all(); // metadata only
  }

  PreservedAnalyses fail(const std::string &Why) {
    errs() << "warning: unroll-count: " << Why << "; LLVM decides from here on\n";
    M->Bound->Runner.reset();
    return PreservedAnalyses::all();
  }
};
} // namespace

// Before the vectorizer, hence before the loop unroller that reads the count.
PassPluginLibraryInfo mlbridge::plugins::passPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "UnrollCount", "1", [](PassBuilder &PB) {
            PB.registerVectorizerStartEPCallback(
                [M = std::make_shared<Model>()](FunctionPassManager &FPM, OptimizationLevel) {
                  FPM.addPass(UnrollCountPass{{}, M});
                });
          }};
}
