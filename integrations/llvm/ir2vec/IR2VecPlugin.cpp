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
// The LLVM 22 build of the same plugin (llvm22/IR2VecPlugin22.cpp) takes
// the same options except the vocabulary (LLVM's -ir2vec-vocab-path).
//
//===----------------------------------------------------------------------===//
#include "EmbeddingsJson.h"
#include "Embedder.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Support/CommandLine.h"

using namespace llvm;
using namespace mlbridge::ir2vec;

namespace {

cl::opt<std::string> VocabPath("mlbridge-ir2vec-vocab",
                               cl::desc("IR2Vec's seedEmbeddingVocab.txt (.deps/ir2vec/)"));
cl::opt<std::string> OutPath("mlbridge-ir2vec-out",
                             cl::desc("Where mlbridge-ir2vec writes the vectors (JSON)"));
cl::opt<std::string> KindName("mlbridge-ir2vec-kind", cl::init("symbolic"),
                              cl::desc("symbolic | flow-aware"));
cl::opt<bool> WithBlocks("mlbridge-ir2vec-blocks", cl::init(false),
                         cl::desc("Also write every basic block's vector"));

class IR2VecPass : public PassInfoMixin<IR2VecPass> {
public:
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &) {
    if (mlbridge::Status S = embed(M))
      M.getContext().emitError("mlbridge-ir2vec: " + S.toString());
    return PreservedAnalyses::all();
  }
  static bool isRequired() { return true; }

private:
  static mlbridge::Status embed(Module &M) {
    using mlbridge::ErrorCode;
    if (OutPath.empty())
      return mlbridge::Status(ErrorCode::InvalidArgument,
                              "no output file: give -mlbridge-ir2vec-out=<file.json>");
    std::optional<Kind> K = parseKind(KindName);
    if (!K)
      return mlbridge::Status(ErrorCode::InvalidArgument,
                              "-mlbridge-ir2vec-kind='" + KindName +
                                  "': expected symbolic or flow-aware");
    if (VocabPath.empty())
      return mlbridge::Status(ErrorCode::InvalidArgument,
                              "no vocabulary: give -mlbridge-ir2vec-vocab="
                              "<seedEmbeddingVocab.txt> (scripts/deps/ir2vec.sh "
                              "installs it in .deps/ir2vec/)");
    auto Vocab = Vocabulary::load(VocabPath);
    if (!Vocab)
      return Vocab.takeStatus();
    Embedder E(*Vocab, *K);
    EmbeddingsReport R;
    R.LLVMVersion = LLVM_VERSION_STRING;
    R.Embedder = "mlbridge";
    R.Kind = kindName(*K);
    R.Dimension = E.dimension();
    R.Weights[0] = E.weights().Opcode;
    R.Weights[1] = E.weights().Type;
    R.Weights[2] = E.weights().Operand;
    R.WithBlocks = WithBlocks;
    R.Module.assign(E.dimension(), 0.0);
    for (const Function &F : M) {
      if (F.isDeclaration())
        continue;
      FunctionEmbedding FE = E.embedFunction(F, WithBlocks);
      for (size_t I = 0; I < R.Module.size(); ++I)
        R.Module[I] += FE.Function[I];
      R.Functions.push_back({F.getName().str(), std::move(FE.Function), std::move(FE.Blocks)});
    }
    return writeReport(R, OutPath);
  }
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
