// The unroll count of each innermost loop, chosen by a model: the loop's
// features go out, an action (an index into Counts) comes back and becomes
// the loop's llvm.loop.unroll.count, which LLVM's unroller applies as far as
// it is legal. The model is the one the UNROLL_* environment variables name
// (UNROLL_CHANNEL: pipes, UNROLL_SOCKET: shared memory; runner_settings.h);
// none, or a failed request: LLVM decides, as without the plugin.
#include "mlbridge/llvm/Decision.h"
#include "mlbridge/llvm/Features.h"
#include "mlbridge/llvm/PluginEntry.h"
#include "mlbridge/runner_settings.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Transforms/Utils/LoopUtils.h"

using namespace llvm;
using namespace mlbridge::plugins;

namespace {
constexpr int64_t Counts[] = {1, 2, 4, 8};

// One per pass pipeline (no process-wide state: ThinLTO runs many at once).
struct Model {
  std::unique_ptr<mlbridge::ModelRunner> Runner;
  bool Made = false;
};

struct UnrollCountPass : PassInfoMixin<UnrollCountPass> {
  std::shared_ptr<Model> M;

  PreservedAnalyses run(Function &F, FunctionAnalysisManager &AM) {
    if (!M->Made) {
      M->Made = true;
      auto Settings = mlbridge::readRunnerSettings("UNROLL");
      if (!Settings)
        return fail(Settings.status().message());
      auto R = mlbridge::makeRunner(*Settings, loopFeatureSpecs(),
                                    mlbridge::defaultActionSpec(mlbridge::ActionRule::Value));
      if (!R)
        return fail(R.status().message());
      M->Runner = std::move(*R); // null: no model named
    }
    if (!M->Runner)
      return PreservedAnalyses::all();
    LoopInfo &LI = AM.getResult<LoopAnalysis>(F);
    ScalarEvolution &SE = AM.getResult<ScalarEvolutionAnalysis>(F);
    for (Loop *L : LI.getLoopsInPreorder()) {
      if (!L->isInnermost() || hasUnrollTransformation(L) != TM_Unspecified)
        continue; // a pragma of the user's wins
      M->Runner->switchContext(decisionName(*L, LI));
      setFeatures(*M->Runner, loopFeatures(*L, SE));
      auto Action = M->Runner->evaluateAction(std::vector<bool>(std::size(Counts), true));
      if (!Action)
        return fail(Action.status().message());
      addStringMetadataToLoop(L, "llvm.loop.unroll.count", unsigned(Counts[*Action]));
    }
    return PreservedAnalyses::all(); // metadata only
  }

  PreservedAnalyses fail(const std::string &Why) {
    errs() << "warning: unroll-count: " << Why << "; LLVM decides from here on\n";
    M->Runner.reset();
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
