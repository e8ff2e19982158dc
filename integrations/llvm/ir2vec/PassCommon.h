//===- PassCommon.h - What both builds of MLBridgeIR2Vec share --*- C++ -*-===//
//
// The pass name, the options, the plugin entry of "mlbridge-ir2vec" and
// the embedding through PluginEmbeddings.h, included by the LLVM 19 plugin
// (IR2VecPlugin.cpp) and the LLVM 22 one (llvm22/IR2VecPlugin22.cpp); each
// compiles it against its own LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_PASSCOMMON_H
#define MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_PASSCOMMON_H

#include "EmbeddingsJson.h"
#include "PluginEmbeddings.h"

#include "PluginEntry.h" // ../common: the entry, refusing a foreign LLVM

#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"

namespace mlbridge::ir2vec::pass {

inline llvm::cl::opt<std::string>
    OutPath("mlbridge-ir2vec-out", llvm::cl::desc("Where mlbridge-ir2vec writes the vectors (JSON)"));
inline llvm::cl::opt<std::string> KindName("mlbridge-ir2vec-kind", llvm::cl::init("symbolic"),
                                           llvm::cl::desc("symbolic | flow-aware"));
inline llvm::cl::opt<bool> WithBlocks("mlbridge-ir2vec-blocks", llvm::cl::init(false),
                                      llvm::cl::desc("Also write every basic block's vector"));
inline llvm::cl::opt<bool>
    WithInstructions("mlbridge-ir2vec-instructions", llvm::cl::init(false),
                     llvm::cl::desc("Also write every instruction's vector"));
inline llvm::cl::opt<std::string>
    VocabPath("mlbridge-ir2vec-vocab",
              llvm::cl::desc("IR2Vec vocabulary (default: $MLBRIDGE_IR2VEC_VOCAB_DIR, then "
                             "the build's .deps/ir2vec/)"));

/// A report with the options' settings and LLVM's version; an error when
/// the output file or the kind is missing or wrong.
inline Expected<EmbeddingsReport> startReport(const char *Embedder) {
  if (OutPath.empty())
    return Status(ErrorCode::InvalidArgument,
                  "no output file: give -mlbridge-ir2vec-out=<file.json>");
  std::optional<Kind> K = parseKind(KindName);
  if (!K)
    return Status(ErrorCode::InvalidArgument, "-mlbridge-ir2vec-kind='" + KindName +
                                                  "': expected symbolic or flow-aware");
  EmbeddingsReport R;
  R.LLVMVersion = LLVM_VERSION_STRING;
  R.Embedder = Embedder;
  R.Kind = *K;
  R.WithBlocks = WithBlocks;
  R.WithInstructions = WithInstructions;
  return R;
}

/// The report of M's definitions through PluginEmbeddings (the vocabulary
/// of -mlbridge-ir2vec-vocab or the default one).
inline Expected<EmbeddingsReport> embedModule(llvm::Module &M) {
  auto R = startReport("");
  if (!R)
    return R;
  auto E = PluginEmbeddings::create({VocabPath, R->Kind});
  if (!E)
    return E.takeStatus();
  PluginEmbeddings &PE = **E;
  R->Embedder = PE.embedderName();
  R->Dimension = PE.dimension();
  const Weights W = PE.weights();
  R->Weights[0] = W.Opcode;
  R->Weights[1] = W.Type;
  R->Weights[2] = W.Operand;
  R->Module.assign(PE.dimension(), 0.0);
  for (const llvm::Function &F : M) {
    if (F.isDeclaration())
      continue;
    FunctionVectors FV{F.getName().str(), PE.function(F), {}, {}};
    if (R->WithBlocks)
      for (const llvm::BasicBlock &BB : F)
        FV.Blocks.push_back(PE.block(BB));
    if (R->WithInstructions)
      for (const llvm::BasicBlock &BB : F)
        for (const llvm::Instruction &I : BB.instructionsWithoutDebug())
          FV.Instructions.push_back(PE.instruction(I));
    R->addFunction(std::move(FV));
    PE.invalidate(F); // one pass over the module: keep the memory flat
  }
  return R;
}

/// LLVM's diagnostics: opt prints "error: mlbridge-ir2vec: ..." and exits 1.
inline void reportError(llvm::Module &M, const Status &S) {
  M.getContext().emitError("mlbridge-ir2vec: " + S.toString());
}

/// The pass on PluginEmbeddings: M's report written to -mlbridge-ir2vec-out,
/// an error reported as LLVM's; M is not changed.
inline llvm::PreservedAnalyses embedAndWrite(llvm::Module &M) {
  auto R = embedModule(M);
  if (Status S = R ? writeReport(*R, OutPath) : R.takeStatus())
    reportError(M, S);
  return llvm::PreservedAnalyses::all();
}

/// The plugin entry: registers PassT (a module pass) as "mlbridge-ir2vec".
template <typename PassT> llvm::PassPluginLibraryInfo pluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "MLBridgeIR2Vec", LLVM_VERSION_STRING,
          [](llvm::PassBuilder &PB) {
            PB.registerPipelineParsingCallback(
                [](llvm::StringRef Name, llvm::ModulePassManager &MPM,
                   llvm::ArrayRef<llvm::PassBuilder::PipelineElement>) {
                  if (Name != "mlbridge-ir2vec")
                    return false;
                  MPM.addPass(PassT());
                  return true;
                });
          }};
}

} // namespace mlbridge::ir2vec::pass

#endif // MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_PASSCOMMON_H
