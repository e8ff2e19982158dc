//===- PhaseOrder.h - What the phase-ordering plugin's files share -*- C++ -*-===//
//
// The internal header of MLBridgePhaseOrder.so (what the plugin does:
// PhaseOrderPlugin.cpp). It holds the protocol's names, built from
// PhaseOrderProtocol.def, and what each file of the plugin gives the others:
//
//   PhaseOrderActions.cpp   the actions (ActionTable) and how one runs, the
//                           machine-outliner decision, the IR-outliner guard,
//                           the start flags
//   PhaseOrderEnv.cpp       the episode: PhaseOrderEnv, its features, the
//                           code-size measurement
//   PhaseOrderSettings.cpp  the options, the built-in model's settings and
//                           where each value of an episode came from
//   PhaseOrderPlugin.cpp    the pass and its registration
//
// The options are all in PhaseOrderSettings.cpp, which alone names them and
// their environment variables; the others read them through the functions
// declared here. Included by these files only, never installed.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_PHASEORDER_PHASEORDER_H
#define MLBRIDGE_INTEGRATIONS_LLVM_PHASEORDER_PHASEORDER_H

#include "PluginSupport.h"

#include "mlbridge/model_runner.h"
#include "mlbridge/rl.h"

#include "llvm/IR/PassManager.h"
#include "llvm/Target/TargetMachine.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
class PassBuilder;
} // namespace llvm

namespace mlbridge::ir2vec {
class PluginEmbeddings;
} // namespace mlbridge::ir2vec

namespace mlbridge::phaseorder {

namespace mlp = mlbridge::plugins;

inline constexpr const char *Prefix = "mlbridge-phase-order";

// ---- the protocol -----------------------------------------------------------------

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

inline constexpr const char *ObservationNames[NumObservations] = {
#define MLB_LIST_Observation(E, Name) #Name,
#include "PhaseOrderProtocol.def"
};

/// The actions' names, STOP last (their pipelines: ActionTable).
inline constexpr const char *ActionNames[] = {
#define MLB_LIST_Action(E, Name) #Name,
#include "PhaseOrderProtocol.def"
};

/// Feature indices of the pass (FeatureBinding), in PhaseOrderProtocol.def's
/// order: an in-process model takes only "observation"; pipes and gRPC get
/// the others too ("lookahead" only with -mlbridge-po-lookahead).
enum PassFeature : size_t {
#define MLB_FEATURE(E, Name, Type, ...) E,
#define MLB_OPTIONAL_FEATURE(E, Name, Type, ...) E,
#include "PhaseOrderProtocol.def"
};

// ---- the actions (PhaseOrderActions.cpp) ---------------------------------------------

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

/// The NumPassActions actions before STOP, sub-sequences of LLVM 19's -Oz
/// pipeline and the size decisions around it.
extern const ActionInfo ActionTable[];
constexpr int64_t StopAction = NumPassActions;     // 21
constexpr int64_t NumActions = NumPassActions + 1; // 22

/// Takes the process's -enable-machine-outliner over (once; see the
/// definition) and returns whether a module's code is outlined unless an
/// action decides otherwise; nullopt when this LLVM has no such option.
std::optional<bool> takeOverMachineOutliner();

/// Writes the decision \p Outline into \p M: off is "nooutline" on every
/// defined function. Returns whether M changed.
bool markOutliner(llvm::Module &M, bool Outline);

/// Runs action A (not STOP) on M. \p Outline is the module's
/// machine-outliner decision (takeOverMachineOutliner).
Status applyAction(llvm::Module &M, int64_t A, llvm::PassBuilder &PB,
                   llvm::ModuleAnalysisManager &MAM, bool &Outline);

/// Applies the stock size flags named in \p Start (-mlbridge-po-start,
/// comma-separated) to \p M; sets \p Applied when the module or the
/// outliner decision \p Outline changed.
Status applyStart(llvm::Module &M, llvm::StringRef Start, llvm::PassBuilder &PB,
                  llvm::ModuleAnalysisManager &MAM, bool &Applied, bool &Outline);

// ---- the settings (PhaseOrderSettings.cpp) -------------------------------------------

/// -mlbridge-po-{runner,model,channel,server,format,timeout-ms}.
extern const mlp::RunnerOptions RunnerOpts;
/// -mlbridge-po-{log,describe,verbose}.
extern const mlp::ReportOptions Report;

/// -mlbridge-po-enable: also run the pass at OptimizerLast.
bool runAtOptimizerLast();

/// The reward's code size (-mlbridge-po-size).
enum class SizeMeasure { None, Text, TTI };
/// -mlbridge-po-size; auto is Text for an \p InterProcess agent, else None.
/// An unknown value is reported to \p Ctx as a warning and taken as auto.
SizeMeasure sizeMeasure(llvm::LLVMContext &Ctx, bool InterProcess);

/// -mlbridge-po-lookahead.
bool lookaheadSetting();
/// -mlbridge-po-vocab (empty: the build's vocabulary).
std::string vocabSetting();

/// Where a setting of the episode came from (the log line names it).
enum class From { Option, Environment, Model, Default };
const char *fromName(From F);

struct EpisodeSettings {
  std::string Start; // comma-separated start flags; empty: where -Oz ends
  unsigned MaxSteps = 0;
  unsigned IROutlinerRuns = 0;
  From StartFrom = From::Default, MaxStepsFrom = From::Default,
       IROutlinerRunsFrom = From::Default;
};

/// The episode's settings; \p Shipped: the agent is the built-in model.
EpisodeSettings episodeSettings(bool Shipped);

// ---- the episode (PhaseOrderEnv.cpp) -------------------------------------------------

std::vector<TensorSpec> requiredFeatureSpecs();
std::vector<TensorSpec> optionalFeatureSpecs();
/// The features sent: the required ones, and the optional ones with \p Lookahead.
std::vector<TensorSpec> phaseOrderFeatureSpecs(bool Lookahead);
TensorSpec protocolAdviceSpec();

class PhaseOrderEnv final : public rl::Environment {
public:
  /// Embedder: IR2Vec's module vector for the "embedding" input, or null
  /// (no vocabulary: the input stays zero).
  PhaseOrderEnv(llvm::Module &M, llvm::ModuleAnalysisManager &MAM, llvm::PassBuilder &PB,
                const mlp::FeatureBinding &Binding, unsigned MaxSteps,
                unsigned LimitedRuns, SizeMeasure Size, bool Lookahead, bool Verbose,
                ir2vec::PluginEmbeddings *Embedder, bool &Outline)
      : M(M), MAM(MAM), PB(PB), Binding(Binding), MaxSteps(MaxSteps),
        LimitedRuns(LimitedRuns), Size(Size), Lookahead(Lookahead),
        Verbose(Verbose), Embedder(Embedder), Outline(Outline) {}

  Status reset() override;
  Status observe(ModelRunner &Runner) override;
  Status step(const rl::Action &A) override;

  /// Without a usable model: stop optimizing (keep the module as it is).
  std::optional<int64_t> fallbackAction() override { return StopAction; }

  /// The last observation, done = 1, for a training peer.
  void writeFeatures(ModelRunner &Runner, bool Done);

  const std::vector<int64_t> &trace() const { return Trace; }
  const std::vector<int64_t> &sizes() const { return Sizes; }
  bool changed() const { return Changed; }
  unsigned noOps() const { return NoOps; }

private:
  Status measure();
  void lookahead();
  /// A run-limited action that has had its runs in this episode.
  bool spent(int64_t A) const {
    return ActionTable[A].RunLimited && Runs[A] >= LimitedRuns;
  }

  llvm::Module &M;
  llvm::ModuleAnalysisManager &MAM;
  llvm::PassBuilder &PB;
  const mlp::FeatureBinding &Binding;
  unsigned MaxSteps;
  unsigned LimitedRuns;
  SizeMeasure Size;
  bool Lookahead;
  bool Verbose;
  ir2vec::PluginEmbeddings *Embedder;
  bool &Outline; // the module's machine-outliner decision (the pass writes it)
  unsigned Steps = 0;
  unsigned NoOps = 0;
  bool Changed = false;
  int64_t CodeSizeNow = 0;
  std::array<float, NumObservations> Observation{};
  std::array<float, EmbeddingDim> Embedding{};
  std::array<int64_t, NumPassActions> LookaheadSizes{};
  std::array<unsigned, NumPassActions> Runs{}; // of each action, this episode
  std::unique_ptr<llvm::TargetMachine> SizingTarget; // made on first use
  std::vector<int64_t> Trace;
  std::vector<int64_t> Sizes;
};

} // namespace mlbridge::phaseorder

#endif // MLBRIDGE_INTEGRATIONS_LLVM_PHASEORDER_PHASEORDER_H
