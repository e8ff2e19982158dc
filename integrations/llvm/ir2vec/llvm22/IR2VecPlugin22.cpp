//===- IR2VecPlugin22.cpp - LLVM's own IR2Vec embedder for opt-22 ---------===//
//
// MLBridgeIR2Vec.so built against LLVM 22 (lib/llvm22-plugins/): the same
// module pass "mlbridge-ir2vec" and output file (../EmbeddingsJson.h) as the
// LLVM 19 plugin, but the vectors come from LLVM's own embedder
// (llvm/Analysis/IR2Vec.h) and its vocabulary loader:
//
//   opt-22 -load-pass-plugin=lib/llvm22-plugins/MLBridgeIR2Vec.so
//     -passes=mlbridge-ir2vec
//     -ir2vec-vocab-path=.deps/ir2vec/seedEmbeddingVocab.json
//     -mlbridge-ir2vec-out=vectors.json [-mlbridge-ir2vec-kind=flow-aware]
//     [-mlbridge-ir2vec-blocks] -disable-output module.bc
//
// LLVM reports a missing or malformed vocabulary itself ("Error reading
// vocabulary: ..."); the weights are LLVM's -ir2vec-*-weight options.
//
//===----------------------------------------------------------------------===//
#include "EmbeddingsJson.h"

#include "llvm/Analysis/IR2Vec.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Plugins/PassPlugin.h" // LLVM 22 moved it from llvm/Passes/
#include "llvm/Support/CommandLine.h"

using namespace llvm;
using mlbridge::ir2vec::EmbeddingsReport;

namespace {

cl::opt<std::string> OutPath("mlbridge-ir2vec-out",
                             cl::desc("Where mlbridge-ir2vec writes the vectors (JSON)"));
cl::opt<std::string> KindName("mlbridge-ir2vec-kind", cl::init("symbolic"),
                              cl::desc("symbolic | flow-aware"));
cl::opt<bool> WithBlocks("mlbridge-ir2vec-blocks", cl::init(false),
                         cl::desc("Also write every basic block's vector"));

class IR2VecPass : public PassInfoMixin<IR2VecPass> {
public:
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &MAM) {
    LLVMContext &Ctx = M.getContext();
    if (OutPath.empty()) {
      Ctx.emitError("mlbridge-ir2vec: no output file: give -mlbridge-ir2vec-out=<file.json>");
      return PreservedAnalyses::all();
    }
    if (KindName != "symbolic" && KindName != "flow-aware") {
      Ctx.emitError("mlbridge-ir2vec: -mlbridge-ir2vec-kind='" + KindName +
                    "': expected symbolic or flow-aware");
      return PreservedAnalyses::all();
    }
    const ir2vec::Vocabulary &Vocab = MAM.getResult<IR2VecVocabAnalysis>(M);
    if (!Vocab.isValid())
      return PreservedAnalyses::all(); // LLVM has reported why
    const IR2VecKind Kind =
        KindName == "flow-aware" ? IR2VecKind::FlowAware : IR2VecKind::Symbolic;

    EmbeddingsReport R;
    R.LLVMVersion = LLVM_VERSION_STRING;
    R.Embedder = "llvm";
    R.Kind = KindName;
    R.Dimension = Vocab.getDimension();
    R.Weights[0] = ir2vec::OpcWeight;
    R.Weights[1] = ir2vec::TypeWeight;
    R.Weights[2] = ir2vec::ArgWeight;
    R.WithBlocks = WithBlocks;
    R.Module.assign(R.Dimension, 0.0);
    for (const Function &F : M) {
      if (F.isDeclaration())
        continue;
      // A fresh embedder per function, asked for the function first: the
      // flow-aware cache then fills in the same order as ours (depth first).
      auto E = ir2vec::Embedder::create(Kind, F, Vocab);
      mlbridge::ir2vec::FunctionVectors FV;
      FV.Name = F.getName().str();
      FV.Function = E->getFunctionVector().getData();
      if (WithBlocks)
        for (const BasicBlock &BB : F)
          FV.Blocks.push_back(E->getBBVector(BB).getData());
      for (size_t I = 0; I < R.Module.size(); ++I)
        R.Module[I] += FV.Function[I];
      R.Functions.push_back(std::move(FV));
    }
    if (mlbridge::Status S = mlbridge::ir2vec::writeReport(R, OutPath))
      Ctx.emitError("mlbridge-ir2vec: " + S.toString());
    return PreservedAnalyses::all();
  }
  static bool isRequired() { return true; }
};

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK __attribute__((visibility("default")))
::llvm::PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "MLBridgeIR2Vec", LLVM_VERSION_STRING,
          [](PassBuilder &PB) {
            PB.registerPipelineParsingCallback(
                [](StringRef Name, ModulePassManager &MPM,
                   ArrayRef<PassBuilder::PipelineElement>) {
                  if (Name != "mlbridge-ir2vec")
                    return false;
                  MPM.addPass(IR2VecPass());
                  return true;
                });
          }};
}
