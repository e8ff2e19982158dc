//===- PassCommon.h - What both builds of MLBridgeIR2Vec share --*- C++ -*-===//
//
// The pass name, the options and the plugin entry of "mlbridge-ir2vec",
// included by the LLVM 19 plugin (IR2VecPlugin.cpp) and the LLVM 22 one
// (llvm22/IR2VecPlugin22.cpp); each compiles it against its own LLVM. The
// only version difference here: where PassPlugin.h is.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_PASSCOMMON_H
#define MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_PASSCOMMON_H

#include "EmbeddingsJson.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#if LLVM_VERSION_MAJOR >= 22
#include "llvm/Plugins/PassPlugin.h"
#else
#include "llvm/Passes/PassPlugin.h"
#endif

namespace mlbridge::ir2vec::pass {

inline llvm::cl::opt<std::string>
    OutPath("mlbridge-ir2vec-out", llvm::cl::desc("Where mlbridge-ir2vec writes the vectors (JSON)"));
inline llvm::cl::opt<std::string> KindName("mlbridge-ir2vec-kind", llvm::cl::init("symbolic"),
                                           llvm::cl::desc("symbolic | flow-aware"));
inline llvm::cl::opt<bool> WithBlocks("mlbridge-ir2vec-blocks", llvm::cl::init(false),
                                      llvm::cl::desc("Also write every basic block's vector"));

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
  return R;
}

/// LLVM's diagnostics: opt prints "error: mlbridge-ir2vec: ..." and exits 1.
inline void reportError(llvm::Module &M, const Status &S) {
  M.getContext().emitError("mlbridge-ir2vec: " + S.toString());
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
