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

/// The virtual registers MachineRegisterInfo lists as VReg's allocation
/// hints (LLVM 22 returns a pointer, null for none; 19 a reference).
inline void virtualHints(const llvm::MachineRegisterInfo &MRI, llvm::Register VReg,
                         llvm::SmallVectorImpl<llvm::Register> &Out) {
#if LLVM_VERSION_MAJOR >= 22
  const auto *H = MRI.getRegAllocationHints(VReg);
  if (!H)
    return;
  for (llvm::Register R : H->second)
#else
  for (llvm::Register R : MRI.getRegAllocationHints(VReg).second)
#endif
    if (R.isVirtual())
      Out.push_back(R);
}

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
