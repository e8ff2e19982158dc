// The unroll count of each innermost loop, chosen by a model: the loop's
// features go out, an action (an index into Counts) comes back and becomes
// the loop's llvm.loop.unroll.count, which LLVM's unroller applies as far as
// it is legal. No answer, or no model: LLVM decides, as without the plugin.
#include "mlbridge/llvm/Decision.h"
#include "mlbridge/llvm/Features.h"
#include "mlbridge/llvm/PluginEntry.h"
#include "mlbridge/pipe_model_runner.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Transforms/Utils/LoopUtils.h"

#include <cstdlib>

using namespace llvm;
using namespace mlbridge::plugins;

namespace {
constexpr int64_t Counts[] = {1, 2, 4, 8};

// One per pass pipeline (no process-wide state: ThinLTO runs many at once).
struct Model {
  std::unique_ptr<mlbridge::ModelRunner> Runner;
  bool Failed = false;
};

struct UnrollCountPass : PassInfoMixin<UnrollCountPass> {
  std::shared_ptr<Model> M;

  PreservedAnalyses run(Function &F, FunctionAnalysisManager &AM) {
    const char *Channel = std::getenv("UNROLL_CHANNEL");
    if (!Channel || M->Failed)
      return PreservedAnalyses::all();
    if (!M->Runner) {
      auto R = mlbridge::PipeModelRunner::create(
          Channel, loopFeatureSpecs(), mlbridge::TensorSpec::create<int64_t>("action"));
      if (!R)
        return fail(R.status().message());
      M->Runner = std::move(*R);
    }
    LoopInfo &LI = AM.getResult<LoopAnalysis>(F);
    ScalarEvolution &SE = AM.getResult<ScalarEvolutionAnalysis>(F);
    for (Loop *L : LI.getLoopsInPreorder()) {
      if (!L->isInnermost() || hasUnrollTransformation(L) != TM_Unspecified)
        continue; // a pragma of the user's wins
      M->Runner->switchContext(decisionName(*L, LI));
      setFeatures(*M->Runner, loopFeatures(*L, SE));
      auto Action = M->Runner->evaluate<int64_t>();
      if (!Action)
        return fail(Action.status().message());
      if (*Action >= 0 && *Action < int64_t(std::size(Counts)))
        addStringMetadataToLoop(L, "llvm.loop.unroll.count", unsigned(Counts[*Action]));
    }
    return PreservedAnalyses::all(); // metadata only
  }

  PreservedAnalyses fail(const std::string &Why) {
    errs() << "warning: unroll-count: " << Why << "; LLVM decides from here on\n";
    M->Failed = true;
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
