//===- PhaseOrderSettings.cpp - The phase-ordering plugin's settings ------===//
//
// Every option of MLBridgePhaseOrder.so (-mlbridge-po-*) and its
// environment variable (MLBRIDGE_PO_*; clang's driver cannot pass -mllvm
// options to a plugin loaded only with -fpass-plugin), and the settings of
// an episode: the start flags, step budget and IR-outliner bound, each
// from the option, its variable, the built-in model's policy.json (compiled
// in as PhaseOrderShipped.h when it is the agent) or the default, and where
// each value came from (the log line names it).
//
// One file for all of them so that each name is written once; the pass and
// the episode read them through PhaseOrder.h.
//
//===----------------------------------------------------------------------===//

#include "PhaseOrder.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/CommandLine.h"

#if MLBRIDGE_PO_SHIPPED_SETTINGS
#include "PhaseOrderShipped.h" // its settings, from models/plugins/phase_order_policy.json
#endif

#include <cstddef>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <string>

using namespace llvm;

namespace mlbridge::phaseorder {

// ---- options -------------------------------------------------------------------

namespace {

cl::OptionCategory Category("MLBridge phase-ordering plugin");

const mlp::Setting<unsigned> MaxStepsOpt(
    "mlbridge-po-max-steps", "MLBRIDGE_PO_MAX_STEPS", Category,
    "Step budget of an episode (actions before it ends); default: the "
    "built-in model's when it is the agent, else 10.", 10);
const mlp::Setting<unsigned> IROutlinerRunsOpt(
    "mlbridge-po-ir-outliner-runs", "MLBRIDGE_PO_IR_OUTLINER_RUNS", Category,
    "Runs of the IR outliner action per episode; asking for one more ends "
    "the episode (each run outlines again what the last one made, at "
    "about its compile time; 2, chosen on validation, was the smallest; "
    "the built-in model's if it records one).", 2);
const mlp::Setting<bool> EnableOpt(
    "mlbridge-po-enable", "MLBRIDGE_PO_ENABLE", Category,
    "Also run the pass at the end of clang's/opt's optimization pipeline "
    "(OptimizerLast).", false);
const mlp::Setting<std::string> StartOpt(
    "mlbridge-po-start", "MLBRIDGE_PO_START", Category,
    "Start the episode from the module as these stock size flags leave it "
    "(comma-separated: mergefunc, ir-outliner, machine-outliner; none: "
    "where -Oz ends); STOP at once then gives their object. Default: the "
    "flags the built-in model was trained from when it is the agent, else "
    "none.");
const mlp::Setting<std::string> SizeOpt(
    "mlbridge-po-size", "MLBRIDGE_PO_SIZE", Category,
    "The reward's code size: text (bytes of executable sections of the "
    "object the host's TargetMachine makes of the module) | tti "
    "(TargetTransformInfo's estimate, no codegen) | auto (text for a pipe "
    "or gRPC agent, none for an in-process one).", "auto");
const mlp::Setting<bool> LookaheadOpt(
    "mlbridge-po-lookahead", "MLBRIDGE_PO_LOOKAHEAD", Category,
    "Send a pipe or gRPC agent the code size after each action from the "
    "current state (feature 'lookahead', -1 where an action failed or may "
    "not run again): one copy of the module and one codegen per action "
    "and step, for oracles and data collection.", false);
const mlp::Setting<std::string> VocabOpt(
    "mlbridge-po-vocab", "MLBRIDGE_PO_VOCAB", Category,
    "IR2Vec's vocabulary for the 'embedding' input (LLVM 19: "
    "seedEmbeddingVocab.txt, LLVM 22: seedEmbeddingVocab.json); default: "
    "the one scripts/deps/ir2vec.sh installed for this build.");

} // namespace

/// -mlbridge-po-{runner,model,channel,server,format,timeout-ms}
/// (integrations/common/RunnerSettings.h). The ONNX policy takes input
/// 'observation' float[1,27] and outputs one score per action (argmax) or
/// the action; runner 'default' means no agent: the pass does nothing.
const mlp::RunnerOptions RunnerOpts("mlbridge-po", "MLBRIDGE_PO_", Category);
const mlp::ReportOptions Report(
    "mlbridge-po", "MLBRIDGE_PO_", Category,
    {"Append one JSON line per episode (actions, code sizes) to this file.",
     "Report the runner and each action as remarks.",
     "Write the protocol (features, advice, observation and action names, "
     "each action's pipeline) as JSON to this file; the compile goes on as "
     "without."});

bool runAtOptimizerLast() { return EnableOpt.get(); }

SizeMeasure sizeMeasure(LLVMContext &Ctx, bool InterProcess) {
  const std::string SizeText = SizeOpt.get();
  SizeMeasure Size = InterProcess ? SizeMeasure::Text : SizeMeasure::None;
  if (SizeText == "text")
    Size = SizeMeasure::Text;
  else if (SizeText == "tti")
    Size = SizeMeasure::TTI;
  else if (SizeText != "auto")
    mlp::diagnose(Ctx, Prefix, DS_Warning,
                  "unknown -mlbridge-po-size '" + SizeText +
                      "' (text, tti, auto); using auto");
  return Size;
}

bool lookaheadSetting() { return LookaheadOpt.get(); }

std::string vocabSetting() { return VocabOpt.get(); }

// ---- the episode's settings ----------------------------------------------------------

/// From's names in the log line, in its order (Default last).
constexpr const char *FromNames[] = {"option", "environment", "model", "default"};
static_assert(std::size(FromNames) == static_cast<size_t>(From::Default) + 1,
              "one name per From");

const char *fromName(From F) { return FromNames[static_cast<size_t>(F)]; }

namespace {

/// The rule of every setting: the option if given, else its environment
/// variable if set and non-empty, else the built-in model's value when it
/// is the agent and records one, else the option's default.
template <typename T> From settingFrom(const mlp::Setting<T> &S, bool ModelHasIt) {
  if (S.option().getNumOccurrences() > 0)
    return From::Option;
  if (S.given())
    return From::Environment;
  return ModelHasIt ? From::Model : From::Default;
}

} // namespace

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
  S.StartFrom = settingFrom(StartOpt, ModelStart.has_value());
  S.Start = S.StartFrom == From::Model ? *ModelStart : StartOpt.get();
  if (S.Start == "none") // no start flags (an empty variable is "not set")
    S.Start.clear();
  S.MaxStepsFrom = settingFrom(MaxStepsOpt, ModelSteps.has_value());
  S.MaxSteps = S.MaxStepsFrom == From::Model ? *ModelSteps : MaxStepsOpt.get();
  S.IROutlinerRunsFrom = settingFrom(IROutlinerRunsOpt, ModelRuns.has_value());
  S.IROutlinerRuns =
      S.IROutlinerRunsFrom == From::Model ? *ModelRuns : IROutlinerRunsOpt.get();
  return S;
}

} // namespace mlbridge::phaseorder
