//===- IR2VecPlugin.cpp - IR2Vec embeddings pass for opt-19 ---------------===//
//
// MLBridgeIR2Vec.so (LLVM 19): the module pass "mlbridge-ir2vec" writes the
// module's IR2Vec function and module vectors, computed by our embedder
// (Embedder.h), to -mlbridge-ir2vec-out as JSON (EmbeddingsJson.h):
//
//   opt-19 -load-pass-plugin=MLBridgeIR2Vec.so -passes=mlbridge-ir2vec
//     -mlbridge-ir2vec-vocab=.deps/ir2vec/seedEmbeddingVocab.txt
//     -mlbridge-ir2vec-out=vectors.json [-mlbridge-ir2vec-kind=flow-aware]
//     [-mlbridge-ir2vec-blocks] -disable-output module.bc
//
// The LLVM 22 build (llvm22/IR2VecPlugin22.cpp) takes the same options
// (PassCommon.h) except the vocabulary (LLVM's -ir2vec-vocab-path).
//
//===----------------------------------------------------------------------===//
#include "Embedder.h"
#include "PassCommon.h"


using namespace llvm;
using namespace mlbridge::ir2vec;

namespace {

cl::opt<std::string> VocabPath("mlbridge-ir2vec-vocab",
                               cl::desc("IR2Vec's seedEmbeddingVocab.txt (.deps/ir2vec/)"));

class IR2VecPass : public PassInfoMixin<IR2VecPass> {
public:
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &) {
    if (mlbridge::Status S = embed(M))
      pass::reportError(M, S);
    return PreservedAnalyses::all();
  }
  static bool isRequired() { return true; }

private:
  static mlbridge::Status embed(Module &M) {
    auto R = pass::startReport("mlbridge");
    if (!R)
      return R.takeStatus();
    if (VocabPath.empty())
      return mlbridge::Status(mlbridge::ErrorCode::InvalidArgument,
                              "no vocabulary: give -mlbridge-ir2vec-vocab="
                              "<seedEmbeddingVocab.txt> (scripts/deps/ir2vec.sh "
                              "installs it in .deps/ir2vec/)");
    auto Vocab = Vocabulary::load(VocabPath);
    if (!Vocab)
      return Vocab.takeStatus();
    Embedder E(*Vocab, R->Kind);
    R->Dimension = E.dimension();
    R->Weights[0] = E.weights().Opcode;
    R->Weights[1] = E.weights().Type;
    R->Weights[2] = E.weights().Operand;
    R->Module.assign(E.dimension(), 0.0);
    for (const Function &F : M) {
      if (F.isDeclaration())
        continue;
      FunctionEmbedding FE = E.embedFunction(F, R->WithBlocks);
      R->addFunction({F.getName().str(), std::move(FE.Function), std::move(FE.Blocks)});
    }
    return writeReport(*R, pass::OutPath);
  }
};

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK __attribute__((visibility("default")))
::llvm::PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return pass::pluginInfo<IR2VecPass>();
}
