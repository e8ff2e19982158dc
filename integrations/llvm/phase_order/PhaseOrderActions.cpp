//===- PhaseOrderActions.cpp - The phase-ordering plugin's actions --------===//
//
// What the agent of MLBridgePhaseOrder.so can do to a module, and how it is
// done (the episode around it: PhaseOrderEnv.cpp):
//
//  * ActionTable: the actions before STOP, sub-sequences of LLVM 19's -Oz
//    pipeline as opt -passes= takes them, the size passes -Oz leaves out and
//    the two code-generation decisions (machine outliner on, off);
//  * the machine outliner, a per-module decision made through one switch of
//    the process (takeOverMachineOutliner, markOutliner);
//  * the IR outliner's guard: it runs on a copy first, on the module only
//    when the copy stays valid (irOutlinerKeepsModuleValid);
//  * the start: the stock size flags an episode can start from (applyStart).
//
// Kept apart from the episode because the table is the protocol's other
// half (PhaseOrderProtocol.def names the actions in its order) and the
// guard and the start apply the same pipelines as clang.
//
//===----------------------------------------------------------------------===//

#include "PhaseOrder.h"

#include "LLVMCompat.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/Error.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <iterator>
#include <memory>
#include <string>

using namespace llvm;
namespace mlb = mlbridge;
namespace llvm_compat = mlbridge::llvm_compat;

namespace mlbridge::phaseorder {

// ---- actions: sub-sequences of LLVM 19's -Oz pipeline --------------------------

/// nooutline-small marks the defined functions with fewer IR instructions:
/// their repeated sequences are short, where x86's outliner cost model
/// (instruction counts, not bytes) errs most.
constexpr unsigned NoOutlineBelowInstructions = 40;

#define MLB_SIMPLIFYCFG                                                        \
  "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-" \
  "icmp;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-sink-common-"  \
  "insts;speculate-blocks;simplify-cond-branch>"
// -Oz's instcombine parameters differ by version (LLVMCompat.h).
#define MLB_INSTCOMBINE MLBRIDGE_COMPAT_OZ_INSTCOMBINE

const ActionInfo ActionTable[] = {
    // 0: the start of -Oz's function simplification.
    {"function(lower-expect," MLB_SIMPLIFYCFG ",sroa<modify-cfg>,early-cse<>)"},
    // 1: interprocedural constant propagation and global cleanup.
    {"ipsccp,called-value-propagation,globalopt"},
    // 2: promote memory to registers, combine.
    {"function(mem2reg," MLB_INSTCOMBINE "," MLB_SIMPLIFYCFG ")"},
    // 3: LLVM's inliner (its default heuristic, or an ML advisor if loaded)
    // and the attribute inference that follows it in -Oz.
    {"cgscc(inline,function-attrs<skip-non-recursive-function-attrs>)"},
    // 4: scalar simplification after inlining.
    {"function(sroa<modify-cfg>,early-cse<memssa>,jump-threading,correlated-"
     "propagation," MLB_SIMPLIFYCFG ")"},
    // 5: peephole combining.
    {"function(" MLB_INSTCOMBINE ",aggressive-instcombine)"},
    // 6: tail calls, reassociation, constraint elimination.
    {"function(tailcallelim,reassociate,constraint-elimination)"},
    // 7: the -Oz loop pipeline: rotate, LICM, trivial unswitching.
    {"function(loop-mssa(loop-instsimplify,loop-simplifycfg,licm<no-"
     "allowspeculation>,loop-rotate<no-header-duplication;no-prepare-for-lto>,"
     "licm<allowspeculation>,simple-loop-unswitch<no-nontrivial;trivial>))"},
    // 8: loop idioms, induction variables, deletion, full unrolling.
    {"function(loop(loop-idiom,indvars,loop-deletion,loop-unroll-full))"},
    // 9: redundancy elimination.
    {"function(mldst-motion<no-split-footer-bb>,gvn<>,sccp,bdce)"},
    // 10: dead code and memory operations.
    {"function(adce,memcpyopt,dse)"},
    // 11: interprocedural cleanup after the CGSCC pipeline.
    {"deadargelim,globalopt,globaldce,elim-avail-extern,rpo-function-attrs"},
    // 12: -Oz's vectorization and unrolling stage.
    {"function(float2int,lower-constant-intrinsics,loop(loop-rotate<no-header-"
     "duplication;no-prepare-for-lto>,loop-deletion),loop-distribute,loop-"
     "vectorize<no-interleave-forced-only;vectorize-forced-only>,loop-load-"
     "elim,loop-unroll<O2>)"},
    // 13: the late function cleanup of -Oz.
    {"function(infer-alignment," MLB_INSTCOMBINE
     ",loop-mssa(licm<allowspeculation>),loop-sink,instsimplify,div-rem-pairs,"
     "tailcallelim," MLB_SIMPLIFYCFG ")"},
    // 14: module-level dead code and constant merging.
    {"globaldce,constmerge,rel-lookup-table-converter"},
    // 15: the whole -Oz module pipeline of the host once more (what
    // `-Oz twice` does; in clang it is clang's own -Oz pipeline).
    {"default<Oz>"},
    // 16: merging identical functions (not part of -Oz; clang runs it with
    // -fmerge-functions).
    {"mergefunc"},
    // 17: the IR outliner (not part of -Oz; clang runs it with -mllvm
    // -ir-outliner): similar IR regions become calls to one new function.
    // Run-limited: each run outlines from the last one's output and costs
    // about as much (a 4.8 MB module took three runs, 2.7x the time of one).
    {"iroutliner", ActionKind::Pipeline, /*RunLimited=*/true},
    // 18: the machine outliner for this module's code generation (what
    // -mllvm -enable-machine-outliner=always does for every module).
    {"codegen(enable-machine-outliner=always)",
     ActionKind::MachineOutliner},
    // 19: keep the outliners away from small functions.
    {"attributes(nooutline on functions below 40 instructions)",
     ActionKind::NoOutlineSmall},
    // 20: undo 18 (or a start with the machine outliner): where outlining
    // costs bytes, x86's cost model counting instructions, not bytes.
    {"codegen(enable-machine-outliner=never)",
     ActionKind::MachineOutlinerOff},
};
#undef MLB_SIMPLIFYCFG
#undef MLB_INSTCOMBINE

static_assert(std::size(ActionTable) == NumPassActions &&
                  std::size(ActionNames) == NumPassActions + 1,
              "PhaseOrderProtocol.def: one name per ActionTable row, then stop");

/// The machine outliner is a per-module decision, but its switch
/// (-enable-machine-outliner) is one option of the process, read by the code
/// generation of every module (ThinLTO generates code for several modules
/// at once). So the switch is set once, to `always`, before the first
/// module the pass decides for, and never changed again; each module then
/// says "no" with the "nooutline" attribute on all its functions
/// (markOutliner), which the outliner honours. Returns whether a module's
/// code is outlined unless an action decides otherwise: the setting the
/// user gave (`always` on, anything else off, as on x86-64); nullopt when
/// this LLVM has no such option.
std::optional<bool> takeOverMachineOutliner() {
  static const std::optional<bool> UserOn = []() -> std::optional<bool> {
    auto *O = llvm_compat::machineOutlinerOption();
    if (!O)
      return std::nullopt;
    const bool On = O->getValue() == RunOutliner::AlwaysOutline;
    O->setValue(RunOutliner::AlwaysOutline);
    return On;
  }();
  return UserOn;
}

bool markOutliner(Module &M, bool Outline) {
  bool Changed = false;
  if (!Outline)
    for (Function &F : M)
      if (!F.isDeclaration() && !F.hasFnAttribute("nooutline")) {
        F.addFnAttr("nooutline");
        Changed = true;
      }
  return Changed;
}

namespace {

/// LLVM's IR outliner (19 and 22) turns a constant that differs between
/// similar regions into an argument of the outlined function even where the
/// operand must stay an immediate (an intrinsic's immarg, e.g. llvm.ctlz's
/// is_zero_poison, memcpy's isvolatile): the module is then invalid, and
/// clang, which does not verify it, miscompiles it or crashes later (in
/// CodeGenPrepare). So the outliner runs on a copy first and on the module
/// only when the copy stays valid (the pass is deterministic: the same
/// result). The copy's cached analyses are cleared before it goes away.
bool irOutlinerKeepsModuleValid(const Module &M, PassBuilder &PB,
                                ModuleAnalysisManager &MAM) {
  ModulePassManager Outline;
  if (Error E = PB.parsePassPipeline(Outline, "iroutliner")) {
    consumeError(std::move(E));
    return false;
  }
  std::unique_ptr<Module> Copy = CloneModule(M);
  Outline.run(*Copy, MAM);
  const bool Valid = !verifyModule(*Copy);
  MAM.clear(*Copy, Copy->getName());
  return Valid;
}

} // namespace

/// Runs action A (not STOP) on M. Pipelines are built by the host's
/// PassBuilder; a fresh pass manager every time (some passes keep state
/// between runs of one instance: deadargelim does).
/// \p Outline is the module's machine-outliner decision (takeOverMachineOutliner).
mlb::Status applyAction(Module &M, int64_t A, PassBuilder &PB,
                        ModuleAnalysisManager &MAM, bool &Outline) {
  const ActionInfo &Info = ActionTable[A];
  switch (Info.Kind) {
  case ActionKind::MachineOutliner:
  case ActionKind::MachineOutlinerOff:
    if (!llvm_compat::machineOutlinerOption())
      return mlb::Status(mlb::ErrorCode::Unavailable,
                         "this LLVM has no -enable-machine-outliner");
    Outline = Info.Kind == ActionKind::MachineOutliner;
    return mlb::Status::ok();
  case ActionKind::NoOutlineSmall: {
    bool Changed = false;
    for (Function &F : M)
      if (!F.isDeclaration() && !F.hasFnAttribute("nooutline") &&
          F.getInstructionCount() < NoOutlineBelowInstructions) {
        F.addFnAttr("nooutline");
        Changed = true;
      }
    if (Changed)
      MAM.invalidate(M, PreservedAnalyses::none());
    return mlb::Status::ok();
  }
  case ActionKind::Pipeline:
    break;
  }
  if (StringRef(Info.Pipeline) == "iroutliner" && !irOutlinerKeepsModuleValid(M, PB, MAM))
    return mlb::Status::ok(); // a no-op, as when it finds nothing to outline
  ModulePassManager Action;
  if (Error E = PB.parsePassPipeline(Action, Info.Pipeline))
    return mlb::Status(mlb::ErrorCode::Internal, std::string("action ") + ActionNames[A] +
                                                      ": " + toString(std::move(E)));
  PreservedAnalyses PA = Action.run(M, MAM);
  (void)PA; // the nested pass manager already invalidated what it changed
  return mlb::Status::ok();
}

// ---- the start: the stock size flags ------------------------------------------------

/// The flags an episode can start from (-mlbridge-po-start), by the names
/// mlbridge.train.baselines gives them: -Xclang -fmerge-functions, -mllvm
/// -ir-outliner, -mllvm -enable-machine-outliner=always.
constexpr const char *StartFlagNames[] = {"mergefunc", "ir-outliner", "machine-outliner"};

/// Applies the flags named in \p Start (comma-separated) to \p M the way
/// clang's -Oz applies them after OptimizerLast, where this pass runs: the
/// IR outliner, global DCE and constant merging, function merging, in that
/// order (clang runs global DCE and constant merging again afterwards,
/// which then change nothing); the machine outliner for the module's code
/// generation (\p Outline). Sets \p Applied when the module or the outliner
/// decision changed.
mlb::Status applyStart(Module &M, StringRef Start, PassBuilder &PB,
                       ModuleAnalysisManager &MAM, bool &Applied, bool &Outline) {
  bool Want[std::size(StartFlagNames)] = {};
  SmallVector<StringRef, 4> Names;
  Start.split(Names, ',', -1, /*KeepEmpty=*/false);
  for (StringRef N : Names) {
    N = N.trim();
    auto *It = llvm::find(StartFlagNames, N);
    if (It == std::end(StartFlagNames))
      return mlb::Status(mlb::ErrorCode::InvalidArgument,
                         "-mlbridge-po-start: unknown flag '" + N.str() +
                             "' (mergefunc, ir-outliner, machine-outliner; or none)");
    Want[It - std::begin(StartFlagNames)] = true;
  }
  const bool MergeFunctions = Want[0], IROutliner = Want[1], MachineOutliner = Want[2];
  if (MachineOutliner && !llvm_compat::machineOutlinerOption())
    return mlb::Status(mlb::ErrorCode::Unavailable,
                       "-mlbridge-po-start: this LLVM has no -enable-machine-outliner");
  if (MergeFunctions || IROutliner) {
    const bool RunIROutliner = IROutliner && irOutlinerKeepsModuleValid(M, PB, MAM);
    std::string Pipeline = RunIROutliner ? "iroutliner," : "";
    Pipeline += "globaldce,constmerge";
    if (MergeFunctions)
      Pipeline += ",mergefunc";
    ModulePassManager MPM;
    if (Error E = PB.parsePassPipeline(MPM, Pipeline))
      return mlb::Status(mlb::ErrorCode::Internal,
                         "-mlbridge-po-start: " + toString(std::move(E)));
    MPM.run(M, MAM);
    Applied = true;
  }
  if (MachineOutliner) {
    Outline = true;
    Applied = true;
  }
  return mlb::Status::ok();
}

} // namespace mlbridge::phaseorder
