//===- InlineAdvisorPlugin.cpp - An ML inline advisor as an LLVM plugin ---===//
//
// An LLVM 19 pass plugin that replaces the inliner's decisions with a
// model's, through PluginInlineAdvisorAnalysis. It computes the features
// LLVM's own ML inliner (MLInlineAdvisor, -enable-ml-inliner=release) sends,
// with the same names, order and dtypes (llvm/Analysis/InlineModelFeatureMaps.h)
// and the same bookkeeping (call-graph node/edge counts kept up to date
// while inlining, the size-growth stop), from LLVM's public analyses:
// FunctionPropertiesAnalysis / FunctionPropertiesUpdater, the inline cost
// features and estimate (llvm/Analysis/InlineCost.h), the call graph. A
// model trained against LLVM's interactive mode therefore deploys here
// unchanged, and the Python side that serves LLVM serves this plugin too.
//
// The model is reached through any mlbridge runner, chosen by plugin
// options (docs/llvm-plugins.md): in-process ONNX Runtime or a model
// compiled into the plugin for deployment; named pipes or gRPC to a Python
// model for training. The integration in the pass is the library's three
// lines -- make a runner (makeRunner, integrations/common), write the
// features (*Runner->getTensor<int64_t>(I) = V, done by
// FeatureBinding::write), ask for the decision (Runner->evaluateRaw()).
//
// A model may also read the IR2Vec vectors of the caller and the callee
// (inputs caller_embedding, callee_embedding: float [1, D]), computed through
// the plugins' embeddings API (integrations/llvm/ir2vec/PluginEmbeddings.h:
// our embedder on LLVM 19, LLVM's own on 22) from a vocabulary loaded once
// per advisor that needs it; a function's vector is cached until inlining
// into it or the function passes of its SCC change it.
//
// If the model cannot be used (missing file, dead peer, bad output) the
// plugin says so once through LLVM's diagnostic handler (a warning; never
// stdout) and uses LLVM's default inlining decision instead, so the build
// always succeeds.
//
// Load: opt-19 -load-pass-plugin=MLBridgeInlineAdvisor.so
//       clang-19 -fpass-plugin=MLBridgeInlineAdvisor.so
//
//===----------------------------------------------------------------------===//

#include "PluginEntry.h"
#include "PluginSupport.h"

#include "PluginEmbeddings.h" // integrations/llvm/ir2vec

#include "mlbridge/model_runner.h"
#include "mlbridge/rl.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SCCIterator.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/BlockFrequencyInfo.h"
#include "llvm/Analysis/CallGraph.h"
#include "llvm/Analysis/FunctionPropertiesAnalysis.h"
#include "llvm/Analysis/InlineAdvisor.h"
#include "llvm/Analysis/InlineCost.h"
#include "llvm/Analysis/InlineModelFeatureMaps.h"
#include "llvm/Analysis/LazyCallGraph.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/Analysis/ProfileSummaryInfo.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Analysis/TargetTransformInfo.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "LLVMCompat.h"
#include "llvm/Support/CommandLine.h"

#if MLBRIDGE_INTEGRATION_HAVE_COMPILED
#include "InlinerPolicy.h" // generated from models/plugins/inliner_policy.onnx
#endif

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>

using namespace llvm;
namespace mlb = mlbridge;
namespace mlp = mlbridge::plugins;
namespace llvm_compat = mlbridge::llvm_compat;

namespace {

constexpr const char *Prefix = "mlbridge-inline";

// ---- options (docs/llvm-plugins.md; each has an environment variable used
// when the option is not on the command line) -------------------------------

cl::OptionCategory Category("MLBridge inline advisor plugin");

/// -mlbridge-inline-{runner,model,channel,server,format,timeout-ms}
/// (integrations/common/RunnerSettings.h).
const mlp::RunnerOptions RunnerOpts("mlbridge-inline", "MLBRIDGE_INLINE_",
                                    Category);
const mlp::Setting<bool> IncludeDefaultOpt(
    "mlbridge-inline-include-default", "MLBRIDGE_INLINE_INCLUDE_DEFAULT", Category,
    "Also send LLVM's default decision as a 39th feature, "
    "inlining_default (in its declared place, unlike LLVM 17-20).", false);
const mlp::Setting<bool> EmbeddingsOpt(
    "mlbridge-inline-embeddings", "MLBRIDGE_INLINE_EMBEDDINGS", Category,
    "Also send the IR2Vec vectors of the caller and the callee "
    "(caller_embedding, callee_embedding: float [1, D]) to a Python "
    "model; an in-process model gets them whenever it has inputs of those "
    "names.", false);
const mlp::Setting<std::string> VocabOpt(
    "mlbridge-inline-ir2vec-vocab", "MLBRIDGE_INLINE_IR2VEC_VOCAB", Category,
    "IR2Vec's vocabulary (seedEmbeddingVocab.txt on LLVM 19, .json on "
    "22); default: the one the build was configured with (.deps/ir2vec).");
/// -mlbridge-inline-{log,verbose,describe}.
const mlp::ReportOptions Report(
    "mlbridge-inline", "MLBRIDGE_INLINE_", Category,
    {"Append one JSON line per advisor (runner, decisions asked, inlined, "
     "fallbacks) to this file.",
     "Report which runner is used (as remarks).",
     "Write the protocol (LLVM's features, the optional ones, the advice) as "
     "JSON to this file; inlining goes on as without."});

// ---- the features: LLVM's own list ----------------------------------------

/// LLVM 19's ML inliner features, in its order: the inline cost features
/// first, then the call-site / module features (InlineModelFeatureMaps.h),
/// all int64_t [1]; optionally inlining_default last.
std::vector<mlb::TensorSpec> inlinerFeatureSpecs(bool IncludeDefault) {
  std::vector<mlb::TensorSpec> Specs;
#define MLBRIDGE_ADD_SPEC(DTYPE, SHAPE, NAME, DOC)                             \
  Specs.push_back(mlb::TensorSpec::create<DTYPE>(#NAME, SHAPE));
  INLINE_COST_FEATURE_ITERATOR(MLBRIDGE_ADD_SPEC)
  INLINE_FEATURE_ITERATOR(MLBRIDGE_ADD_SPEC)
#undef MLBRIDGE_ADD_SPEC
  if (IncludeDefault)
    Specs.push_back(mlb::TensorSpec::create<int64_t>("inlining_default"));
  return Specs;
}

/// IR2Vec's vector length when no vocabulary could be read (that of the
/// published vocabulary), so that a model's inputs still bind.
constexpr unsigned DefaultEmbeddingDim = 300;
const char *const EmbeddingNames[2] = {"caller_embedding", "callee_embedding"};

/// An advisor's IR2Vec vectors, or why it has none (zero vectors are sent).
struct AdvisorEmbeddings {
  std::unique_ptr<mlb::ir2vec::PluginEmbeddings> E;
  std::string Error;
  unsigned dimension() const { return E ? E->dimension() : DefaultEmbeddingDim; }
};

AdvisorEmbeddings loadEmbeddings() {
  AdvisorEmbeddings A;
  auto E = mlb::ir2vec::PluginEmbeddings::create(
      {VocabOpt.get(),
       mlb::ir2vec::Kind::Symbolic});
  if (E)
    A.E = std::move(*E);
  else
    A.Error = E.status().toString();
  return A;
}

/// The protocol as -mlbridge-inline-describe writes it: LLVM's features;
/// optional, inlining_default and the embeddings at the published length
/// (a vocabulary of another length changes theirs); LLVM's advice.
std::string inlinerDescription() {
  std::vector<mlb::TensorSpec> Optional{mlb::TensorSpec::create<int64_t>("inlining_default")};
  for (const char *Name : EmbeddingNames)
    Optional.push_back(mlb::TensorSpec::create<float>(
        Name, {1, static_cast<int64_t>(DefaultEmbeddingDim)}));
  return mlp::describeProtocol(inlinerFeatureSpecs(false), Optional,
                               mlb::TensorSpec::create<int64_t>("inlining_decision"), {});
}

// Counted from LLVM's lists: LLVM 22 appends optional IR2Vec embeddings to
// FeatureIndex (callee_embedding, caller_embedding), which are not sent.
#define MLBRIDGE_COUNT_FEATURE(DTYPE, SHAPE, NAME, DOC) +1
constexpr size_t NumFeatures = 0 INLINE_COST_FEATURE_ITERATOR(MLBRIDGE_COUNT_FEATURE)
    INLINE_FEATURE_ITERATOR(MLBRIDGE_COUNT_FEATURE); // 38 on LLVM 19 and 22
#undef MLBRIDGE_COUNT_FEATURE
constexpr size_t DefaultFeatureIndex = NumFeatures;    // inlining_default
constexpr size_t idx(FeatureIndex F) { return static_cast<size_t>(F); }

/// Reads the value of one of LLVM's own (static, hidden) options through
/// the option registry, so the plugin honours e.g. -inline-deferral and
/// -ml-advisor-size-increase-threshold exactly like LLVM's advisors.
template <typename T> T llvmOption(StringRef Name, T Default) {
  auto &Opts = cl::getRegisteredOptions();
  auto It = Opts.find(Name);
  if (It == Opts.end())
    return Default;
  return static_cast<cl::opt<T> *>(It->second)->getValue();
}

// ---- process-wide state ----------------------------------------------------

/// Once a model peer (pipe or gRPC: one per process) failed, later inliner
/// runs of the process (a new advisor each) go straight to LLVM's heuristic
/// instead of waiting on it again. Not for in-process models: a module's
/// decisions must not depend on what another module (another ThinLTO
/// thread) met first.
std::atomic<bool> PeerFailedInProcess{false};

class BridgeInlineAdvisor;

/// Advice that keeps the advisor's module-wide features up to date after
/// the inliner acts on it.
class BridgeInlineAdvice : public InlineAdvice {
public:
  BridgeInlineAdvice(BridgeInlineAdvisor *A, CallBase &CB,
                     OptimizationRemarkEmitter &ORE, bool Recommendation);

  Function *caller() const { return Caller; }
  Function *callee() const { return Callee; }
  void updateCallerProperties(FunctionAnalysisManager &FAM) const {
    Updater->finish(FAM);
  }

  const int64_t CallerIRSize;
  const int64_t CalleeIRSize;
  const int64_t CallerAndCalleeEdges;

private:
  void recordInliningImpl() override;
  void recordInliningWithCalleeDeletedImpl() override;
  void recordUnsuccessfulInliningImpl(const InlineResult &Result) override;

  BridgeInlineAdvisor *advisor() const;
  // The caller's properties before inlining, restored if inlining fails.
  const FunctionPropertiesInfo CallerBefore;
  std::optional<FunctionPropertiesUpdater> Updater;
};

class BridgeInlineAdvisor : public InlineAdvisor {
public:
  BridgeInlineAdvisor(Module &M, FunctionAnalysisManager &FAM,
                      InlineParams Params, InlineContext IC,
                      std::unique_ptr<mlb::ModelRunner> Runner,
                      mlp::FeatureBinding Binding, bool IncludeDefault,
                      std::optional<AdvisorEmbeddings> Embeddings,
                      size_t EmbeddingIndex,
                      std::string RunnerName, std::string LogPath)
      : InlineAdvisor(M, FAM, IC), Params(Params), Runner(std::move(Runner)),
        Binding(std::move(Binding)), IncludeDefault(IncludeDefault),
        Embeddings(std::move(Embeddings)), EmbeddingIndex(EmbeddingIndex),
        RunnerName(std::move(RunnerName)), LogPath(std::move(LogPath)),
        SizeIncreaseThreshold(
            llvmOption<float>("ml-advisor-size-increase-threshold", 2.0f)) {
    // LLVM's advisor names the session's only context "" (its constructor
    // calls switchContext("")); a Python host sees the same stream.
    (void)this->Runner->switchContext("");
  }

  ~BridgeInlineAdvisor() override {
    if (LogPath.empty())
      return;
    mlp::appendLogLine(
        M.getContext(), Prefix, LogPath,
        mlp::LogLine(Prefix, M.getModuleIdentifier(), RunnerName, Asked,
                     Fallbacks)
            .add("model_decisions", static_cast<int64_t>(ModelDecisions))
            .add("advised_inline", static_cast<int64_t>(AdvisedInline))
            .add("inlined", static_cast<int64_t>(Inlined))
            .add("functions_embedded", static_cast<int64_t>(Embedded))
            .str());
  }

  void onPassEntry(LazyCallGraph::SCC *SCC) override;
  void onPassExit(LazyCallGraph::SCC *SCC) override;

  bool forcedToStop() const { return ForceStop; }
  FunctionPropertiesInfo &properties(Function &F);
  int64_t irSize(Function &F) { return properties(F).TotalInstructionCount; }
  int64_t localCalls(Function &F) {
    return properties(F).DirectCallsToDefinedFunctions;
  }
  void onSuccessfulInlining(const BridgeInlineAdvice &A, bool CalleeDeleted);

protected:
  std::unique_ptr<InlineAdvice> getAdviceImpl(CallBase &CB) override;
  std::unique_ptr<InlineAdvice> getMandatoryAdvice(CallBase &CB,
                                                   bool Advice) override;

private:
  void initialize();
  bool defaultDecision(CallBase &CB);
  bool askModel(CallBase &CB, const std::array<int64_t, NumFeatures + 1> &V);
  const std::vector<float> &functionVector(const Function &F,
                                           std::vector<float> &Out);
  void forgetVector(const Function *F) {
    if (Embeddings && Embeddings->E)
      Embeddings->E->invalidate(*F);
  }
  std::unique_ptr<InlineAdvice> unreachableSkip(CallBase &CB);
  unsigned initialLevel(const Function *F) const {
    auto It = FunctionLevels.find(F);
    return It == FunctionLevels.end() ? 0 : It->second;
  }

  InlineParams Params;
  std::unique_ptr<mlb::ModelRunner> Runner;
  mlp::FeatureBinding Binding;
  bool IncludeDefault;
  // None: the model reads no embeddings. The function vectors are cached
  // by PluginEmbeddings and dropped when the function changes (inlining
  // into it, the function passes of its SCC, deletion).
  std::optional<AdvisorEmbeddings> Embeddings;
  size_t EmbeddingIndex; // our index of caller_embedding
  std::vector<float> CallerVector, CalleeVector; // what is sent, as float
  std::string RunnerName;
  std::string LogPath;
  float SizeIncreaseThreshold;
  bool ModelBroken = false;

  // Module-wide state, as LLVM's ML advisor keeps it.
  bool Initialized = false;
  std::map<const Function *, FunctionPropertiesInfo> PropertiesCache;
  std::map<const Function *, unsigned> FunctionLevels;
  DenseSet<const Function *> AllFunctions;
  SmallPtrSet<const LazyCallGraph::Node *, 4> NodesInLastSCC;
  int64_t NodeCount = 0;
  int64_t EdgeCount = 0;
  int64_t EdgesOfLastSeenNodes = 0;
  int64_t InitialIRSize = 0;
  int64_t CurrentIRSize = 0;
  bool ForceStop = false;

  // Statistics for -mlbridge-inline-log.
  uint64_t Asked = 0, ModelDecisions = 0, AdvisedInline = 0, Inlined = 0,
           Fallbacks = 0, Embedded = 0;
  friend class BridgeInlineAdvice;
};

// ---- advice -----------------------------------------------------------------

BridgeInlineAdvice::BridgeInlineAdvice(BridgeInlineAdvisor *A, CallBase &CB,
                                       OptimizationRemarkEmitter &ORE,
                                       bool Recommendation)
    : InlineAdvice(A, CB, ORE, Recommendation),
      CallerIRSize(A->forcedToStop() ? 0 : A->irSize(*Caller)),
      CalleeIRSize(A->forcedToStop() ? 0 : A->irSize(*Callee)),
      CallerAndCalleeEdges(A->forcedToStop()
                               ? 0
                               : A->localCalls(*Caller) + A->localCalls(*Callee)),
      CallerBefore(A->properties(*Caller)) {
  if (Recommendation)
    Updater.emplace(A->properties(*Caller), CB);
}

BridgeInlineAdvisor *BridgeInlineAdvice::advisor() const {
  return static_cast<BridgeInlineAdvisor *>(Advisor);
}

void BridgeInlineAdvice::recordInliningImpl() {
  advisor()->onSuccessfulInlining(*this, /*CalleeDeleted=*/false);
}

void BridgeInlineAdvice::recordInliningWithCalleeDeletedImpl() {
  advisor()->onSuccessfulInlining(*this, /*CalleeDeleted=*/true);
}

void BridgeInlineAdvice::recordUnsuccessfulInliningImpl(const InlineResult &) {
  advisor()->properties(*Caller) = CallerBefore;
}

// ---- advisor: module-wide features -----------------------------------------

FunctionPropertiesInfo &BridgeInlineAdvisor::properties(Function &F) {
  auto [It, Inserted] = PropertiesCache.try_emplace(&F);
  if (Inserted)
    It->second = FAM.getResult<FunctionPropertiesAnalysis>(F);
  return It->second;
}

/// A call the ML inliner can consider: a direct call to a defined function.
static CallBase *inlinableCall(Instruction &I) {
  if (auto *CB = dyn_cast<CallBase>(&I))
    if (Function *Callee = CB->getCalledFunction())
      if (!Callee->isDeclaration())
        return CB;
  return nullptr;
}

/// The state LLVM's advisor computes when it is created, before any
/// inlining: each function's "call site height" (its level in the SCC DAG
/// of the call graph, counted from the leaves), the number of defined
/// functions and of calls between them, and the module's IR size. Done at
/// the first onPassEntry, which the inliner calls before asking anything.
void BridgeInlineAdvisor::initialize() {
  Initialized = true;
  CallGraph CG(M);
  for (auto SCC = scc_begin(&CG); !SCC.isAtEnd(); ++SCC) {
    unsigned Level = 0;
    for (CallGraphNode *N : *SCC) {
      Function *F = N->getFunction();
      if (!F || F->isDeclaration())
        continue;
      for (Instruction &I : instructions(F))
        if (CallBase *CB = inlinableCall(I)) {
          // Bottom-up: a callee outside this SCC already has its level.
          auto It = FunctionLevels.find(CB->getCalledFunction());
          if (It != FunctionLevels.end())
            Level = std::max(Level, It->second + 1);
        }
    }
    for (CallGraphNode *N : *SCC)
      if (Function *F = N->getFunction(); F && !F->isDeclaration())
        FunctionLevels[F] = Level;
  }
  for (const auto &[F, Level] : FunctionLevels) {
    AllFunctions.insert(F);
    EdgeCount += localCalls(const_cast<Function &>(*F));
  }
  NodeCount = static_cast<int64_t>(AllFunctions.size());
  for (Function &F : M)
    if (!F.isDeclaration())
      InitialIRSize += irSize(F);
  CurrentIRSize = InitialIRSize;
}

void BridgeInlineAdvisor::onPassEntry(LazyCallGraph::SCC *SCC) {
  if (!Initialized)
    initialize();
  if (!SCC || ForceStop)
    return;
  // Function passes since the last inliner run may have changed any
  // function: drop the cached properties.
  PropertiesCache.clear();
  // Functions reachable from the nodes seen last time that we do not know
  // yet (e.g. created by a pass) join the node count at their neighbour's
  // level; the edges of the nodes seen last are counted again as they are
  // now (see onPassExit).
  while (!NodesInLastSCC.empty()) {
    const LazyCallGraph::Node *N = *NodesInLastSCC.begin();
    NodesInLastSCC.erase(N);
    forgetVector(&N->getFunction()); // its function passes ran
    EdgeCount += localCalls(N->getFunction());
    const unsigned Level = initialLevel(&N->getFunction());
    for (const LazyCallGraph::Edge &E : **N) {
      const LazyCallGraph::Node *Adj = &E.getNode();
      if (AllFunctions.insert(&Adj->getFunction()).second) {
        ++NodeCount;
        NodesInLastSCC.insert(Adj);
        FunctionLevels[&Adj->getFunction()] = Level;
      }
    }
  }
  EdgeCount -= EdgesOfLastSeenNodes;
  EdgesOfLastSeenNodes = 0;
  for (const LazyCallGraph::Node &N : *SCC)
    NodesInLastSCC.insert(&N);
}

void BridgeInlineAdvisor::onPassExit(LazyCallGraph::SCC *SCC) {
  // Function passes will run next and invalidate these.
  PropertiesCache.clear();
  if (!SCC || ForceStop)
    return;
  EdgesOfLastSeenNodes = 0;
  for (const LazyCallGraph::Node *N : NodesInLastSCC)
    EdgesOfLastSeenNodes += localCalls(N->getFunction());
  for (const LazyCallGraph::Node &N : *SCC)
    if (NodesInLastSCC.insert(&N).second)
      EdgesOfLastSeenNodes += localCalls(N.getFunction());
}

void BridgeInlineAdvisor::onSuccessfulInlining(const BridgeInlineAdvice &A,
                                               bool CalleeDeleted) {
  ++Inlined;
  Function *Caller = A.caller();
  Function *Callee = A.callee();
  forgetVector(Caller);
  if (CalleeDeleted)
    forgetVector(Callee);
  // The caller changed: its properties, loops and (by version) dominator
  // tree, which the properties' update and the unreachable-call check use.
  llvm_compat::invalidateAfterInlining(FAM, *Caller);
  A.updateCallerProperties(FAM);
  const int64_t IRSizeAfter =
      irSize(*Caller) + (CalleeDeleted ? 0 : A.CalleeIRSize);
  CurrentIRSize += IRSizeAfter - (A.CallerIRSize + A.CalleeIRSize);
  if (static_cast<double>(CurrentIRSize) >
      static_cast<double>(SizeIncreaseThreshold) *
          static_cast<double>(InitialIRSize))
    ForceStop = true;

  int64_t NewEdges = localCalls(*Caller);
  if (CalleeDeleted) {
    --NodeCount;
    for (const LazyCallGraph::Node *N : NodesInLastSCC)
      if (&N->getFunction() == Callee) {
        NodesInLastSCC.erase(N);
        break;
      }
  } else {
    NewEdges += localCalls(*Callee);
  }
  EdgeCount += NewEdges - A.CallerAndCalleeEdges;
}

// ---- advisor: decisions -------------------------------------------------------

/// LLVM's default decision for CB (what DefaultInlineAdvisor would say).
bool BridgeInlineAdvisor::defaultDecision(CallBase &CB) {
  Function &Caller = *CB.getCaller();
  ProfileSummaryInfo *PSI =
      FAM.getResult<ModuleAnalysisManagerFunctionProxy>(Caller)
          .getCachedResult<ProfileSummaryAnalysis>(M);
  auto &ORE = FAM.getResult<OptimizationRemarkEmitterAnalysis>(Caller);
  auto GetAC = [&](Function &F) -> AssumptionCache & {
    return FAM.getResult<AssumptionAnalysis>(F);
  };
  auto GetBFI = [&](Function &F) -> BlockFrequencyInfo & {
    return FAM.getResult<BlockFrequencyAnalysis>(F);
  };
  auto GetTLI = [&](Function &F) -> const TargetLibraryInfo & {
    return FAM.getResult<TargetLibraryAnalysis>(F);
  };
  auto GetCost = [&](CallBase &C) {
    Function &Callee = *C.getCalledFunction();
    auto &TTI = FAM.getResult<TargetIRAnalysis>(Callee);
    const bool Remarks =
        Callee.getContext().getDiagHandlerPtr()->isMissedOptRemarkEnabled(
            "inline");
    return getInlineCost(C, Params, TTI, GetAC, GetTLI, GetBFI, PSI,
                         Remarks ? &ORE : nullptr);
  };
  const bool Deferral = Params.EnableDeferral.value_or(
      llvmOption<bool>("inline-deferral", false));
  return llvm_compat::shouldInline(
      CB, FAM.getResult<TargetIRAnalysis>(*CB.getCalledFunction()), GetCost,
      ORE, Deferral);
}

std::unique_ptr<InlineAdvice>
BridgeInlineAdvisor::unreachableSkip(CallBase &CB) {
  if (!FAM.getResult<DominatorTreeAnalysis>(*CB.getCaller())
           .isReachableFromEntry(CB.getParent()))
    return std::make_unique<InlineAdvice>(this, CB, getCallerORE(CB), false);
  return nullptr;
}

std::unique_ptr<InlineAdvice>
BridgeInlineAdvisor::getMandatoryAdvice(CallBase &CB, bool Advice) {
  if (auto Skip = unreachableSkip(CB))
    return Skip;
  // Mandatory inlinings are tracked too: they change the features.
  if (Advice && !ForceStop)
    return std::make_unique<BridgeInlineAdvice>(this, CB, getCallerORE(CB),
                                                true);
  return std::make_unique<InlineAdvice>(this, CB, getCallerORE(CB), Advice);
}

const std::vector<float> &
BridgeInlineAdvisor::functionVector(const Function &F, std::vector<float> &Out) {
  if (!Embeddings->E) {
    Out.assign(Embeddings->dimension(), 0.0f);
    return Out;
  }
  const size_t Cached = Embeddings->E->cachedFunctions();
  const mlb::ir2vec::Vector &V = Embeddings->E->function(F);
  if (Embeddings->E->cachedFunctions() > Cached)
    ++Embedded;
  Out.assign(V.begin(), V.end());
  return Out;
}

bool BridgeInlineAdvisor::askModel(
    CallBase &CB, const std::array<int64_t, NumFeatures + 1> &V) {
  ++Asked;
  if (!ModelBroken) {
    // The library's three lines: the runner exists (made once per advisor),
    // write the features in place, evaluate.
    for (size_t I = 0; I < NumFeatures + (IncludeDefault ? 1 : 0); ++I)
      Binding.write(*Runner, I, &V[I]);
    if (Embeddings) {
      Binding.write(*Runner, EmbeddingIndex,
                    functionVector(*CB.getCaller(), CallerVector).data());
      Binding.write(*Runner, EmbeddingIndex + 1,
                    functionVector(*CB.getCalledFunction(), CalleeVector).data());
    }
    mlb::Status S = Runner->evaluateRaw();
    mlb::Expected<int64_t> Decision =
        S.isOk() ? mlb::rl::decodeAction(Runner->advice(), mlb::rl::ActionRule::Auto)
                 : mlb::Expected<int64_t>(S);
    if (Decision) {
      ++ModelDecisions;
      return *Decision != 0;
    }
    ModelBroken = true;
    if (RunnerName == "pipe" || RunnerName == "grpc")
      PeerFailedInProcess = true;
    // A runner that broke has said so through its sink (one warning per
    // runner); an answer that is no decision is the advisor's to report.
    if (!Runner->isUnavailable())
      mlp::diagnose(M.getContext(), Prefix, DS_Warning,
                    "the model (" + RunnerName + ") failed at call site " +
                        Twine(Asked) + " (" + CB.getCaller()->getName() +
                        " -> " + CB.getCalledFunction()->getName() +
                        "): " + Decision.status().toString() +
                        "; using LLVM's default inlining decisions from here on");
  }
  ++Fallbacks;
  return IncludeDefault ? V[DefaultFeatureIndex] != 0 : defaultDecision(CB);
}

std::unique_ptr<InlineAdvice> BridgeInlineAdvisor::getAdviceImpl(CallBase &CB) {
  if (auto Skip = unreachableSkip(CB))
    return Skip;
  Function &Caller = *CB.getCaller();
  Function &Callee = *CB.getCalledFunction();
  auto GetAC = [&](Function &F) -> AssumptionCache & {
    return FAM.getResult<AssumptionAnalysis>(F);
  };
  auto &TIR = FAM.getResult<TargetIRAnalysis>(Callee);
  auto &ORE = FAM.getResult<OptimizationRemarkEmitterAnalysis>(Caller);

  const auto Mandatory = getMandatoryKind(CB, FAM, ORE);
  // Never-inline and recursive calls: nothing to ask, nothing to track.
  if (Mandatory == MandatoryInliningKind::Never || &Caller == &Callee)
    return getMandatoryAdvice(CB, false);
  const bool Always = Mandatory == MandatoryInliningKind::Always;
  // After too much growth the advisor stops inlining (LLVM's safety net
  // against a runaway policy) and stops tracking.
  if (ForceStop)
    return std::make_unique<InlineAdvice>(this, CB, ORE, Always);

  int64_t CostEstimate = 0;
  if (!Always) {
    std::optional<int> Estimate = getInliningCostEstimate(CB, TIR, GetAC);
    if (!Estimate) // illegal to inline
      return std::make_unique<InlineAdvice>(this, CB, ORE, false);
    CostEstimate = *Estimate;
  }
  std::optional<InlineCostFeatures> Cost =
      getInliningCostFeatures(CB, TIR, GetAC);
  if (!Cost)
    return std::make_unique<InlineAdvice>(this, CB, ORE, false);
  if (Always)
    return getMandatoryAdvice(CB, true);

  int64_t ConstantArgs = 0;
  for (const Use &Arg : CB.args())
    ConstantArgs += isa<Constant>(Arg) ? 1 : 0;
  const FunctionPropertiesInfo &CallerP = properties(Caller);
  const FunctionPropertiesInfo &CalleeP = properties(Callee);

  std::array<int64_t, NumFeatures + 1> V{};
  for (size_t I = 0; I < Cost->size(); ++I)
    V[idx(inlineCostFeatureToMlFeature(static_cast<InlineCostFeatureIndex>(I)))] =
        (*Cost)[I];
  V[idx(FeatureIndex::callee_basic_block_count)] = CalleeP.BasicBlockCount;
  V[idx(FeatureIndex::callsite_height)] = initialLevel(&Caller);
  V[idx(FeatureIndex::node_count)] = NodeCount;
  V[idx(FeatureIndex::nr_ctant_params)] = ConstantArgs;
  V[idx(FeatureIndex::cost_estimate)] = CostEstimate;
  V[idx(FeatureIndex::edge_count)] = EdgeCount;
  V[idx(FeatureIndex::caller_users)] = CallerP.Uses;
  V[idx(FeatureIndex::caller_conditionally_executed_blocks)] =
      CallerP.BlocksReachedFromConditionalInstruction;
  V[idx(FeatureIndex::caller_basic_block_count)] = CallerP.BasicBlockCount;
  V[idx(FeatureIndex::callee_conditionally_executed_blocks)] =
      CalleeP.BlocksReachedFromConditionalInstruction;
  V[idx(FeatureIndex::callee_users)] = CalleeP.Uses;
  V[idx(FeatureIndex::is_callee_avail_external)] =
      Callee.hasAvailableExternallyLinkage();
  V[idx(FeatureIndex::is_caller_avail_external)] =
      Caller.hasAvailableExternallyLinkage();
  if (IncludeDefault)
    V[DefaultFeatureIndex] = defaultDecision(CB);

  const bool Decision = askModel(CB, V);
  AdvisedInline += Decision ? 1 : 0;
  return std::make_unique<BridgeInlineAdvice>(this, CB, ORE, Decision);
}

// ---- creation -----------------------------------------------------------------

constexpr mlp::EmbeddedModelRef Embedded = MLBRIDGE_EMBEDDED_MODEL(InlinerPolicy);

/// Called by the inliner (InlineAdvisorAnalysis) at the start of every
/// inliner run. Returns LLVM's DefaultInlineAdvisor when no model is
/// configured or it cannot be used, after saying why.
InlineAdvisor *createAdvisor(Module &M, FunctionAnalysisManager &FAM,
                             InlineParams Params, InlineContext IC) {
  LLVMContext &Ctx = M.getContext();
  const bool Verbose = Report.verbose();
  mlp::writeDescription(Ctx, Prefix, Report.describePath(), inlinerDescription());
  auto Fallback = [&](const Twine &Why, bool Warn) -> InlineAdvisor * {
    if (Warn || Verbose)
      mlp::diagnose(Ctx, Prefix, Warn ? DS_Warning : DS_Remark,
                    Why + "; using LLVM's default inlining heuristic");
    return new DefaultInlineAdvisor(M, FAM, Params, IC);
  };

  mlb::Expected<mlp::RunnerSettings> C = RunnerOpts.read(Embedded.Name);
  if (!C)
    return Fallback(C.status().message(), true);
  const mlp::RunnerKind K = mlp::resolveRunnerKind(*C);
  if (K == mlp::RunnerKind::Default)
    return Fallback(C->Kind == mlp::RunnerKind::Default
                        ? Twine("runner 'default'")
                        : Twine("no model configured (set "
                                "-mlbridge-inline-model, -channel or -server)"),
                    C->Kind != mlp::RunnerKind::Default);
  if ((K == mlp::RunnerKind::Pipe || K == mlp::RunnerKind::Grpc) && PeerFailedInProcess)
    return Fallback("the model failed earlier in this process", false);

  // Remote models get inlining_default only when asked for (it changes the
  // header they are sent); an in-process model gets it whenever it has an
  // input of that name (e.g. the shipped policy, which learned where to
  // deviate from LLVM's decision). Computing it costs one more inline-cost
  // analysis per call site, so it is skipped for models that do not read it.
  const bool InProcess =
      K == mlp::RunnerKind::Onnx || K == mlp::RunnerKind::Compiled;
  const bool AskedForDefault =
      IncludeDefaultOpt.get();
  // Embeddings likewise: sent to a remote model when asked for (the
  // vocabulary, read now, gives their length), offered to an in-process one
  // at the published length and read only if it has those inputs.
  const bool OfferEmbeddings =
      InProcess || EmbeddingsOpt.get();
  std::optional<AdvisorEmbeddings> Embeddings;
  if (OfferEmbeddings && !InProcess)
    Embeddings = loadEmbeddings();
  const unsigned EmbeddingDim =
      Embeddings ? Embeddings->dimension() : DefaultEmbeddingDim;
  mlp::RunnerRequest Req;
  Req.Features = inlinerFeatureSpecs(AskedForDefault || InProcess);
  const size_t EmbeddingIndex = Req.Features.size();
  if (OfferEmbeddings)
    for (const char *Name : EmbeddingNames)
      Req.Features.push_back(mlb::TensorSpec::create<float>(
          Name, {1, static_cast<int64_t>(EmbeddingDim)}));
  Req.Advice = mlb::TensorSpec::create<int64_t>("inlining_decision");
  Req.Diagnostics = mlp::llvmDiagnosticSink(
      Ctx, Prefix, Verbose, "; using LLVM's default inlining decisions from here on");
  Req.MakeEmbedded = Embedded.Make;
  auto Bound = mlp::makeBoundRunner(K, *C, Req, "model", "the inliner");
  if (!Bound)
    return Fallback(Bound.status().message(), true);
  const bool IncludeDefault =
      AskedForDefault || (InProcess && Bound->Binding.has(DefaultFeatureIndex));
  if (InProcess && (Bound->Binding.has(EmbeddingIndex) ||
                    Bound->Binding.has(EmbeddingIndex + 1))) {
    Embeddings = loadEmbeddings();
    if (Embeddings->E && Embeddings->dimension() != EmbeddingDim) {
      Embeddings->Error = ("the vocabulary " + Twine(Embeddings->E->vocabularyPath()) +
                           " has dimension " + Twine(Embeddings->dimension()) +
                           ", the model's inputs " + Twine(EmbeddingDim))
                              .str();
      Embeddings->E.reset();
    }
  }
  if (Embeddings && !Embeddings->Error.empty()) {
    static std::atomic<bool> Warned{false};
    if (!Warned.exchange(true))
      mlp::diagnose(Ctx, Prefix, DS_Warning,
                    "the model reads IR2Vec vectors but " + Twine(Embeddings->Error) +
                        "; sending zero vectors (counts-only features)");
  }
  if (Verbose)
    mlp::diagnose(Ctx, Prefix, DS_Remark,
                  mlp::runnerRemark(K, "inlining decisions"));
  return new BridgeInlineAdvisor(
      M, FAM, Params, IC, std::move(Bound->Runner), std::move(Bound->Binding),
      IncludeDefault, std::move(Embeddings), EmbeddingIndex, mlp::runnerKindName(K),
      Report.logPath());
}

/// The analysis that hands the inliner our factory, made once per process
/// and copied into every module analysis manager. On LLVM 19 its
/// constructor sets LLVM's process-wide PluginInlineAdvisorAnalysis::
/// HasBeenRegistered: constructed per manager, every ThinLTO backend thread
/// (a pass builder per module) wrote it while others' inliners read it, a
/// data race (ThreadSanitizer, tests/threads). The copy constructor leaves
/// it alone; the static's initialisation orders the one write before every
/// thread's use.
const PluginInlineAdvisorAnalysis &advisorAnalysis() {
  static const PluginInlineAdvisorAnalysis Analysis(createAdvisor);
  return Analysis;
}

} // namespace

// The entry (llvmGetPassPluginInfo) is common/PluginEntry.cpp's: it refuses
// a host of another LLVM version.
::llvm::PassPluginLibraryInfo mlbridge::plugins::passPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "MLBridgeInlineAdvisor", LLVM_VERSION_STRING,
          [](PassBuilder &PB) {
            // Every module analysis manager built from now on (opt and
            // clang build one per compilation) gets our advisor factory;
            // the inliner then asks it instead of its own heuristic.
            PB.registerAnalysisRegistrationCallback(
                [](ModuleAnalysisManager &MAM) {
                  MAM.registerPass([] { return advisorAnalysis(); });
                });
          }};
}
