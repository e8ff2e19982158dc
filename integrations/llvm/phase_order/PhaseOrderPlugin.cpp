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
// This file is the pass and its registration; the actions, the episode and
// the settings are the other files of this folder (PhaseOrder.h says which).
//
//===----------------------------------------------------------------------===//

#include "PhaseOrder.h"
#include "PluginEntry.h"
#include "PluginEmbeddings.h"
#include "PluginSupport.h"

#include "mlbridge/json_escape.h"
#include "mlbridge/model_runner.h"
#include "mlbridge/rl.h"

#include "LLVMCompat.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/Error.h"

#if MLBRIDGE_INTEGRATION_HAVE_COMPILED
#include "PhaseOrderPolicy.h" // generated from models/plugins/phase_order_policy.onnx
#endif

#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace llvm;
namespace mlb = mlbridge;
namespace mlp = mlbridge::plugins;
namespace llvm_compat = mlbridge::llvm_compat;
using namespace mlbridge::phaseorder;

namespace {

// ---- the pass ------------------------------------------------------------------------

/// True while an episode runs on this thread: the "oz" action builds the
/// host's -Oz pipeline, whose OptimizerLast callbacks would start a nested
/// episode.
thread_local bool InEpisode = false;

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
  const bool Verbose = Report.verbose();
  mlp::writeDescription(Ctx, Prefix, Report.describePath(), protocolDescription());

  mlb::Expected<mlp::RunnerSettings> C = RunnerOpts.read(Embedded.Name);
  if (!C) {
    mlp::diagnose(Ctx, Prefix, DS_Warning,
                  C.status().message() + "; the module is left as it is");
    return PreservedAnalyses::all();
  }
  const mlp::RunnerKind K = mlp::resolveRunnerKind(*C);
  const std::string LogPath = Report.logPath();
  const bool InterProcess =
      K == mlp::RunnerKind::Pipe || K == mlp::RunnerKind::Grpc;
  const SizeMeasure Size = sizeMeasure(Ctx, InterProcess);
  const bool Lookahead = InterProcess && lookaheadSetting();
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
        {vocabSetting(), mlb::ir2vec::Kind::Symbolic});
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
                  if (runAtOptimizerLast())
                    MPM.addPass(PhaseOrderPass(PB));
                });
          }};
}
