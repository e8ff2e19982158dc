//===- PhaseOrderPlugin.cpp - Phase ordering as an RL environment ---------===//
//
// An LLVM 19 pass plugin with one module pass, `mlbridge-phase-order`, that
// lets an agent choose the optimization sequence (POSET-RL style):
//
//   observe the module (instruction mix and CFG counts, below)
//   -> the agent picks one of 15 pass sub-sequences of LLVM's -Oz pipeline,
//      or STOP
//   -> the pass runs it; the reward is the change in code size
//   ... until STOP or the step budget.
//
// It is an mlbridge::rl::Environment run by an rl::Driver, so the same code
// runs against a Python agent over pipes or gRPC while training and against
// an ONNX or compiled-in agent in-process when deployed; only the runner
// changes (-mlbridge-po-runner). The integration is the library's three
// lines: make a runner (makeRunner), write the observation
// (Runner.getTensor<float>(0) via FeatureBinding::write, in observe()), get
// the action (the Driver's Agent::act() evaluates the runner).
//
// Observation (float32 [1, 25], raw counts over the module's defined
// functions; docs/llvm-plugins.md): see ObservationNames.
// Actions: see ActionTable; action 15 is STOP.
// Code size (the reward's measure): sum over every instruction of every
// defined function of TargetTransformInfo's code-size cost (TCK_CodeSize,
// the target's estimate of the machine code an IR instruction becomes).
// Reward of a step = code size before - code size after (positive = smaller).
//
// Over pipes/gRPC the agent also gets code_size, step and done (int64 [1]);
// after the last step the pass sends one more observation with done = 1
// (its reply is ignored) so a trainer learns the last reward.
//
// A model that is missing or fails: a warning through LLVM's diagnostic
// handler, the episode ends (STOP), the compile succeeds.
//
//===----------------------------------------------------------------------===//

#include "PluginSupport.h"

#include "mlbridge/model_runner.h"
#include "mlbridge/rl.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/TargetTransformInfo.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"

#if MLBRIDGE_PLUGINS_HAVE_COMPILED
#include "mlbridge/compiled_model_runner.h"
#include "PhaseOrderPolicy.h" // generated from models/plugins/phase_order_policy.onnx
#endif

#include <array>
#include <memory>
#include <string>
#include <vector>

using namespace llvm;
namespace mlb = mlbridge;
namespace mlp = mlbridge::plugins;

namespace {

constexpr const char *Prefix = "mlbridge-phase-order";

// ---- observation --------------------------------------------------------------

enum Obs : size_t {
  Functions,       // defined functions
  BasicBlocks,     // basic blocks
  Instructions,    // IR instructions
  Loads,           // load
  Stores,          // store
  Allocas,         // alloca
  Phis,            // phi
  GEPs,            // getelementptr
  Casts,           // all cast instructions
  IntArith,        // binary operators on integers (and integer vectors)
  FPArith,         // binary operators on floating point, fneg
  Compares,        // icmp, fcmp
  Selects,         // select
  Calls,           // calls and invokes, intrinsics excluded
  Intrinsics,      // calls to intrinsics
  CondBranches,    // conditional br
  UncondBranches,  // unconditional br
  Switches,        // switch
  Returns,         // ret
  CFGEdges,        // sum of successor counts of all blocks
  Loops,           // natural loops (LoopInfo), nested ones included
  MaxLoopDepth,    // deepest loop nest in the module
  GlobalVariables, // defined global variables
  CodeSize,        // the reward's measure (see above)
  Step,            // actions taken so far in this episode
  NumObs
};

const char *const ObservationNames[NumObs] = {
    "functions",        "basic_blocks",    "instructions",  "loads",
    "stores",           "allocas",         "phis",          "geps",
    "casts",            "int_arith",       "fp_arith",      "compares",
    "selects",          "calls",           "intrinsics",    "cond_branches",
    "uncond_branches",  "switches",        "returns",       "cfg_edges",
    "loops",            "max_loop_depth",  "global_variables", "code_size",
    "step"};

// ---- actions: sub-sequences of LLVM 19's -Oz pipeline --------------------------

struct ActionInfo {
  const char *Name;
  const char *Pipeline; // textual, as opt -passes= takes it
};

#define MLB_SIMPLIFYCFG                                                        \
  "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-" \
  "icmp;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-sink-common-"  \
  "insts;speculate-blocks;simplify-cond-branch>"
#define MLB_INSTCOMBINE                                                        \
  "instcombine<max-iterations=1;no-use-loop-info;no-verify-fixpoint>"

const ActionInfo ActionTable[] = {
    // 0: the start of -Oz's function simplification.
    {"early-simplify",
     "function(lower-expect," MLB_SIMPLIFYCFG ",sroa<modify-cfg>,early-cse<>)"},
    // 1: interprocedural constant propagation and global cleanup.
    {"ipo-constprop", "ipsccp,called-value-propagation,globalopt"},
    // 2: promote memory to registers, combine.
    {"mem2reg-combine",
     "function(mem2reg," MLB_INSTCOMBINE "," MLB_SIMPLIFYCFG ")"},
    // 3: LLVM's inliner (its default heuristic, or an ML advisor if loaded)
    // and the attribute inference that follows it in -Oz.
    {"inline", "cgscc(inline,function-attrs<skip-non-recursive-function-attrs>)"},
    // 4: scalar simplification after inlining.
    {"scalar-cleanup",
     "function(sroa<modify-cfg>,early-cse<memssa>,jump-threading,correlated-"
     "propagation," MLB_SIMPLIFYCFG ")"},
    // 5: peephole combining.
    {"instcombine", "function(" MLB_INSTCOMBINE ",aggressive-instcombine)"},
    // 6: tail calls, reassociation, constraint elimination.
    {"tailcall-reassociate",
     "function(tailcallelim,reassociate,constraint-elimination)"},
    // 7: the -Oz loop pipeline: rotate, LICM, trivial unswitching.
    {"loop-rotate-licm",
     "function(loop-mssa(loop-instsimplify,loop-simplifycfg,licm<no-"
     "allowspeculation>,loop-rotate<no-header-duplication;no-prepare-for-lto>,"
     "licm<allowspeculation>,simple-loop-unswitch<no-nontrivial;trivial>))"},
    // 8: loop idioms, induction variables, deletion, full unrolling.
    {"loop-idiom-delete",
     "function(loop(loop-idiom,indvars,loop-deletion,loop-unroll-full))"},
    // 9: redundancy elimination.
    {"gvn-sccp", "function(mldst-motion<no-split-footer-bb>,gvn<>,sccp,bdce)"},
    // 10: dead code and memory operations.
    {"dead-code", "function(adce,memcpyopt,dse)"},
    // 11: interprocedural cleanup after the CGSCC pipeline.
    {"ipo-cleanup",
     "deadargelim,globalopt,globaldce,elim-avail-extern,rpo-function-attrs"},
    // 12: -Oz's vectorization and unrolling stage.
    {"loop-vectorize-unroll",
     "function(float2int,lower-constant-intrinsics,loop(loop-rotate<no-header-"
     "duplication;no-prepare-for-lto>,loop-deletion),loop-distribute,loop-"
     "vectorize<no-interleave-forced-only;vectorize-forced-only>,loop-load-"
     "elim,loop-unroll<O2>)"},
    // 13: the late function cleanup of -Oz.
    {"late-cleanup",
     "function(infer-alignment," MLB_INSTCOMBINE
     ",loop-mssa(licm<allowspeculation>),loop-sink,instsimplify,div-rem-pairs,"
     "tailcallelim," MLB_SIMPLIFYCFG ")"},
    // 14: module-level dead code and constant merging.
    {"globaldce-constmerge", "globaldce,constmerge,rel-lookup-table-converter"},
};
#undef MLB_SIMPLIFYCFG
#undef MLB_INSTCOMBINE

constexpr int64_t NumPassActions = std::size(ActionTable); // 15
constexpr int64_t StopAction = NumPassActions;              // 15
constexpr int64_t NumActions = NumPassActions + 1;          // 16

// ---- options -------------------------------------------------------------------

cl::OptionCategory Category("MLBridge phase-ordering plugin");

cl::opt<std::string> RunnerOpt(
    "mlbridge-po-runner", cl::cat(Category), cl::init("auto"),
    cl::desc("Who picks the passes: auto | onnx | compiled | pipe | grpc | "
             "default (no agent: the pass does nothing). Env: "
             "MLBRIDGE_PO_RUNNER"));
cl::opt<std::string> ModelOpt(
    "mlbridge-po-model", cl::cat(Category),
    cl::desc("ONNX policy: input 'observation' float[1,25], output one score "
             "per action (argmax) or the action. Env: MLBRIDGE_PO_MODEL"));
cl::opt<std::string> ChannelOpt(
    "mlbridge-po-channel", cl::cat(Category),
    cl::desc("FIFO base path of a Python agent (runner pipe). Env: "
             "MLBRIDGE_PO_CHANNEL"));
cl::opt<std::string> ServerOpt(
    "mlbridge-po-server", cl::cat(Category),
    cl::desc("host:port of an agent server (runner grpc). Env: "
             "MLBRIDGE_PO_SERVER"));
cl::opt<std::string> FormatOpt(
    "mlbridge-po-format", cl::cat(Category), cl::init("bitstream"),
    cl::desc("Pipe format: bitstream | json. Env: MLBRIDGE_PO_FORMAT"));
cl::opt<unsigned> TimeoutOpt(
    "mlbridge-po-timeout-ms", cl::cat(Category), cl::init(30000),
    cl::desc("Deadline for the channel and each decision, ms. Env: "
             "MLBRIDGE_PO_TIMEOUT_MS"));
cl::opt<unsigned> MaxStepsOpt(
    "mlbridge-po-max-steps", cl::cat(Category), cl::init(10),
    cl::desc("Step budget of an episode (actions before it ends). Env: "
             "MLBRIDGE_PO_MAX_STEPS"));
cl::opt<std::string> LogOpt(
    "mlbridge-po-log", cl::cat(Category),
    cl::desc("Append one JSON line per episode (actions, code sizes) to this "
             "file. Env: MLBRIDGE_PO_LOG"));
cl::opt<std::string> DescribeOpt(
    "mlbridge-po-describe", cl::cat(Category),
    cl::desc("Write the observation names and the action table as JSON to "
             "this file"));
cl::opt<bool> EnableOpt(
    "mlbridge-po-enable", cl::cat(Category), cl::init(false),
    cl::desc("Also run the pass at the end of clang's/opt's optimization "
             "pipeline (OptimizerLast). Env: MLBRIDGE_PO_ENABLE"));
cl::opt<bool> VerboseOpt(
    "mlbridge-po-verbose", cl::cat(Category), cl::init(false),
    cl::desc("Report the runner and each action as remarks. Env: "
             "MLBRIDGE_PO_VERBOSE"));

// ---- the environment --------------------------------------------------------------

/// Feature indices of the pass (FeatureBinding): an in-process model takes
/// only "observation"; pipes and gRPC get all four.
enum PassFeature : size_t { FObservation, FCodeSize, FStep, FDone };

std::vector<mlb::TensorSpec> phaseOrderFeatureSpecs() {
  return {mlb::TensorSpec::create<float>("observation",
                                         {1, static_cast<int64_t>(NumObs)}),
          mlb::TensorSpec::create<int64_t>("code_size"),
          mlb::TensorSpec::create<int64_t>("step"),
          mlb::TensorSpec::create<int64_t>("done")};
}

class PhaseOrderEnv final : public mlb::rl::Environment {
public:
  PhaseOrderEnv(Module &M, ModuleAnalysisManager &MAM, PassBuilder &PB,
                const mlp::FeatureBinding &Binding, unsigned MaxSteps,
                bool Verbose)
      : M(M), MAM(MAM), PB(PB), Binding(Binding),
        MaxSteps(MaxSteps), Verbose(Verbose) {}

  mlb::Status reset() override {
    Steps = 0;
    Trace.clear();
    Sizes.clear();
    measure();
    Sizes.push_back(CodeSizeNow);
    if (MaxSteps == 0)
      setDone();
    return mlb::Status::ok();
  }

  mlb::Status observe(mlb::ModelRunner &Runner) override {
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
    const int64_t Before = CodeSizeNow;
    // A fresh pass manager for every step: some passes keep state between
    // runs of one instance (deadargelim does), so instances are never
    // reused. Parsing was checked when the pass started.
    ModulePassManager Action;
    if (Error E = PB.parsePassPipeline(Action, ActionTable[A.Index].Pipeline))
      return mlb::Status(mlb::ErrorCode::Internal,
                         std::string("action ") + ActionTable[A.Index].Name +
                             ": " + toString(std::move(E)));
    PreservedAnalyses PA = Action.run(M, MAM);
    (void)PA; // the nested pass manager already invalidated what it changed
    Changed = true;
    ++Steps;
    measure();
    Sizes.push_back(CodeSizeNow);
    if (Verbose)
      mlp::diagnose(M.getContext(), Prefix, DS_Remark,
                    "step " + Twine(Steps) + ": " + ActionTable[A.Index].Name +
                        ", code size " + Twine(Before) + " -> " +
                        Twine(CodeSizeNow));
    if (Steps >= MaxSteps)
      setDone();
    return mlb::Status::ok();
  }

  /// Without a usable model: stop optimizing (keep the module as it is).
  std::optional<int64_t> fallbackAction() override { return StopAction; }

  /// The last observation, done = 1, for a training peer.
  void writeFeatures(mlb::ModelRunner &Runner, bool Done) {
    Binding.write(Runner, FObservation, Observation.data());
    const int64_t Size = CodeSizeNow, Step = Steps, D = Done ? 1 : 0;
    Binding.write(Runner, FCodeSize, &Size);
    Binding.write(Runner, FStep, &Step);
    Binding.write(Runner, FDone, &D);
  }

  const std::vector<int64_t> &trace() const { return Trace; }
  const std::vector<int64_t> &sizes() const { return Sizes; }
  bool changed() const { return Changed; }

private:
  void measure();

  Module &M;
  ModuleAnalysisManager &MAM;
  PassBuilder &PB;
  const mlp::FeatureBinding &Binding;
  unsigned MaxSteps;
  bool Verbose;
  unsigned Steps = 0;
  bool Changed = false;
  int64_t CodeSizeNow = 0;
  std::array<float, NumObs> Observation{};
  std::vector<int64_t> Trace;
  std::vector<int64_t> Sizes;
};

void PhaseOrderEnv::measure() {
  std::array<int64_t, NumObs> C{};
  FunctionAnalysisManager &FAM =
      MAM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager();
  for (Function &F : M) {
    if (F.isDeclaration())
      continue;
    ++C[Functions];
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
        C[CodeSize] += TTI.getInstructionCost(&I, TargetTransformInfo::TCK_CodeSize)
                           .getValue()
                           .value_or(1);
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
  C[Step] = Steps;
  CodeSizeNow = C[CodeSize];
  for (size_t I = 0; I < NumObs; ++I)
    Observation[I] = static_cast<float>(C[I]);
}

// ---- the pass ------------------------------------------------------------------------

#if MLBRIDGE_PLUGINS_HAVE_COMPILED
mlb::Expected<std::unique_ptr<mlb::ModelRunner>> makeEmbeddedRunner() {
  auto R = mlb::CompiledModelRunner::create<mlbridge_plugins::PhaseOrderPolicy>();
  if (!R)
    return R.takeStatus();
  return std::unique_ptr<mlb::ModelRunner>(std::move(*R));
}
constexpr const char *EmbeddedModelName = "PhaseOrderPolicy";
#else
constexpr const char *EmbeddedModelName = "";
#endif

void writeDescription(LLVMContext &Ctx, const std::string &Path) {
  std::string J = "{\"observation\":[";
  for (size_t I = 0; I < NumObs; ++I)
    J += std::string(I ? "," : "") + "\"" + ObservationNames[I] + "\"";
  J += "],\"actions\":[";
  for (int64_t I = 0; I < NumPassActions; ++I)
    J += std::string(I ? "," : "") + "{\"name\":\"" + ActionTable[I].Name +
         "\",\"pipeline\":\"" + mlp::jsonEscape(ActionTable[I].Pipeline) + "\"}";
  J += ",{\"name\":\"stop\",\"pipeline\":\"\"}],\"stop\":" +
       std::to_string(StopAction) + "}";
  std::error_code EC = sys::fs::remove(Path);
  (void)EC;
  mlp::appendLine(Ctx, Prefix, Path, J);
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
  LLVMContext &Ctx = M.getContext();
  const bool Verbose = mlp::boolSetting(VerboseOpt, "MLBRIDGE_PO_VERBOSE");
  if (!DescribeOpt.empty())
    writeDescription(Ctx, DescribeOpt);

  mlp::RunnerConfig C;
  const std::string KindText = mlp::stringSetting(RunnerOpt, "MLBRIDGE_PO_RUNNER");
  std::optional<mlp::RunnerKind> Kind = mlp::parseRunnerKind(KindText);
  if (!Kind) {
    mlp::diagnose(Ctx, Prefix, DS_Warning,
                  "unknown runner '" + KindText +
                      "' (auto, onnx, compiled, pipe, grpc, default); the "
                      "module is left as it is");
    return PreservedAnalyses::all();
  }
  C.Kind = *Kind;
  C.Model = mlp::stringSetting(ModelOpt, "MLBRIDGE_PO_MODEL");
  C.Channel = mlp::stringSetting(ChannelOpt, "MLBRIDGE_PO_CHANNEL");
  C.Server = mlp::stringSetting(ServerOpt, "MLBRIDGE_PO_SERVER");
  C.Format = mlp::stringSetting(FormatOpt, "MLBRIDGE_PO_FORMAT");
  C.Timeout = std::chrono::milliseconds(
      mlp::unsignedSetting(TimeoutOpt, "MLBRIDGE_PO_TIMEOUT_MS"));
  C.EmbeddedModel = EmbeddedModelName;
  const mlp::RunnerKind K = mlp::resolveRunnerKind(C);
  const std::string LogPath = mlp::stringSetting(LogOpt, "MLBRIDGE_PO_LOG");
  auto Log = [&](const std::string &Runner, const PhaseOrderEnv *Env,
                 size_t FallbackSteps, const std::string &Error) {
    if (LogPath.empty())
      return;
    std::string L = "{\"plugin\":\"phase-order\",\"module\":\"" +
                    mlp::jsonEscape(M.getModuleIdentifier()) +
                    "\",\"runner\":\"" + Runner + "\",\"actions\":[";
    if (Env)
      for (size_t I = 0; I < Env->trace().size(); ++I)
        L += (I ? "," : "") + std::to_string(Env->trace()[I]);
    L += "],\"code_size\":[";
    if (Env)
      for (size_t I = 0; I < Env->sizes().size(); ++I)
        L += (I ? "," : "") + std::to_string(Env->sizes()[I]);
    L += "],\"fallback_steps\":" + std::to_string(FallbackSteps) +
         ",\"error\":\"" + mlp::jsonEscape(Error) + "\"}";
    mlp::appendLine(Ctx, Prefix, LogPath, L);
  };
  auto GiveUp = [&](const Twine &Why) {
    mlp::diagnose(Ctx, Prefix, DS_Warning,
                  Why + "; the module is left as it is");
    Log(mlp::runnerKindName(K), nullptr, 0, Why.str());
    return PreservedAnalyses::all();
  };

  if (K == mlp::RunnerKind::Default) {
    if (C.Kind != mlp::RunnerKind::Default)
      return GiveUp("no agent configured (set -mlbridge-po-model, -channel or "
                    "-server)");
    Log("default", nullptr, 0, "");
    return PreservedAnalyses::all();
  }

  // The actions are built from their textual pipelines by the host's
  // PassBuilder (exactly the passes opt -passes= would run); check that
  // all of them parse before the episode starts.
  for (int64_t I = 0; I < NumPassActions; ++I) {
    ModulePassManager Check;
    if (Error E = PB->parsePassPipeline(Check, ActionTable[I].Pipeline))
      return GiveUp(Twine("action ") + ActionTable[I].Name +
                    ": cannot build its pipeline: " + toString(std::move(E)));
  }

  if (K == mlp::RunnerKind::Pipe)
    for (const char *Suffix : {".in", ".out"})
      if (!sys::fs::exists(C.Channel + Suffix))
        return GiveUp("pipe: no FIFO '" + C.Channel + Suffix + "'");

  mlp::RunnerRequest Req;
  Req.Features = phaseOrderFeatureSpecs();
  Req.Advice = mlb::TensorSpec::create<int64_t>("action");
  Req.Diagnostics = mlp::llvmDiagnosticSink(Ctx, Prefix, Verbose);
#if MLBRIDGE_PLUGINS_HAVE_COMPILED
  Req.MakeEmbedded = makeEmbeddedRunner;
#endif
  auto Runner = mlp::makeRunner(K, C, Req);
  if (!Runner)
    return GiveUp("cannot use the agent: " + Runner.status().toString());
  mlp::FeatureBinding Binding;
  if (mlb::Status S = Binding.bind(**Runner, Req.Features); !S.isOk())
    return GiveUp("the agent does not fit the pass: " + S.toString());
  if (!Binding.has(FObservation))
    return GiveUp("the agent's model has no input 'observation'");
  if (Verbose)
    mlp::diagnose(Ctx, Prefix, DS_Remark,
                  Twine("actions chosen by the ") + mlp::runnerKindName(K) +
                      " runner");

  const unsigned MaxSteps = mlp::unsignedSetting(MaxStepsOpt, "MLBRIDGE_PO_MAX_STEPS");
  PhaseOrderEnv Env(M, MAM, *PB, Binding, MaxSteps, Verbose);
  mlb::rl::Driver Driver(Env);
  (void)Driver.addAgent("phase-order", **Runner);
  mlb::rl::EpisodeOptions EO;
  EO.MaxSteps = static_cast<size_t>(MaxSteps) + 1; // + the STOP decision
  EO.Context = M.getModuleIdentifier();
  mlb::Expected<mlb::rl::EpisodeResult> R = Driver.runEpisode(EO);
  std::string Error;
  if (!R) {
    Error = R.status().toString();
    mlp::diagnose(Ctx, Prefix, DS_Warning,
                  "episode ended early: " + Error +
                      "; the module keeps the actions applied so far");
  }
  // A trainer on the other side of a pipe or gRPC learns the last reward
  // from one more observation, marked done; its reply is not used.
  const bool InterProcess =
      K == mlp::RunnerKind::Pipe || K == mlp::RunnerKind::Grpc;
  if (InterProcess && !(*Runner)->isUnavailable()) {
    Env.writeFeatures(**Runner, /*Done=*/true);
    (void)(*Runner)->evaluateRaw();
  }
  Log(mlp::runnerKindName(K), &Env, R ? R->FallbackSteps : 0, Error);
  return Env.changed() ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK __attribute__((visibility("default")))
::llvm::PassPluginLibraryInfo
llvmGetPassPluginInfo() {
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
            PB.registerOptimizerLastEPCallback(
                [&PB](ModulePassManager &MPM, OptimizationLevel) {
                  if (mlp::boolSetting(EnableOpt, "MLBRIDGE_PO_ENABLE"))
                    MPM.addPass(PhaseOrderPass(PB));
                });
          }};
}
