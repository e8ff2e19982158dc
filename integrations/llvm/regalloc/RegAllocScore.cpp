//===- RegAllocScore.cpp - The mlbridge-ra-score pass -----------------------===//
//
// See RegAllocScore.h.
//
//===----------------------------------------------------------------------===//

#include "RegAllocScore.h"
#include "PluginEntry.h"
#include "PluginSupport.h"

#include "mlbridge/json_escape.h"

#include "llvm/CodeGen/MachineBlockFrequencyInfo.h"
#include "llvm/CodeGen/MachineFunction.h"
#include "llvm/CodeGen/MachineFunctionPass.h"
#include "llvm/CodeGen/MachineInstr.h"
#include "llvm/CodeGen/TargetInstrInfo.h"
#include "llvm/CodeGen/TargetSubtargetInfo.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"
#include "llvm/Pass.h"
#include "llvm/Support/CommandLine.h"

#include <cstdio>
#include <optional>
#include <string>

using namespace llvm;
namespace mlp = mlbridge::plugins;

namespace mlbridge::regalloc {

Score computeScore(const MachineFunction &MF,
                   function_ref<double(const MachineBasicBlock &)> RelFreq,
                   function_ref<bool(const MachineInstr &)> IsRemat) {
  Score S;
  for (const MachineBasicBlock &MBB : MF) {
    const double F = RelFreq(MBB);
    for (const MachineInstr &MI : MBB) {
      if (MI.isDebugInstr() || MI.isKill() || MI.isInlineAsm())
        continue;
      if (MI.isCopy())
        S.Copies += F;
      else if (IsRemat(MI))
        (MI.getDesc().isAsCheapAsAMove() ? S.CheapRemats : S.ExpensiveRemats) += F;
      else if (MI.mayLoad() && MI.mayStore())
        S.LoadStores += F;
      else if (MI.mayLoad())
        S.Loads += F;
      else if (MI.mayStore())
        S.Stores += F;
    }
  }
  return S;
}

} // namespace mlbridge::regalloc

namespace {

cl::opt<std::string> ScoreFileOpt(
    "mlbridge-ra-score-file",
    cl::desc("mlbridge-ra-score: append one JSON line per function (score "
             "and its weighted counts) to this file"));
cl::opt<std::string> ScoreLabelOpt(
    "mlbridge-ra-score-label",
    cl::desc("mlbridge-ra-score: a label written in each line (e.g. the "
             "allocator)"));

std::string number(double V) {
  char Buf[64];
  std::snprintf(Buf, sizeof(Buf), "%.17g", V);
  return Buf;
}

class RegAllocScorePass : public MachineFunctionPass {
public:
  static char ID;
  RegAllocScorePass() : MachineFunctionPass(ID) {}
  StringRef getPassName() const override { return "MLBridge RegAllocScore"; }
  void getAnalysisUsage(AnalysisUsage &AU) const override {
    AU.addRequired<MachineBlockFrequencyInfoWrapperPass>();
    AU.setPreservesAll();
    MachineFunctionPass::getAnalysisUsage(AU);
  }
  bool runOnMachineFunction(MachineFunction &MF) override {
    const MachineBlockFrequencyInfo &MBFI =
        getAnalysis<MachineBlockFrequencyInfoWrapperPass>().getMBFI();
    const TargetInstrInfo *TII = MF.getSubtarget().getInstrInfo();
    const mlbridge::regalloc::Score S = mlbridge::regalloc::computeScore(
        MF,
        [&](const MachineBasicBlock &MBB) {
          return MBFI.getBlockFreqRelativeToEntryBlock(&MBB);
        },
        [&](const MachineInstr &MI) { return TII->isTriviallyReMaterializable(MI); });
    if (ScoreFileOpt.empty()) {
      mlp::diagnose(MF.getFunction().getContext(), "mlbridge-ra-score", DS_Warning,
                    "no -mlbridge-ra-score-file given; the score is not written");
      return false;
    }
    const std::string Line =
        "{\"module\":\"" + mlbridge::jsonEscape(MF.getFunction().getParent()->getModuleIdentifier()) +
        "\",\"function\":\"" + mlbridge::jsonEscape(MF.getName().str()) +
        "\",\"label\":\"" + mlbridge::jsonEscape(ScoreLabelOpt) +
        "\",\"score\":" + number(S.total()) + ",\"copies\":" + number(S.Copies) +
        ",\"loads\":" + number(S.Loads) + ",\"stores\":" + number(S.Stores) +
        ",\"load_stores\":" + number(S.LoadStores) +
        ",\"cheap_remats\":" + number(S.CheapRemats) +
        ",\"expensive_remats\":" + number(S.ExpensiveRemats) + "}";
    mlp::appendLogLine(MF.getFunction().getContext(), "mlbridge-ra-score",
                       ScoreFileOpt, Line);
    return false;
  }
};

char RegAllocScorePass::ID = 0;

// Like -regalloc=mlbridge, only in a host of this plugin's LLVM.
struct Registration {
  std::optional<RegisterPass<RegAllocScorePass>> Pass;
  Registration() {
    if (mlbridge::plugins::hostLLVMMatches())
      Pass.emplace("mlbridge-ra-score",
                   "MLBridge: the RegAllocScore of each machine function");
  }
} ScoreRegistration;

} // namespace
