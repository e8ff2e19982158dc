//===- IR2VecPlugin.cpp - IR2Vec embeddings pass for opt-19 ---------------===//
//
// MLBridgeIR2Vec.so (LLVM 19): the module pass "mlbridge-ir2vec" writes the
// module's IR2Vec vectors, computed by our embedder through PluginEmbeddings
// (PluginEmbeddings.h), to -mlbridge-ir2vec-out as JSON (EmbeddingsJson.h):
//
//   opt-19 -load-pass-plugin=MLBridgeIR2Vec.so -passes=mlbridge-ir2vec
//     [-mlbridge-ir2vec-vocab=.deps/ir2vec/seedEmbeddingVocab.txt]
//     -mlbridge-ir2vec-out=vectors.json [-mlbridge-ir2vec-kind=flow-aware]
//     [-mlbridge-ir2vec-blocks] [-mlbridge-ir2vec-instructions]
//     -disable-output module.bc
//
// The LLVM 22 build (llvm22/IR2VecPlugin22.cpp) takes the same options
// (PassCommon.h).
//
//===----------------------------------------------------------------------===//
#include "PassCommon.h"

using namespace llvm;
using namespace mlbridge::ir2vec;

namespace {

class IR2VecPass : public PassInfoMixin<IR2VecPass> {
public:
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &) { return pass::embedAndWrite(M); }
  static bool isRequired() { return true; }
};

} // namespace

::llvm::PassPluginLibraryInfo mlbridge::plugins::passPluginInfo() {
  return pass::pluginInfo<IR2VecPass>();
}
