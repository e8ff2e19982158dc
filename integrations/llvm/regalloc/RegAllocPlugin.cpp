//===- RegAllocPlugin.cpp - -regalloc=mlbridge, decided by a model ---------===//
//
// A register allocator for stock llc-19 / clang-19, loaded as a shared
// object (llc -load, clang -fplugin) and selected with -regalloc=mlbridge
// (docs/register-allocation.md). Every decision -- which live range next,
// assign / split / spill, which register -- is taken by a policy through
// the protocol of RegAllocProtocol.h: a model through any runner (pipes,
// gRPC, ONNX, compiled in), the built-in heuristic, or a seeded random legal
// policy (for fuzzing). Legality is decided by the allocator, never by
// the policy.
//
// The mechanics are LLVM's public ones: LiveIntervals, LiveRegMatrix for
// interference, VirtRegMap, RegisterClassInfo's allocation order and the
// target's hints, VirtRegAuxInfo spill weights, the inline spiller through
// LiveRangeEdit, and the stock VirtRegRewriter after us; the splitting is
// our own (RegAllocSplitting.cpp).
//
// This file: the options, the pass (one function: the policy chosen, its
// rounds run, the log line) and its registration, as -regalloc=mlbridge and
// when loaded as a pass plugin. The allocator's class is RegAllocPass.h,
// which says where the rest is. Also registers the score pass
// (RegAllocScore.cpp).
//
//===----------------------------------------------------------------------===//

#include "PluginEntry.h"
#include "RegAllocPass.h"

#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/CodeGen/LiveStacks.h"
#include "llvm/CodeGen/MachineDominators.h"
#include "llvm/CodeGen/RegAllocRegistry.h"
#include "llvm/CodeGen/SlotIndexes.h"
#include "llvm/CodeGen/TargetSubtargetInfo.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#if MLBRIDGE_REGALLOC_EMBEDDED
#include "RegAllocPolicy.h" // generated from models/plugins/regalloc_policy.onnx
#endif

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

// The registry of -regalloc lives in libLLVM; instantiating its static
// member here would make a private copy nobody reads (the plugin hides its
// symbols), so refer to LLVM's.
extern template llvm::MachinePassRegistry<llvm::RegisterRegAlloc::FunctionPassCtor>
    llvm::RegisterRegAllocBase<llvm::RegisterRegAlloc>::Registry;

namespace mlbridge::regalloc::detail {
namespace {

// ---- options -------------------------------------------------------------------

cl::OptionCategory Category("MLBridge register allocator (-regalloc=mlbridge)");

/// -mlbridge-ra-{runner,model,channel,server,format,timeout-ms}
/// (integrations/common/RunnerSettings.h).
const mlp::RunnerOptions RunnerOpts("mlbridge-ra", "MLBRIDGE_RA_", Category);
const mlp::Setting<std::string> PolicyOpt(
    "mlbridge-ra-policy", "MLBRIDGE_RA_POLICY", Category,
    "Who decides: model (the runner settings; with none, the model built "
    "into the plugin, else the heuristic) | heuristic | random (seeded "
    "legal choices, for fuzzing).", "model");
const mlp::Setting<unsigned> SeedOpt(
    "mlbridge-ra-seed", "MLBRIDGE_RA_SEED", Category,
    "Seed of the random policy (per function: seed + function name).", 1);
const mlp::Setting<unsigned> BudgetOpt(
    "mlbridge-ra-budget", "MLBRIDGE_RA_BUDGET", Category,
    "Allocation rounds per function before the rest is allocated by the "
    "fallback (assign a free register or spill); 0: 10 x the function's "
    "live ranges + 1000.", 0);
const mlp::Setting<bool> RecolorOpt(
    "mlbridge-ra-recolor", "MLBRIDGE_RA_RECOLOR", Category,
    "After allocation, move chains of copy-related ranges into one register "
    "where it is free and leaves fewer copies (greedy's hint recoloring); "
    "false: off.", true);
/// -mlbridge-ra-{log,verbose,describe}.
const mlp::ReportOptions Report(
    "mlbridge-ra", "MLBRIDGE_RA_", Category,
    {"Append one JSON line per function (decisions, spills, splits, "
     "evictions, fallbacks) to this file.",
     "Report the runner as a remark.",
     "Write the protocol (features, advice, lists) as JSON to this file on "
     "the first function; allocation goes on as without."});
const mlp::Setting<bool> EnableOpt(
    "mlbridge-ra-enable", "MLBRIDGE_RA_ENABLE", Category,
    "Loaded as a pass plugin (clang -fpass-plugin, lld "
    "--load-pass-plugin), make this the allocator of optimized code "
    "generation unless -regalloc is given (those hosts parse -mllvm "
    "before loading the plugin: set the environment variable).", false);

/// The model built in: models/plugins/regalloc_policy.onnx compiled in when
/// the build has it (MLBRIDGE_REGALLOC_EMBEDDED), else none (the heuristic).
#if MLBRIDGE_REGALLOC_EMBEDDED
mlb::integrations::EmbeddedModelRef Embedded = MLBRIDGE_EMBEDDED_MODEL(RegAllocPolicy);
#else
mlb::integrations::EmbeddedModelRef Embedded{};
#endif

/// Requires each of Passes and keeps it (in this order: the order of the
/// required ones is the order the legacy pass manager schedules them).
template <typename... Passes> void requireAndPreserve(AnalysisUsage &AU) {
  (AU.addRequired<Passes>().template addPreserved<Passes>(), ...);
}

} // namespace

// ---- the pass -----------------------------------------------------------------------

char MLBridgeRegAlloc::ID = 0;

void MLBridgeRegAlloc::getAnalysisUsage(AnalysisUsage &AU) const {
  // What LLVM's own allocators use; the inline spiller takes LiveStacks,
  // the dominator tree and block frequencies from this pass.
  AU.setPreservesCFG();
  requireAndPreserve<AAResultsWrapperPass, LiveIntervalsWrapperPass>(AU);
  AU.addPreserved<SlotIndexesWrapperPass>();
  requireAndPreserve<llvm_compat::LiveDebugVariablesPass, llvm_compat::LiveStacksPass,
                     MachineBlockFrequencyInfoWrapperPass, MachineDominatorTreeWrapperPass,
                     MachineLoopInfoWrapperPass, llvm_compat::VirtRegMapPass,
                     llvm_compat::LiveRegMatrixPass>(AU);
  MachineFunctionPass::getAnalysisUsage(AU);
}

void MLBridgeRegAlloc::finish() {
  SpillerInstance->postOptimization();
  for (MachineInstr *Dead : DeadRemats) {
    LIS->RemoveMachineInstrFromMaps(*Dead);
    Dead->eraseFromParent();
  }
  DeadRemats.clear();
}

bool MLBridgeRegAlloc::runOnMachineFunction(MachineFunction &Fn) {
  MF = &Fn;
  TRI = MF->getSubtarget().getRegisterInfo();
  TII = MF->getSubtarget().getInstrInfo();
  MRI = &MF->getRegInfo();
  LIS = &getAnalysis<LiveIntervalsWrapperPass>().getLIS();
  Matrix = &llvm_compat::liveRegMatrix(*this);
  VRM = &llvm_compat::virtRegMap(*this);
  Loops = &getAnalysis<MachineLoopInfoWrapperPass>().getLI();
  LDV = &llvm_compat::liveDebugVariables(*this);
  MRI->freezeReservedRegs();
  RCI.runOnMachineFunction(*MF);
  MBFI = &getAnalysis<MachineBlockFrequencyInfoWrapperPass>().getMBFI();
  VRAI = std::make_unique<VirtRegAuxInfo>(*MF, *LIS, *VRM, *Loops, *MBFI);
  VRAI->calculateSpillWeightsAndHints();
  SpillerInstance.reset(llvm_compat::createInlineSpiller(*this, *MF, *VRM, *VRAI, *Matrix));
  Info.clear();
  intervalsChanged();
  Queue.clear();
  Queued.clear();
  St = Stats();
  Config.Seed = SeedOpt.get();
  Config.Budget = BudgetOpt.get();
  Config.Recolor = RecolorOpt.get();

  for (unsigned I = 0, E = MRI->getNumVirtRegs(); I != E; ++I) {
    Register R = Register::index2VirtReg(I);
    if (!MRI->reg_nodbg_empty(R))
      enqueue(R);
  }

  LLVMContext &Ctx = MF->getFunction().getContext();
  if (!Observation) { // the first function of this pass
    Observation = std::make_unique<ra::MIR2VecObservation>(Ctx);
    mlp::writeDescription(Ctx, Prefix, Report.describePath(),
                          protocolDescription(*Observation));
  }
  const bool Verbose = Report.verbose();
  const std::string PolicyText = PolicyOpt.get();
  PolicyKind Policy = PolicyKind::Model;
  if (PolicyText == "heuristic")
    Policy = PolicyKind::Heuristic;
  else if (PolicyText == "random")
    Policy = PolicyKind::Random;
  else if (PolicyText != "model") {
    if (!RunnerTried)
      mlp::diagnose(Ctx, Prefix, DS_Warning,
                    "unknown -mlbridge-ra-policy '" + PolicyText +
                        "' (model, heuristic, random); using the heuristic");
    RunnerTried = true;
    Policy = PolicyKind::Heuristic;
  }

  std::string Used = Policy == PolicyKind::Random ? "random" : "heuristic";
  std::string Error;
  mlp::FeatureBinding Binding;
  if (Policy == PolicyKind::Model && !RunnerTried) {
    // Once per compiler process: the runner (a pipe connection, a model
    // loaded) serves every function.
    RunnerTried = true;
    mlb::Expected<mlp::RunnerSettings> C = RunnerOpts.read(Embedded.Name);
    if (!C) {
      RunnerError = C.status().message();
    } else {
      RunnerKindUsed = mlp::resolveRunnerKind(*C);
      if (RunnerKindUsed != mlp::RunnerKind::Default) {
        mlp::RunnerRequest Req;
        Req.Features = modelFeatureSpecs(*Observation);
        Req.Advice = protocolAdviceSpec();
        // The runner's first failure is its one warning: the heuristic then
        // decides the rest of the compile, asking the model nothing more
        // (ModelFailed).
        Req.Diagnostics = mlp::llvmDiagnosticSink(
            Ctx, Prefix, Verbose, "; the built-in heuristic decides the rest of the compile");
        Req.MakeEmbedded = Embedded.Make;
        auto Bound = mlp::makeBoundRunner(RunnerKindUsed, *C, Req, "model",
                                          "the register allocator");
        if (!Bound)
          RunnerError = Bound.status().message();
        else
          Runner = std::move(Bound->Runner);
      }
    }
    if (!RunnerError.empty())
      mlp::diagnose(Ctx, Prefix, DS_Warning,
                    RunnerError + "; the built-in heuristic decides");
    else if (Verbose)
      mlp::diagnose(Ctx, Prefix, DS_Remark,
                    Runner ? mlp::runnerRemark(RunnerKindUsed, "decisions taken")
                           : std::string("no model: the built-in heuristic decides"));
  }
  if (Runner && (ModelFailed || Runner->isUnavailable())) {
    // A failed model, a dead peer or broken channel: the heuristic takes the
    // rest of the compile instead of failing every decision of every
    // function. Through the runner's sink: a warning only if it gave none.
    if (!ModelFailed)
      Runner->report(mlb::Severity::Warning,
                     "the model's runner is unavailable from '" + MF->getName().str() + "' on");
    Runner.reset();
  }
  if (Policy == PolicyKind::Model && Runner &&
      Binding.bind(*Runner, modelFeatureSpecs(*Observation)).isOk()) {
    Used = mlp::runnerKindName(RunnerKindUsed);
    Error = runModel(Binding);
  } else {
    runBuiltIn(Policy == PolicyKind::Random ? PolicyKind::Random
                                            : PolicyKind::Heuristic,
               MF->getFunction());
  }
  recolorHints();
  finish();

  const std::string LogPath = Report.logPath();
  if (!LogPath.empty()) {
    char Hash[17];
    snprintf(Hash, sizeof(Hash), "%016llx", static_cast<unsigned long long>(St.TraceHash));
    mlp::appendLogLine(
        Ctx, Prefix, LogPath,
        mlp::LogLine(Prefix, MF->getFunction().getParent()->getModuleIdentifier(), Used,
                     St.Decisions, St.FallbackRounds)
            .add("function", MF->getName())
            .add("rounds", static_cast<int64_t>(St.Rounds))
            .add("assigned", static_cast<int64_t>(St.Assigned))
            .add("evictions", static_cast<int64_t>(St.Evictions))
            .add("splits", static_cast<int64_t>(St.Splits))
            .add("loop_splits", static_cast<int64_t>(St.LoopSplits))
            .add("local_splits", static_cast<int64_t>(St.LocalSplits))
            .add("spills", static_cast<int64_t>(St.Spills))
            .add("illegal", static_cast<int64_t>(St.Illegal))
            .add("model_failures", static_cast<int64_t>(St.ModelFailures))
            .add("out_of_registers", static_cast<int64_t>(St.OutOfRegisters))
            .add("recolored", static_cast<int64_t>(St.Recolored))
            .add("trace", std::string(Hash))
            .add("error", Error)
            .str());
  }
  SpillerInstance.reset();
  VRAI.reset();
  return true;
}

bool MLBridgeRegAlloc::doFinalization(Module &M) {
  // A model that never answers legally (NaN scores, illegal indices) does
  // not fail, so no runner reports it: once per compile, here.
  if (ModelAnswers > 0 && IllegalAnswers == ModelAnswers)
    mlp::diagnose(M.getContext(), Prefix, DS_Warning,
                  "the model gave no legal answer in " + Twine(ModelAnswers) +
                      " decisions (NaN or an illegal choice every time): it is "
                      "broken; the built-in heuristic took every decision");
  ModelAnswers = IllegalAnswers = 0;
  return false;
}

} // namespace mlbridge::regalloc::detail

// ---- registration ------------------------------------------------------------------

using namespace mlbridge::regalloc::detail;

namespace {

FunctionPass *createMLBridgeRegAlloc() { return new MLBridgeRegAlloc(); }

// Registered only in a host of the LLVM this plugin was built for: loaded
// with llc -load or clang -fplugin, no entry is called that could refuse
// another one, so the registration asks (common/PluginEntry.h).
struct Registration {
  std::optional<RegisterRegAlloc> Allocator;
  Registration() {
    if (mlp::hostLLVMMatches())
      Allocator.emplace("mlbridge",
                        "MLBridge register allocator (decisions by a model, "
                        "docs/register-allocation.md)",
                        createMLBridgeRegAlloc);
  }
} MLBridgeRegAllocRegistration;

// ---- loaded as a pass plugin (clang -fpass-plugin, lld --load-pass-plugin) --
// Those hosts parse -mllvm before they load the plugin, so -regalloc=mlbridge
// cannot name it; MLBRIDGE_RA_ENABLE=1 makes it LLVM's default allocator
// instead. TargetPassConfig::createRegAllocPass takes
// RegisterRegAlloc::getDefault() and only when that is unset fills it from
// -regalloc, so the default is set before the code generator is built:
// when the optimization pipeline that precedes it is (per module, in the
// same thread, also in lld's LTO backends). Never at -O0 (LLVM's fast
// allocator stays), never over a -regalloc given on the command line.

bool regallocGiven() {
  const auto &Opts = cl::getRegisteredOptions(); // a StringMap on 19, a DenseMap on 22
  const auto It = Opts.find("regalloc");
  return It != Opts.end() && It->second->getNumOccurrences() > 0;
}

/// Once per process: the default is LLVM's process-wide registry, and the
/// setting is the same for every module (the environment, the command line).
void selectAsDefault(OptimizationLevel Level) {
  if (Level == OptimizationLevel::O0 || !MLBridgeRegAllocRegistration.Allocator)
    return;
  static std::once_flag Once;
  std::call_once(Once, [] {
    if (!regallocGiven())
      RegisterRegAlloc::setDefault(createMLBridgeRegAlloc);
  });
}

/// Loaded as a pass plugin with nothing asking for it: say how, once.
void adviseEnable() {
  static std::once_flag Once;
  std::call_once(Once, [] {
    if (EnableOpt.given() || regallocGiven())
      return;
    errs() << "warning: " << Prefix
           << ": MLBridgeRegAlloc.so is loaded as a pass plugin but selects no "
              "allocator: set MLBRIDGE_RA_ENABLE=1 to make it the default "
              "allocator of optimized code generation (or load it with "
              "-fplugin= / llc -load and pass -regalloc=mlbridge)\n";
  });
}

} // namespace

::llvm::PassPluginLibraryInfo mlbridge::plugins::passPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "MLBridgeRegAlloc", LLVM_VERSION_STRING,
          [](PassBuilder &PB) {
            if (!EnableOpt.get())
              return adviseEnable();
            // Every pipeline that code generation can follow: per module
            // (clang, ThinLTO's backends) and full LTO.
            llvm_compat::registerOptimizerLast(
                PB, [](ModulePassManager &, OptimizationLevel L) { selectAsDefault(L); });
            PB.registerFullLinkTimeOptimizationLastEPCallback(
                [](ModulePassManager &, OptimizationLevel L) { selectAsDefault(L); });
          }};
}
