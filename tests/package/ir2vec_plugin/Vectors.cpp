// The pass "vectors": for each function with a loop, one line on stderr
// "<function> <vocabulary> <dimension> <|function vector|> <|outermost loop vector|>",
// or the error when the vocabulary cannot be read. For the test only.
#include "mlbridge/llvm/PluginEntry.h"
#include "mlbridge/llvm/ir2vec/PluginEmbeddings.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace llvm;

namespace {
double norm(const mlbridge::ir2vec::Vector &V) {
  double S = 0;
  for (double X : V)
    S += X * X;
  return std::sqrt(S);
}

struct VectorsPass : PassInfoMixin<VectorsPass> {
  PreservedAnalyses run(Function &F, FunctionAnalysisManager &AM) {
    LoopInfo &LI = AM.getResult<LoopAnalysis>(F);
    if (LI.empty())
      return PreservedAnalyses::all();
    auto E = mlbridge::ir2vec::PluginEmbeddings::create();
    if (!E) {
      errs() << "error: " << E.status().toString() << "\n";
      return PreservedAnalyses::all();
    }
    errs() << F.getName() << " " << (*E)->vocabularyPath() << " " << (*E)->dimension() << " "
           << norm((*E)->function(F)) << " " << norm((*E)->loop(**LI.begin())) << "\n";
    return PreservedAnalyses::all();
  }
};
} // namespace

PassPluginLibraryInfo mlbridge::plugins::passPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "Vectors", "1", [](PassBuilder &PB) {
            PB.registerPipelineParsingCallback(
                [](StringRef Name, FunctionPassManager &FPM, ArrayRef<PassBuilder::PipelineElement>) {
                  if (Name != "vectors")
                    return false;
                  FPM.addPass(VectorsPass());
                  return true;
                });
          }};
}
