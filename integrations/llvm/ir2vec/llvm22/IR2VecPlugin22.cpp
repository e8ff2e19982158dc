//===- IR2VecPlugin22.cpp - LLVM's own IR2Vec embedder for opt-22 ---------===//
//
// MLBridgeIR2Vec.so built against LLVM 22 (lib/llvm22-plugins/): the same
// module pass "mlbridge-ir2vec", options (../PassCommon.h) and output file
// (../EmbeddingsJson.h) as the LLVM 19 plugin, but the vectors come from
// LLVM's own embedder (llvm/Analysis/IR2Vec.h). Two vocabulary loaders:
//
//   opt-22 -load-pass-plugin=lib/llvm22-plugins/MLBridgeIR2Vec.so
//     -passes=mlbridge-ir2vec
//     [-ir2vec-vocab-path=.deps/ir2vec/seedEmbeddingVocab.json]
//     -mlbridge-ir2vec-out=vectors.json [-mlbridge-ir2vec-kind=flow-aware]
//     [-mlbridge-ir2vec-blocks] [-mlbridge-ir2vec-instructions]
//     -disable-output module.bc
//
//  * with LLVM's -ir2vec-vocab-path: LLVM's analysis (IR2VecVocabAnalysis)
//    loads it and reports a bad file itself ("Error reading vocabulary: ...");
//  * without: PluginEmbeddings (what other plugins use) loads
//    -mlbridge-ir2vec-vocab or the default one (EmbeddingBackend22.cpp).
// The two give the same vectors (tests/e2e/test_ir2vec.py); the weights are
// LLVM's -ir2vec-*-weight options either way.
//
//===----------------------------------------------------------------------===//
#include "PassCommon.h"

#include "llvm/Analysis/IR2Vec.h"

using namespace llvm;
using namespace mlbridge::ir2vec;

namespace {

// LLVM's analysis reads only its own option: was it given?
bool llvmVocabOptionGiven() {
  auto &Opts = cl::getRegisteredOptions();
  auto It = Opts.find("ir2vec-vocab-path");
  return It != Opts.end() && It->second->getNumOccurrences() > 0;
}

class IR2VecPass : public PassInfoMixin<IR2VecPass> {
public:
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &MAM) {
    if (!llvmVocabOptionGiven())
      return pass::embedAndWrite(M);
    auto R = pass::startReport("llvm");
    if (!R) {
      pass::reportError(M, R.status());
      return PreservedAnalyses::all();
    }
    const ir2vec::Vocabulary &Vocab = MAM.getResult<IR2VecVocabAnalysis>(M);
    if (!Vocab.isValid())
      return PreservedAnalyses::all(); // LLVM has reported why
    const IR2VecKind LLVMKind =
        R->Kind == Kind::FlowAware ? IR2VecKind::FlowAware : IR2VecKind::Symbolic;
    R->Dimension = Vocab.getDimension();
    R->Weights[0] = ir2vec::OpcWeight;
    R->Weights[1] = ir2vec::TypeWeight;
    R->Weights[2] = ir2vec::ArgWeight;
    R->Module.assign(R->Dimension, 0.0);
    for (const Function &F : M) {
      if (F.isDeclaration())
        continue;
      // A fresh embedder per function, asked for the function first: the
      // flow-aware cache then fills in the same order as ours (depth first).
      auto E = ir2vec::Embedder::create(LLVMKind, F, Vocab);
      FunctionVectors FV{F.getName().str(), E->getFunctionVector().getData(), {}, {}};
      if (R->WithBlocks)
        for (const BasicBlock &BB : F)
          FV.Blocks.push_back(E->getBBVector(BB).getData());
      if (R->WithInstructions)
        for (const BasicBlock &BB : F)
          for (const Instruction &I : BB.instructionsWithoutDebug())
            FV.Instructions.push_back(E->getInstVector(I).getData());
      R->addFunction(std::move(FV));
    }
    if (mlbridge::Status S = writeReport(*R, pass::OutPath))
      pass::reportError(M, S);
    return PreservedAnalyses::all();
  }
  static bool isRequired() { return true; }
};

} // namespace

::llvm::PassPluginLibraryInfo mlbridge::plugins::passPluginInfo() {
  return pass::pluginInfo<IR2VecPass>();
}
