//===- PhaseOrderPlugin.cpp - Phase ordering as an RL environment ---------===//
//
// An LLVM 19 pass plugin with one module pass, `mlbridge-phase-order`, that
// lets an agent choose the optimization sequence (POSET-RL style):
//
//   observe the module (instruction mix and CFG counts, below)
//   -> the agent picks one of 21 actions (sub-sequences of LLVM's -Oz
//      pipeline, the whole -Oz module pipeline again, the size passes -Oz
//      leaves out, the machine outliner on or off for the module, nooutline
//      on small functions) or STOP
//   -> the pass runs it; the reward is the change in the module's .text
//   ... until STOP, an action that changes nothing, one request too many
//   for the IR outliner (-mlbridge-po-ir-outliner-runs), or the step budget.
//
// The episode starts where -Oz ends, or (-mlbridge-po-start) from the
// module as the stock size flags would leave it: the IR outliner and
// function merging run where clang runs them for -mllvm -ir-outliner and
// -Xclang -fmerge-functions, and the machine outliner is on for the
// module's code generation, so STOP at once gives their object byte for
// byte and the agent only adds to or undoes parts of them.
//
// The built-in model comes with the start flags, step budget and IR-outliner
// bound it was trained and measured with (its policy.json, compiled in as
// PhaseOrderShipped.h): a user who sets nothing runs it as measured; an
// option or environment variable still wins (episodeSettings).
//
// It is an mlbridge::rl::Environment run by an rl::Driver, so the same code
// runs against a Python agent over pipes or gRPC while training and against
// an ONNX or compiled-in agent in-process when deployed; only the runner
// changes (-mlbridge-po-runner). The integration is the library's three
// lines: make a runner (makeRunner), write the observation
// (Runner.getTensor<float>(0) via FeatureBinding::write, in observe()), get
// the action (the Driver's Agent::act() evaluates the runner).
//
// Observation (float32 [1, 27], raw counts over the module's defined
// functions; docs/llvm-plugins.md): see ObservationNames.
// Actions: see ActionTable; the last one is STOP.
// Code size (the reward's measure, -mlbridge-po-size): by default the bytes
// of executable sections in the object the host's own TargetMachine makes
// of a copy of the module (what `clang -c` would write); `tti` is the sum of
// TargetTransformInfo's code-size cost instead (an estimate, no codegen).
// Reward of a step = code size before - code size after (positive = smaller).
//
// Over pipes/gRPC the agent also gets code_size, step and done (int64 [1])
// and, with -mlbridge-po-lookahead, the code size after each action
// (int64 [1, 21], for oracles; -1 where an action failed or is spent);
// after the last step the pass sends one more observation with done = 1
// (its reply is ignored) so a trainer learns the last reward. An in-process
// agent gets only the observation and no code is generated for it.
//
// A model that is missing or fails: a warning through LLVM's diagnostic
// handler, the episode ends (STOP), the compile succeeds.
//
//===----------------------------------------------------------------------===//

#include "PluginEntry.h"
#include "PluginEmbeddings.h"
#include "PluginSupport.h"

#include "mlbridge/json_escape.h"
#include "mlbridge/model_runner.h"
#include "mlbridge/rl.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/TargetTransformInfo.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/StructuralHash.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Passes/PassBuilder.h"
#include "LLVMCompat.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/Cloning.h"

#if MLBRIDGE_INTEGRATION_HAVE_COMPILED
#include "PhaseOrderPolicy.h" // generated from models/plugins/phase_order_policy.onnx
#endif
#if MLBRIDGE_PO_SHIPPED_SETTINGS
#include "PhaseOrderShipped.h" // its settings, from models/plugins/phase_order_policy.json
#endif

#include <array>
#include <cstdlib>
#include <optional>
#include <memory>
#include <string>
#include <vector>

using namespace llvm;
namespace mlb = mlbridge;
namespace mlp = mlbridge::plugins;
namespace llvm_compat = mlbridge::llvm_compat;

namespace {

constexpr const char *Prefix = "mlbridge-phase-order";

// ---- observation --------------------------------------------------------------

// The names, shapes and orders of the protocol: PhaseOrderProtocol.def (the
// one definition the Python side parses too); each #include picks one kind
// of item from it.
#define MLB_CONST(Name, Value) constexpr int64_t Name = Value;
#include "PhaseOrderProtocol.def"

/// Columns of "observation" (what each counts: PhaseOrderProtocol.def).
enum Obs : size_t {
#define MLB_LIST_Observation(E, Name) E,
#include "PhaseOrderProtocol.def"
  NumObservations
};

const char *const ObservationNames[NumObservations] = {
#define MLB_LIST_Observation(E, Name) #Name,
#include "PhaseOrderProtocol.def"
};

/// The actions' names, STOP last (their pipelines: ActionTable).
const char *const ActionNames[] = {
#define MLB_LIST_Action(E, Name) #Name,
#include "PhaseOrderProtocol.def"
};

// ---- actions: sub-sequences of LLVM 19's -Oz pipeline --------------------------

/// How an action changes the module: a pass pipeline, or one of the two
/// code-generation decisions no pass pipeline expresses.
enum class ActionKind {
  Pipeline,        // run Pipeline (textual, as opt -passes= takes it)
  MachineOutliner, // outline repeated machine code in this module's codegen
  MachineOutlinerOff, // no machine outlining in this module's codegen
  NoOutlineSmall,  // mark small functions "nooutline" (both outliners skip them)
};

/// One action of ActionTable; its name is ActionNames[] at the same index.
struct ActionInfo {
  const char *Pipeline; // the pipeline, or what the action does (-describe)
  ActionKind Kind = ActionKind::Pipeline;
  /// Runs at most -mlbridge-po-ir-outliner-runs times per episode; asking
  /// for it once more ends the episode. For an action whose every run finds
  /// more to do, at a high compile cost.
  bool RunLimited = false;
};

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
constexpr int64_t StopAction = NumPassActions;     // 21
constexpr int64_t NumActions = NumPassActions + 1; // 22

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

/// Writes the decision \p Outline into \p M: off is "nooutline" on every
/// defined function. Returns whether M changed.
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

// ---- options -------------------------------------------------------------------

cl::OptionCategory Category("MLBridge phase-ordering plugin");

/// -mlbridge-po-{runner,model,channel,server,format,timeout-ms}
/// (integrations/common/RunnerSettings.h). The ONNX policy takes input
/// 'observation' float[1,25] and outputs one score per action (argmax) or
/// the action; runner 'default' means no agent: the pass does nothing.
const mlp::RunnerOptions RunnerOpts("mlbridge-po", "MLBRIDGE_PO_", Category);
cl::opt<unsigned> MaxStepsOpt(
    "mlbridge-po-max-steps", cl::cat(Category), cl::init(10),
    cl::desc("Step budget of an episode (actions before it ends); default: "
             "the built-in model's when it is the agent, else 10. Env: "
             "MLBRIDGE_PO_MAX_STEPS"));
cl::opt<unsigned> IROutlinerRunsOpt(
    "mlbridge-po-ir-outliner-runs", cl::cat(Category), cl::init(2),
    cl::desc("Runs of the IR outliner action per episode; asking for one more "
             "ends the episode (each run outlines again what the last one "
             "made, at about its compile time; 2, chosen on validation, "
             "was the smallest; the built-in model's if it records one). "
             "Env: MLBRIDGE_PO_IR_OUTLINER_RUNS"));
cl::opt<std::string> LogOpt(
    "mlbridge-po-log", cl::cat(Category),
    cl::desc("Append one JSON line per episode (actions, code sizes) to this "
             "file. Env: MLBRIDGE_PO_LOG"));
cl::opt<std::string> DescribeOpt(
    "mlbridge-po-describe", cl::cat(Category),
    cl::desc("Write the protocol (features, advice, observation and action "
             "names, each action's pipeline) as JSON to this file; the "
             "compile goes on as without. Env: MLBRIDGE_PO_DESCRIBE"));
cl::opt<bool> EnableOpt(
    "mlbridge-po-enable", cl::cat(Category), cl::init(false),
    cl::desc("Also run the pass at the end of clang's/opt's optimization "
             "pipeline (OptimizerLast). Env: MLBRIDGE_PO_ENABLE"));
cl::opt<std::string> StartOpt(
    "mlbridge-po-start", cl::cat(Category),
    cl::desc("Start the episode from the module as these stock size flags "
             "leave it (comma-separated: mergefunc, ir-outliner, "
             "machine-outliner; none: where -Oz ends); STOP at once then "
             "gives their object. Default: the flags the built-in model was "
             "trained from when it is the agent, else none. Env: "
             "MLBRIDGE_PO_START"));
cl::opt<std::string> SizeOpt(
    "mlbridge-po-size", cl::cat(Category), cl::init("auto"),
    cl::desc("The reward's code size: text (bytes of executable sections of "
             "the object the host's TargetMachine makes of the module) | tti "
             "(TargetTransformInfo's estimate, no codegen) | auto (text for a "
             "pipe or gRPC agent, none for an in-process one). Env: "
             "MLBRIDGE_PO_SIZE"));
cl::opt<bool> LookaheadOpt(
    "mlbridge-po-lookahead", cl::cat(Category), cl::init(false),
    cl::desc("Send a pipe or gRPC agent the code size after each action from "
             "the current state (feature 'lookahead', -1 where an action "
             "failed or may not run again): one copy of the module and one "
             "codegen per action and step, for oracles and data collection. "
             "Env: MLBRIDGE_PO_LOOKAHEAD"));
cl::opt<std::string> VocabOpt(
    "mlbridge-po-vocab", cl::cat(Category),
    cl::desc("IR2Vec's vocabulary for the 'embedding' input (LLVM 19: "
             "seedEmbeddingVocab.txt, LLVM 22: seedEmbeddingVocab.json); "
             "default: the one scripts/deps/ir2vec.sh installed for this "
             "build. Env: MLBRIDGE_PO_VOCAB"));
cl::opt<bool> VerboseOpt(
    "mlbridge-po-verbose", cl::cat(Category), cl::init(false),
    cl::desc("Report the runner and each action as remarks. Env: "
             "MLBRIDGE_PO_VERBOSE"));

// ---- the episode's settings ----------------------------------------------------------

/// Where a setting of the episode came from (the log line names it).
enum class From { Option, Environment, Model, Default };

const char *fromName(From F) {
  switch (F) {
  case From::Option:
    return "option";
  case From::Environment:
    return "environment";
  case From::Model:
    return "model";
  case From::Default:
    break;
  }
  return "default";
}

/// The rule of every setting: the option if given, else its environment
/// variable if set and non-empty, else the built-in model's value when it
/// is the agent and records one, else the option's default.
From settingFrom(const cl::Option &Opt, const char *Env, bool ModelHasIt) {
  if (Opt.getNumOccurrences() > 0)
    return From::Option;
  if (const char *V = std::getenv(Env); V && *V)
    return From::Environment;
  return ModelHasIt ? From::Model : From::Default;
}

struct EpisodeSettings {
  std::string Start; // comma-separated start flags; empty: where -Oz ends
  unsigned MaxSteps = 0;
  unsigned IROutlinerRuns = 0;
  From StartFrom = From::Default, MaxStepsFrom = From::Default,
       IROutlinerRunsFrom = From::Default;
};

/// The episode's settings; \p Shipped: the agent is the built-in model.
EpisodeSettings episodeSettings(bool Shipped) {
  std::optional<std::string> ModelStart;
  std::optional<unsigned> ModelSteps, ModelRuns;
#if MLBRIDGE_PO_SHIPPED_SETTINGS
  if (Shipped) {
    namespace shipped = mlbridge_plugins::phase_order_shipped;
    ModelStart = shipped::Start;
    ModelSteps = shipped::MaxSteps;
    if (shipped::IROutlinerRuns >= 0)
      ModelRuns = static_cast<unsigned>(shipped::IROutlinerRuns);
  }
#else
  (void)Shipped;
#endif
  EpisodeSettings S;
  S.StartFrom = settingFrom(StartOpt, "MLBRIDGE_PO_START", ModelStart.has_value());
  S.Start = S.StartFrom == From::Model ? *ModelStart
                                       : mlp::stringSetting(StartOpt, "MLBRIDGE_PO_START");
  if (S.Start == "none") // no start flags (an empty variable is "not set")
    S.Start.clear();
  S.MaxStepsFrom = settingFrom(MaxStepsOpt, "MLBRIDGE_PO_MAX_STEPS", ModelSteps.has_value());
  S.MaxSteps = S.MaxStepsFrom == From::Model
                   ? *ModelSteps
                   : mlp::unsignedSetting(MaxStepsOpt, "MLBRIDGE_PO_MAX_STEPS");
  S.IROutlinerRunsFrom =
      settingFrom(IROutlinerRunsOpt, "MLBRIDGE_PO_IR_OUTLINER_RUNS", ModelRuns.has_value());
  S.IROutlinerRuns =
      S.IROutlinerRunsFrom == From::Model
          ? *ModelRuns
          : mlp::unsignedSetting(IROutlinerRunsOpt, "MLBRIDGE_PO_IR_OUTLINER_RUNS");
  return S;
}

// ---- the environment --------------------------------------------------------------

/// Feature indices of the pass (FeatureBinding): an in-process model takes
/// only "observation"; pipes and gRPC get the others too ("lookahead" only
/// with -mlbridge-po-lookahead).
/// Feature indices of the pass (FeatureBinding), in PhaseOrderProtocol.def's
/// order: an in-process model takes only "observation"; pipes and gRPC get
/// the others too ("lookahead" only with -mlbridge-po-lookahead).
enum PassFeature : size_t {
#define MLB_FEATURE(E, Name, Type, ...) E,
#define MLB_OPTIONAL_FEATURE(E, Name, Type, ...) E,
#include "PhaseOrderProtocol.def"
};

std::vector<mlb::TensorSpec> requiredFeatureSpecs() {
  return {
#define MLB_FEATURE(E, Name, Type, ...) mlb::TensorSpec::create<Type>(#Name, {__VA_ARGS__}),
#include "PhaseOrderProtocol.def"
  };
}

std::vector<mlb::TensorSpec> optionalFeatureSpecs() {
  return {
#define MLB_OPTIONAL_FEATURE(E, Name, Type, ...)                                 \
  mlb::TensorSpec::create<Type>(#Name, {__VA_ARGS__}),
#include "PhaseOrderProtocol.def"
  };
}

std::vector<mlb::TensorSpec> phaseOrderFeatureSpecs(bool Lookahead) {
  std::vector<mlb::TensorSpec> Specs = requiredFeatureSpecs();
  if (Lookahead)
    for (mlb::TensorSpec &S : optionalFeatureSpecs())
      Specs.push_back(std::move(S));
  return Specs;
}

mlb::TensorSpec protocolAdviceSpec() {
#define MLB_ADVICE(Name, Type, ...) return mlb::TensorSpec::create<Type>(#Name, {__VA_ARGS__});
#include "PhaseOrderProtocol.def"
}

enum class SizeMeasure { None, Text, TTI };

/// The code generator that measures .text: a TargetMachine for the
/// module's triple, relocation model from its PIC level, the optimization
/// level clang uses for -Os/-Oz (Default). The CPU and features come from
/// each function's attributes, as in clang's own code generation. (LLVM 19's
/// PassBuilder does not hand its TargetMachine to plugins.)
mlb::Expected<std::unique_ptr<TargetMachine>> makeSizingTarget(const Module &M) {
  std::string Err;
  const Triple T(M.getTargetTriple());
  const Target *Tgt = TargetRegistry::lookupTarget(llvm_compat::tripleArg(T), Err);
  if (!Tgt)
    return mlb::Status(mlb::ErrorCode::InvalidArgument,
                       "no target for triple '" + T.str() + "': " + Err);
  const Reloc::Model RM =
      M.getPICLevel() == PICLevel::NotPIC ? Reloc::Static : Reloc::PIC_;
  std::unique_ptr<TargetMachine> TM(Tgt->createTargetMachine(
      llvm_compat::tripleArg(T), "", "", TargetOptions(), RM, std::nullopt,
      CodeGenOptLevel::Default));
  if (!TM)
    return mlb::Status(mlb::ErrorCode::Internal,
                       "cannot make a TargetMachine for '" + T.str() + "'");
  return TM;
}

/// The bytes of executable sections (.text and friends) in the object file
/// \p TM makes of a copy of \p M with the machine-outliner decision
/// \p Outline -- what the corpus and `size` call the object's .text.
mlb::Expected<int64_t> textSize(const Module &M, TargetMachine &TM, bool Outline) {
  std::unique_ptr<Module> Copy = CloneModule(M);
  markOutliner(*Copy, Outline);
  SmallVector<char, 0> Object;
  raw_svector_ostream OS(Object);
  legacy::PassManager CodeGen;
  if (TM.addPassesToEmitFile(CodeGen, OS, nullptr, CodeGenFileType::ObjectFile))
    return mlb::Status(mlb::ErrorCode::Internal,
                       "the target cannot write object files");
  CodeGen.run(*Copy);
  auto Obj = object::ObjectFile::createObjectFile(
      MemoryBufferRef(StringRef(Object.data(), Object.size()), "code-size"));
  if (!Obj)
    return mlb::Status(mlb::ErrorCode::Internal,
                       "cannot read the object just made: " +
                           toString(Obj.takeError()));
  int64_t Size = 0;
  for (const object::SectionRef &S : (*Obj)->sections())
    if (S.isText())
      Size += static_cast<int64_t>(S.getSize());
  return Size;
}

/// The .text of a copy of \p M after action \p A, from the machine-outliner
/// decision \p Outline. The copy is optimized with the host's own analysis
/// managers (the same analyses, e.g. clang's TargetLibraryInfo, as the real
/// step), and its cached results are cleared before the copy goes away, so
/// nothing stale keyed by its address stays behind.
mlb::Expected<int64_t> sizeAfterAction(const Module &M, int64_t A, PassBuilder &PB,
                                       ModuleAnalysisManager &MAM,
                                       TargetMachine &TM, bool Outline) {
  std::unique_ptr<Module> Copy = CloneModule(M);
  mlb::Status S = applyAction(*Copy, A, PB, MAM, Outline);
  mlb::Expected<int64_t> Size =
      S.isOk() ? textSize(*Copy, TM, Outline) : mlb::Expected<int64_t>(std::move(S));
  MAM.clear(*Copy, Copy->getName()); // also clears the function analyses
  return Size;
}

/// True while an episode runs on this thread: the "oz" action builds the
/// host's -Oz pipeline, whose OptimizerLast callbacks would start a nested
/// episode.
thread_local bool InEpisode = false;

class PhaseOrderEnv final : public mlb::rl::Environment {
public:
  /// Embedder: IR2Vec's module vector for the "embedding" input, or null
  /// (no vocabulary: the input stays zero).
  PhaseOrderEnv(Module &M, ModuleAnalysisManager &MAM, PassBuilder &PB,
                const mlp::FeatureBinding &Binding, unsigned MaxSteps,
                unsigned LimitedRuns, SizeMeasure Size, bool Lookahead, bool Verbose,
                mlb::ir2vec::PluginEmbeddings *Embedder, bool &Outline)
      : M(M), MAM(MAM), PB(PB), Binding(Binding), MaxSteps(MaxSteps),
        LimitedRuns(LimitedRuns), Size(Size), Lookahead(Lookahead),
        Verbose(Verbose), Embedder(Embedder), Outline(Outline) {}

  mlb::Status reset() override {
    Steps = 0;
    Runs.fill(0);
    Trace.clear();
    Sizes.clear();
    if (mlb::Status S = measure(); !S.isOk())
      return S;
    if (Size != SizeMeasure::None) // the log lists only measured sizes
      Sizes.push_back(CodeSizeNow);
    if (MaxSteps == 0)
      setDone();
    return mlb::Status::ok();
  }

  mlb::Status observe(mlb::ModelRunner &Runner) override {
    if (Lookahead && Binding.has(FLookahead))
      lookahead();
    writeFeatures(Runner, /*Done=*/false);
    return mlb::Status::ok();
  }

  mlb::Status step(const mlb::rl::Action &A) override {
    if (A.Index < 0 || A.Index >= NumActions)
      return mlb::Status(mlb::ErrorCode::InvalidArgument,
                         "action " + std::to_string(A.Index) +
                             " is not one of the " + std::to_string(NumActions) +
                             " actions (0.." + std::to_string(NumActions - 1) +
                             ", " + std::to_string(StopAction) + " = stop)");
    Trace.push_back(A.Index);
    if (A.Index == StopAction) {
      setDone();
      return mlb::Status::ok();
    }
    if (spent(A.Index)) { // as a no-op: a step that leaves the module, the end
      ++Steps;
      ++NoOps;
      Observation[Step] = static_cast<float>(Steps);
      if (Size != SizeMeasure::None)
        Sizes.push_back(CodeSizeNow);
      if (Verbose)
        mlp::diagnose(M.getContext(), Prefix, DS_Remark,
                      "step " + Twine(Steps) + ": " + ActionNames[A.Index] +
                          " has had its runs in this episode: the episode ends");
      setDone();
      return mlb::Status::ok();
    }
    ++Runs[A.Index];
    const int64_t Before = CodeSizeNow;
    const std::array<float, NumObservations> ObservedBefore = Observation;
    const auto HashBefore = StructuralHash(M, /*DetailedHash=*/true);
    // Parsing of the pipelines was checked when the pass started.
    if (mlb::Status S = applyAction(M, A.Index, PB, MAM, Outline); !S.isOk())
      return S;
    ++Steps;
    if (mlb::Status S = measure(); !S.isOk())
      return S;
    if (Size != SizeMeasure::None)
      Sizes.push_back(CodeSizeNow);
    // No-op detection: the module is as it was, so the state the agent sees
    // next is the one it just acted on; a deterministic agent would choose
    // the same action again until the step budget ran out. The episode ends.
    auto SameCounts = [&] {
      for (size_t I = 0; I < NumObservations; ++I)
        if (I != Step && Observation[I] != ObservedBefore[I])
          return false;
      return true;
    };
    const bool NoOp = StructuralHash(M, /*DetailedHash=*/true) == HashBefore &&
                      SameCounts() && CodeSizeNow == Before;
    Changed = Changed || !NoOp;
    if (NoOp)
      ++NoOps;
    if (Verbose)
      mlp::diagnose(M.getContext(), Prefix, DS_Remark,
                    "step " + Twine(Steps) + ": " + ActionNames[A.Index] +
                        ", code size " + Twine(Before) + " -> " +
                        Twine(CodeSizeNow) + (NoOp ? " (no change)" : ""));
    if (Steps >= MaxSteps || NoOp)
      setDone();
    return mlb::Status::ok();
  }

  /// Without a usable model: stop optimizing (keep the module as it is).
  std::optional<int64_t> fallbackAction() override { return StopAction; }

  /// The last observation, done = 1, for a training peer.
  void writeFeatures(mlb::ModelRunner &Runner, bool Done) {
    Binding.write(Runner, FObservation, Observation.data());
    if (Binding.has(FEmbedding))
      Binding.write(Runner, FEmbedding, Embedding.data());
    const int64_t Size = CodeSizeNow, Step = Steps, D = Done ? 1 : 0;
    Binding.write(Runner, FCodeSize, &Size);
    Binding.write(Runner, FStep, &Step);
    Binding.write(Runner, FDone, &D);
    if (Binding.has(FLookahead))
      Binding.write(Runner, FLookahead, LookaheadSizes.data());
  }

  const std::vector<int64_t> &trace() const { return Trace; }
  const std::vector<int64_t> &sizes() const { return Sizes; }
  bool changed() const { return Changed; }
  unsigned noOps() const { return NoOps; }

private:
  mlb::Status measure();
  void lookahead();
  /// A run-limited action that has had its runs in this episode.
  bool spent(int64_t A) const {
    return ActionTable[A].RunLimited && Runs[A] >= LimitedRuns;
  }

  Module &M;
  ModuleAnalysisManager &MAM;
  PassBuilder &PB;
  const mlp::FeatureBinding &Binding;
  unsigned MaxSteps;
  unsigned LimitedRuns;
  SizeMeasure Size;
  bool Lookahead;
  bool Verbose;
  mlb::ir2vec::PluginEmbeddings *Embedder;
  bool &Outline; // the module's machine-outliner decision (the pass writes it)
  unsigned Steps = 0;
  unsigned NoOps = 0;
  bool Changed = false;
  int64_t CodeSizeNow = 0;
  std::array<float, NumObservations> Observation{};
  std::array<float, EmbeddingDim> Embedding{};
  std::array<int64_t, NumPassActions> LookaheadSizes{};
  std::array<unsigned, NumPassActions> Runs{}; // of each action, this episode
  std::unique_ptr<TargetMachine> SizingTarget; // made on first use
  std::vector<int64_t> Trace;
  std::vector<int64_t> Sizes;
};

void PhaseOrderEnv::lookahead() {
  if (!SizingTarget) { // measure() makes it whenever Size is Text
    LookaheadSizes.fill(-1);
    return;
  }
  for (int64_t A = 0; A < NumPassActions; ++A) {
    LookaheadSizes[A] = -1;
    if (spent(A)) // not available: asking for it would end the episode
      continue;
    if (auto T = sizeAfterAction(M, A, PB, MAM, *SizingTarget, Outline))
      LookaheadSizes[A] = *T;
  }
}

mlb::Status PhaseOrderEnv::measure() {
  std::array<int64_t, NumObservations> C{};
  FunctionAnalysisManager &FAM =
      MAM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager();
  for (Function &F : M) {
    if (F.isDeclaration())
      continue;
    ++C[Functions];
    if (F.hasFnAttribute("nooutline"))
      ++C[NoOutline];
    const TargetTransformInfo &TTI = FAM.getResult<TargetIRAnalysis>(F);
    const LoopInfo &LI = FAM.getResult<LoopAnalysis>(F);
    for (const Loop *L : LI.getLoopsInPreorder()) {
      ++C[Loops];
      C[MaxLoopDepth] =
          std::max<int64_t>(C[MaxLoopDepth], static_cast<int64_t>(L->getLoopDepth()));
    }
    for (BasicBlock &BB : F) {
      ++C[BasicBlocks];
      C[CFGEdges] += static_cast<int64_t>(succ_size(&BB));
      for (Instruction &I : BB) {
        ++C[Instructions];
        C[TTICodeSize] += llvm_compat::costValue(
            TTI.getInstructionCost(&I, TargetTransformInfo::TCK_CodeSize), 1);
        if (isa<LoadInst>(I))
          ++C[Loads];
        else if (isa<StoreInst>(I))
          ++C[Stores];
        else if (isa<AllocaInst>(I))
          ++C[Allocas];
        else if (isa<PHINode>(I))
          ++C[Phis];
        else if (isa<GetElementPtrInst>(I))
          ++C[GEPs];
        else if (isa<CastInst>(I))
          ++C[Casts];
        else if (isa<BinaryOperator>(I))
          ++C[I.getType()->isFPOrFPVectorTy() ? FPArith : IntArith];
        else if (isa<UnaryOperator>(I))
          ++C[FPArith];
        else if (isa<CmpInst>(I))
          ++C[Compares];
        else if (isa<SelectInst>(I))
          ++C[Selects];
        else if (isa<IntrinsicInst>(I))
          ++C[Intrinsics];
        else if (isa<CallBase>(I))
          ++C[Calls];
        else if (auto *Br = dyn_cast<BranchInst>(&I))
          ++C[Br->isConditional() ? CondBranches : UncondBranches];
        else if (isa<SwitchInst>(I))
          ++C[Switches];
        else if (isa<ReturnInst>(I))
          ++C[Returns];
      }
    }
  }
  for (const GlobalVariable &G : M.globals())
    if (!G.isDeclaration())
      ++C[GlobalVariables];
  C[MachineOutliner] = Outline ? 1 : 0;
  C[Step] = Steps;
  for (size_t I = 0; I < NumObservations; ++I)
    Observation[I] = static_cast<float>(C[I]);
  if (Embedder && Binding.has(FEmbedding)) {
    Embedder->invalidateAll(); // the last action may have changed any function
    const mlb::ir2vec::Vector V = Embedder->module(M);
    const double PerInstruction = 1.0 / std::max<int64_t>(1, C[Instructions]);
    for (size_t I = 0; I < static_cast<size_t>(EmbeddingDim); ++I)
      Embedding[I] = I < V.size() ? static_cast<float>(V[I] * PerInstruction) : 0.0f;
  }
  CodeSizeNow = 0;
  if (Size == SizeMeasure::TTI) {
    CodeSizeNow = C[TTICodeSize];
  } else if (Size == SizeMeasure::Text) {
    if (!SizingTarget) {
      auto TM = makeSizingTarget(M);
      if (!TM)
        return TM.takeStatus();
      SizingTarget = std::move(*TM);
    }
    mlb::Expected<int64_t> T = textSize(M, *SizingTarget, Outline);
    if (!T)
      return mlb::Status(mlb::ErrorCode::Internal,
                         "cannot measure .text: " + T.status().toString());
    CodeSizeNow = *T;
  }
  return mlb::Status::ok();
}

// ---- the pass ------------------------------------------------------------------------

constexpr mlp::EmbeddedModelRef Embedded = MLBRIDGE_EMBEDDED_MODEL(PhaseOrderPolicy);

/// The protocol (PhaseOrderProtocol.def) and, for readers of the old form,
/// "observation", "actions" with each one's pipeline, "stop".
std::string protocolDescription() {
  std::vector<mlp::ProtocolList> Lists;
#define MLB_LIST(List, E, Name) mlp::addListItem(Lists, #List, #Name);
#include "PhaseOrderProtocol.def"
  std::string J = ",\"observation\":[";
  for (size_t I = 0; I < NumObservations; ++I)
    J += std::string(I ? "," : "") + "\"" + ObservationNames[I] + "\"";
  J += "],\"actions\":[";
  for (int64_t I = 0; I < NumActions; ++I)
    J += std::string(I ? "," : "") + "{\"name\":\"" + ActionNames[I] + "\",\"pipeline\":\"" +
         (I < NumPassActions ? mlb::jsonEscape(ActionTable[I].Pipeline) : "") + "\"}";
  J += "],\"stop\":" + std::to_string(StopAction);
  return mlp::describeProtocol(requiredFeatureSpecs(), optionalFeatureSpecs(),
                               protocolAdviceSpec(), Lists, J);
}

class PhaseOrderPass : public PassInfoMixin<PhaseOrderPass> {
public:
  explicit PhaseOrderPass(PassBuilder &PB) : PB(&PB) {}

  PreservedAnalyses run(Module &M, ModuleAnalysisManager &MAM);
  static bool isRequired() { return true; }

private:
  PassBuilder *PB;
};

PreservedAnalyses PhaseOrderPass::run(Module &M, ModuleAnalysisManager &MAM) {
  if (InEpisode) // the "oz" action's pipeline reached OptimizerLast
    return PreservedAnalyses::all();
  LLVMContext &Ctx = M.getContext();
  const bool Verbose = mlp::boolSetting(VerboseOpt, "MLBRIDGE_PO_VERBOSE");
  mlp::writeDescription(Ctx, Prefix, mlp::stringSetting(DescribeOpt, "MLBRIDGE_PO_DESCRIBE"),
                        protocolDescription());

  mlb::Expected<mlp::RunnerSettings> C = RunnerOpts.read(Embedded.Name);
  if (!C) {
    mlp::diagnose(Ctx, Prefix, DS_Warning,
                  C.status().message() + "; the module is left as it is");
    return PreservedAnalyses::all();
  }
  const mlp::RunnerKind K = mlp::resolveRunnerKind(*C);
  const std::string LogPath = mlp::stringSetting(LogOpt, "MLBRIDGE_PO_LOG");
  const bool InterProcess =
      K == mlp::RunnerKind::Pipe || K == mlp::RunnerKind::Grpc;
  const std::string SizeText = mlp::stringSetting(SizeOpt, "MLBRIDGE_PO_SIZE");
  SizeMeasure Size = InterProcess ? SizeMeasure::Text : SizeMeasure::None;
  if (SizeText == "text")
    Size = SizeMeasure::Text;
  else if (SizeText == "tti")
    Size = SizeMeasure::TTI;
  else if (SizeText != "auto")
    mlp::diagnose(Ctx, Prefix, DS_Warning,
                  "unknown -mlbridge-po-size '" + SizeText +
                      "' (text, tti, auto); using auto");
  const bool Lookahead =
      InterProcess && mlp::boolSetting(LookaheadOpt, "MLBRIDGE_PO_LOOKAHEAD");
  const EpisodeSettings Settings = episodeSettings(K == mlp::RunnerKind::Compiled);
  auto Log = [&](const std::string &Runner, const PhaseOrderEnv *Env,
                 size_t FallbackSteps, const std::string &Error) {
    if (LogPath.empty())
      return;
    const std::vector<int64_t> None;
    mlp::appendLogLine(
        Ctx, Prefix, LogPath,
        mlp::LogLine(Prefix, M.getModuleIdentifier(), Runner,
                     Env ? Env->trace().size() : 0, FallbackSteps)
            .add("actions", Env ? Env->trace() : None)
            .add("code_size", Env ? Env->sizes() : None)
            .add("size", Size == SizeMeasure::Text  ? "text"
                         : Size == SizeMeasure::TTI ? "tti"
                                                    : "none")
            .add("no_ops", static_cast<int64_t>(Env ? Env->noOps() : 0))
            .add("start", Settings.Start)
            .add("start_from", fromName(Settings.StartFrom))
            .add("max_steps", static_cast<int64_t>(Settings.MaxSteps))
            .add("max_steps_from", fromName(Settings.MaxStepsFrom))
            .add("ir_outliner_runs", static_cast<int64_t>(Settings.IROutlinerRuns))
            .add("ir_outliner_runs_from", fromName(Settings.IROutlinerRunsFrom))
            .add("error", Error)
            .str());
  };
  bool Started = false; // the start flags changed the module or its codegen
  // The module's machine-outliner decision; once the pass has taken the
  // switch over (OwnsOutliner: every module with an agent configured), it
  // is written into the module however the pass ends.
  bool Outline = false, OwnsOutliner = false;
  auto Finish = [&](bool Changed) {
    if (OwnsOutliner && markOutliner(M, Outline))
      Changed = true;
    return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
  };
  auto GiveUp = [&](const Twine &Why) {
    mlp::diagnose(Ctx, Prefix, DS_Warning,
                  Why + (Started ? "; the module keeps the start flags only"
                                 : "; the module is left as it is"));
    Log(mlp::runnerKindName(K), nullptr, 0, Why.str());
    return Finish(Started);
  };

  if (K == mlp::RunnerKind::Default) {
    if (C->Kind != mlp::RunnerKind::Default)
      return GiveUp("no agent configured (set -mlbridge-po-model, -channel or "
                    "-server)");
    Log("default", nullptr, 0, "");
    return PreservedAnalyses::all();
  }

  // Before any module of this process reaches its code generation with an
  // agent configured (the same for all of them: the settings are the
  // process's), so every module's decision is written as attributes.
  if (std::optional<bool> UserOutline = takeOverMachineOutliner()) {
    Outline = *UserOutline;
    OwnsOutliner = true;
  }
  // The start flags apply whenever an agent is configured, so an agent
  // that fails leaves the flags' own result.
  if (mlb::Status S = applyStart(M, Settings.Start, *PB, MAM, Started, Outline); !S.isOk())
    return GiveUp(S.message());

  // The actions are built from their textual pipelines by the host's
  // PassBuilder (exactly the passes opt -passes= would run); check that
  // all of them parse before the episode starts.
  for (int64_t I = 0; I < NumPassActions; ++I) {
    if (ActionTable[I].Kind != ActionKind::Pipeline)
      continue;
    ModulePassManager Check;
    if (Error E = PB->parsePassPipeline(Check, ActionTable[I].Pipeline))
      return GiveUp(Twine("action ") + ActionNames[I] +
                    ": cannot build its pipeline: " + toString(std::move(E)));
  }

  mlp::RunnerRequest Req;
  Req.Features = phaseOrderFeatureSpecs(Lookahead);
  Req.Advice = protocolAdviceSpec();
  Req.Diagnostics = mlp::llvmDiagnosticSink(
      Ctx, Prefix, Verbose, "; the episode ends, the module keeps the actions applied so far");
  Req.MakeEmbedded = Embedded.Make;
  auto Bound = mlp::makeBoundRunner(K, *C, Req, "agent", "the pass");
  if (!Bound)
    return GiveUp(Bound.status().message());
  const mlp::FeatureBinding &Binding = Bound->Binding;
  mlb::ModelRunner &Runner = *Bound->Runner;
  if (!Binding.has(FObservation))
    return GiveUp("the agent's model has no input 'observation'");
  if (Verbose)
    mlp::diagnose(Ctx, Prefix, DS_Remark, mlp::runnerRemark(K, "actions chosen"));

  const unsigned MaxSteps = Settings.MaxSteps;
  // IR2Vec's vocabulary, only for an agent that takes the embedding.
  std::unique_ptr<mlb::ir2vec::PluginEmbeddings> Embedder;
  if (Binding.has(FEmbedding)) {
    auto E = mlb::ir2vec::PluginEmbeddings::create(
        {mlp::stringSetting(VocabOpt, "MLBRIDGE_PO_VOCAB"), mlb::ir2vec::Kind::Symbolic});
    if (E)
      Embedder = std::move(*E);
    else
      mlp::diagnose(Ctx, Prefix, DS_Warning,
                    E.status().message() +
                        "; the agent gets the counts only (embedding zero; "
                        "-mlbridge-po-vocab names another vocabulary)");
  }
  PhaseOrderEnv Env(M, MAM, *PB, Binding, MaxSteps, Settings.IROutlinerRuns, Size, Lookahead,
                    Verbose, Embedder.get(), Outline);
  mlb::rl::Driver Driver(Env);
  (void)Driver.addAgent("phase-order", Runner);
  mlb::rl::EpisodeOptions EO;
  EO.MaxSteps = static_cast<size_t>(MaxSteps) + 1; // + the STOP decision
  EO.Context = M.getModuleIdentifier();
  InEpisode = true;
  mlb::Expected<mlb::rl::EpisodeResult> R = Driver.runEpisode(EO);
  InEpisode = false;
  std::string Error;
  if (!R) {
    Error = R.status().toString();
    // A runner that became unavailable has said so once (its sink); the
    // episode's end is the same event, not a second warning.
    const DiagnosticSeverity Sev = Runner.isUnavailable() ? DS_Remark : DS_Warning;
    if (Sev == DS_Warning || Verbose)
      mlp::diagnose(Ctx, Prefix, Sev,
                    "episode ended early: " + Error +
                        "; the module keeps the actions applied so far");
  }
  // A trainer on the other side of a pipe or gRPC learns the last reward
  // from one more observation, marked done; its reply is not used.
  if (InterProcess && !Runner.isUnavailable()) {
    Env.writeFeatures(Runner, /*Done=*/true);
    (void)Runner.evaluateRaw();
  }
  Log(mlp::runnerKindName(K), &Env, R ? R->FallbackSteps : 0, Error);
  return Finish(Env.changed() || Started);
}

} // namespace

// The entry (llvmGetPassPluginInfo) is common/PluginEntry.cpp's: it refuses
// a host of another LLVM version.
::llvm::PassPluginLibraryInfo mlbridge::plugins::passPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "MLBridgePhaseOrder", LLVM_VERSION_STRING,
          [](PassBuilder &PB) {
            PB.registerPipelineParsingCallback(
                [&PB](StringRef Name, ModulePassManager &MPM,
                      ArrayRef<PassBuilder::PipelineElement>) {
                  if (Name != "mlbridge-phase-order")
                    return false;
                  MPM.addPass(PhaseOrderPass(PB));
                  return true;
                });
            llvm_compat::registerOptimizerLast(
                PB, [&PB](ModulePassManager &MPM, OptimizationLevel) {
                  if (mlp::boolSetting(EnableOpt, "MLBRIDGE_PO_ENABLE"))
                    MPM.addPass(PhaseOrderPass(PB));
                });
          }};
}
