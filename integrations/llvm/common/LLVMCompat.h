//===- LLVMCompat.h - What differs between LLVM 19 and LLVM 22 --*- C++ -*-===//
//
// The LLVM pass plugins are built from the same sources against LLVM 19
// (lib/llvm-plugins/) and LLVM 22 (lib/llvm22-plugins/). Every difference of
// the LLVM API they use is bridged here and nowhere else
// (docs/llvm-versions.md lists them).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_LLVMCOMPAT_H
#define MLBRIDGE_INTEGRATIONS_LLVM_LLVMCOMPAT_H

#include "llvm/Analysis/FunctionPropertiesAnalysis.h"
#include "llvm/Analysis/InlineAdvisor.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/Analysis/InlineCost.h"
#include "llvm/CodeGen/LiveDebugVariables.h"
#include "llvm/CodeGen/LiveIntervals.h"
#include "llvm/CodeGen/LiveRegMatrix.h"
#include "llvm/CodeGen/LiveStacks.h"
#include "llvm/CodeGen/MachineBlockFrequencyInfo.h"
#include "llvm/CodeGen/MachineDominators.h"
#include "llvm/CodeGen/Spiller.h"
#include "llvm/CodeGen/VirtRegMap.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InstructionCost.h"
#include "llvm/Target/CGPassBuilderOption.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#if defined(MLBRIDGE_COMPAT_IR2VEC)
#include "mlbridge/status.h"
#include "llvm/Support/FileSystem.h"
#if LLVM_VERSION_MAJOR >= 22
#include "llvm/Analysis/IR2Vec.h"
#else
#include "Embedder.h" // integrations/llvm/ir2vec (mlbridge_ir2vec)
#endif
#endif

#if LLVM_VERSION_MAJOR != 19 && LLVM_VERSION_MAJOR != 22
#error "the MLBridge LLVM plugins are built against LLVM 19 or LLVM 22"
#endif

// PassPlugin.h (moved to Plugins/ in LLVM 22) and the plugins' entry.
#include "PluginEntry.h"

/// The instcombine of -Oz's function pipeline, as opt -passes= takes it:
/// LLVM 22 no longer has the use-loop-info parameter.
#if LLVM_VERSION_MAJOR >= 22
#define MLBRIDGE_COMPAT_OZ_INSTCOMBINE "instcombine<max-iterations=1;no-verify-fixpoint>"
#else
#define MLBRIDGE_COMPAT_OZ_INSTCOMBINE                                         \
  "instcombine<max-iterations=1;no-use-loop-info;no-verify-fixpoint>"
#endif

namespace mlbridge::llvm_compat {

/// LLVM's inline decision (shouldInline), for a call site whose callee has
/// CalleeTTI. LLVM 22 added the TargetTransformInfo parameter.
inline bool
shouldInline(llvm::CallBase &CB, llvm::TargetTransformInfo &CalleeTTI,
             llvm::function_ref<llvm::InlineCost(llvm::CallBase &)> GetCost,
             llvm::OptimizationRemarkEmitter &ORE, bool EnableDeferral) {
#if LLVM_VERSION_MAJOR >= 22
  return llvm::shouldInline(CB, CalleeTTI, GetCost, ORE, EnableDeferral)
      .has_value();
#else
  (void)CalleeTTI;
  return llvm::shouldInline(CB, GetCost, ORE, EnableDeferral).has_value();
#endif
}

/// Invalidates what an inlining into Caller made stale, before its
/// FunctionPropertiesUpdater::finish: the properties and loops, and on LLVM
/// 19 the dominator tree. LLVM 22's finish() brings the cached dominator
/// tree from before the inlining up to date itself (it must still be
/// cached: given a fresh one, its edge updates corrupt it and clang crashes).
inline void invalidateAfterInlining(llvm::FunctionAnalysisManager &FAM,
                                    llvm::Function &Caller) {
  llvm::PreservedAnalyses PA = llvm::PreservedAnalyses::all();
  PA.abandon<llvm::FunctionPropertiesAnalysis>();
  PA.abandon<llvm::LoopAnalysis>();
#if LLVM_VERSION_MAJOR < 22
  PA.abandon<llvm::DominatorTreeAnalysis>();
#endif
  FAM.invalidate(Caller, PA);
}

/// Cost's value, Invalid when it is invalid. LLVM 19's getValue() returns
/// an optional, LLVM 22's the value (asserting validity).
inline int64_t costValue(const llvm::InstructionCost &Cost, int64_t Invalid) {
  if (!Cost.isValid())
    return Invalid;
#if LLVM_VERSION_MAJOR >= 22
  return Cost.getValue();
#else
  return *Cost.getValue();
#endif
}

/// What TargetRegistry::lookupTarget and Target::createTargetMachine take
/// for a triple: LLVM 22 the Triple, LLVM 19 its string.
#if LLVM_VERSION_MAJOR >= 22
inline const llvm::Triple &tripleArg(const llvm::Triple &T) { return T; }
#else
inline const std::string &tripleArg(const llvm::Triple &T) { return T.str(); }
#endif

/// PassBuilder::registerOptimizerLastEPCallback with a callback that does
/// not look at the LTO phase (a parameter LLVM 22 added).
inline void registerOptimizerLast(
    llvm::PassBuilder &PB,
    std::function<void(llvm::ModulePassManager &, llvm::OptimizationLevel)> C) {
#if LLVM_VERSION_MAJOR >= 22
  PB.registerOptimizerLastEPCallback(
      [C = std::move(C)](llvm::ModulePassManager &MPM,
                         llvm::OptimizationLevel Level,
                         llvm::ThinOrFullLTOPhase) { C(MPM, Level); });
#else
  PB.registerOptimizerLastEPCallback(std::move(C));
#endif
}

// ---- the register allocator's analyses (regalloc/RegAllocPlugin.cpp) -----
// LLVM 22 made VirtRegMap, LiveRegMatrix, LiveStacks and LiveDebugVariables
// plain classes served by *WrapperLegacy passes, and the inline spiller takes
// its analyses as a struct instead of from the allocator pass.
#if LLVM_VERSION_MAJOR >= 22
using VirtRegMapPass = llvm::VirtRegMapWrapperLegacy;
using LiveRegMatrixPass = llvm::LiveRegMatrixWrapperLegacy;
using LiveStacksPass = llvm::LiveStacksWrapperLegacy;
using LiveDebugVariablesPass = llvm::LiveDebugVariablesWrapperLegacy;
inline llvm::VirtRegMap &virtRegMap(llvm::Pass &P) {
  return P.getAnalysis<VirtRegMapPass>().getVRM();
}
inline llvm::LiveRegMatrix &liveRegMatrix(llvm::Pass &P) {
  return P.getAnalysis<LiveRegMatrixPass>().getLRM();
}
inline llvm::LiveDebugVariables &liveDebugVariables(llvm::Pass &P) {
  return P.getAnalysis<LiveDebugVariablesPass>().getLDV();
}
inline llvm::Spiller *createInlineSpiller(llvm::MachineFunctionPass &P,
                                          llvm::MachineFunction &MF,
                                          llvm::VirtRegMap &VRM,
                                          llvm::VirtRegAuxInfo &VRAI,
                                          llvm::LiveRegMatrix &Matrix) {
  return llvm::createInlineSpiller(
      {P.getAnalysis<llvm::LiveIntervalsWrapperPass>().getLIS(),
       P.getAnalysis<LiveStacksPass>().getLS(),
       P.getAnalysis<llvm::MachineDominatorTreeWrapperPass>().getDomTree(),
       P.getAnalysis<llvm::MachineBlockFrequencyInfoWrapperPass>().getMBFI()},
      MF, VRM, VRAI, &Matrix);
}
#else
using VirtRegMapPass = llvm::VirtRegMap;
using LiveRegMatrixPass = llvm::LiveRegMatrix;
using LiveStacksPass = llvm::LiveStacks;
using LiveDebugVariablesPass = llvm::LiveDebugVariables;
inline llvm::VirtRegMap &virtRegMap(llvm::Pass &P) {
  return P.getAnalysis<VirtRegMapPass>();
}
inline llvm::LiveRegMatrix &liveRegMatrix(llvm::Pass &P) {
  return P.getAnalysis<LiveRegMatrixPass>();
}
inline llvm::LiveDebugVariables &liveDebugVariables(llvm::Pass &P) {
  return P.getAnalysis<LiveDebugVariablesPass>();
}
inline llvm::Spiller *createInlineSpiller(llvm::MachineFunctionPass &P,
                                          llvm::MachineFunction &MF,
                                          llvm::VirtRegMap &VRM,
                                          llvm::VirtRegAuxInfo &VRAI,
                                          llvm::LiveRegMatrix &) {
  return llvm::createInlineSpiller(P, MF, VRM, VRAI);
}
#endif

// ---- IR2Vec module vectors (a plugin that defines MLBRIDGE_COMPAT_IR2VEC) ----
#if defined(MLBRIDGE_COMPAT_IR2VEC)
/// IR2Vec's symbolic module vector (the sum of the function definitions'
/// vectors, weights 1 / 0.5 / 0.2). LLVM 19: the project's embedder
/// (integrations/llvm/ir2vec, the mlbridge_ir2vec library) and IR2Vec's
/// seedEmbeddingVocab.txt; LLVM 22: LLVM's own embedder and the converted
/// seedEmbeddingVocab.json (its IR2VecVocabAnalysis reads the file named by
/// -ir2vec-vocab-path, which load() sets unless the user did).
class ModuleEmbedder {
public:
  /// The vocabulary at Path; NotFound / Malformed as values.
  static mlbridge::Expected<ModuleEmbedder> load(const std::string &Path) {
#if LLVM_VERSION_MAJOR >= 22
    if (!llvm::sys::fs::exists(Path))
      return mlbridge::Status(mlbridge::ErrorCode::NotFound,
                              "IR2Vec vocabulary '" + Path +
                                  "' does not exist; scripts/deps/ir2vec.sh "
                                  "installs it in .deps/ir2vec/");
    auto &Opts = llvm::cl::getRegisteredOptions();
    auto It = Opts.find("ir2vec-vocab-path");
    if (It == Opts.end())
      return mlbridge::Status(mlbridge::ErrorCode::Unavailable,
                              "this LLVM has no -ir2vec-vocab-path");
    if (It->second->getNumOccurrences() == 0)
      (void)It->second->addOccurrence(0, "ir2vec-vocab-path", Path);
    return ModuleEmbedder();
#else
    auto V = mlbridge::ir2vec::Vocabulary::load(Path);
    if (!V)
      return V.takeStatus();
    return ModuleEmbedder(std::make_shared<mlbridge::ir2vec::Embedder>(*V));
#endif
  }

  /// M's module vector into Out (resized to the vocabulary's dimension).
  mlbridge::Status embed(llvm::Module &M, llvm::ModuleAnalysisManager &MAM,
                         std::vector<double> &Out) const {
#if LLVM_VERSION_MAJOR >= 22
    MAM.registerPass([] { return llvm::IR2VecVocabAnalysis(); });
    const llvm::ir2vec::Vocabulary &V = MAM.getResult<llvm::IR2VecVocabAnalysis>(M);
    if (!V.isValid())
      return mlbridge::Status(mlbridge::ErrorCode::InvalidArgument,
                              "LLVM's IR2Vec vocabulary did not load");
    Out.assign(V.getDimension(), 0.0);
    for (const llvm::Function &F : M) {
      if (F.isDeclaration())
        continue;
      auto E = llvm::ir2vec::Embedder::create(llvm::IR2VecKind::Symbolic, F, V);
      const llvm::ir2vec::Embedding FE = E->getFunctionVector();
      const std::vector<double> &FV = FE.getData();
      for (size_t I = 0; I < Out.size() && I < FV.size(); ++I)
        Out[I] += FV[I];
    }
#else
    (void)MAM;
    Out = Impl->embedModule(M);
#endif
    return mlbridge::Status::ok();
  }

private:
#if LLVM_VERSION_MAJOR < 22
  explicit ModuleEmbedder(std::shared_ptr<mlbridge::ir2vec::Embedder> E)
      : Impl(std::move(E)) {}
  std::shared_ptr<mlbridge::ir2vec::Embedder> Impl;
#endif
};
#endif // MLBRIDGE_COMPAT_IR2VEC

// ---- the machine outliner's switch (-enable-machine-outliner) ---------------
/// The code generator reads its cl::opt when it builds its pipeline, after
/// the optimization pipeline in clang: a plugin sets it for the module it
/// compiles. Same option type on 19 and 22 (llvm::RunOutliner).
inline llvm::cl::opt<llvm::RunOutliner> *machineOutlinerOption() {
  auto &Opts = llvm::cl::getRegisteredOptions();
  auto It = Opts.find("enable-machine-outliner");
  // TargetPassConfig.cpp declares it as cl::opt<RunOutliner>.
  return It == Opts.end() ? nullptr
                          : static_cast<llvm::cl::opt<llvm::RunOutliner> *>(It->second);
}

} // namespace mlbridge::llvm_compat

#endif // MLBRIDGE_INTEGRATIONS_LLVM_LLVMCOMPAT_H
