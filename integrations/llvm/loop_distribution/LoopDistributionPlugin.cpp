//===- LoopDistributionPlugin.cpp - Model-chosen loop distribution --------===//
//
// An LLVM pass plugin (MLBridgeLoopDistribution.so) with one function pass,
// `mlbridge-loop-distribution`, that runs at VectorizerStart (just before
// LLVM's loop-distribute and loop-vectorize, at -O1..-O3/-Os/-Oz) and lets a
// model choose the ordered partition of every innermost loop it handles:
//
//   loop -> units (one slice per store and per value used after the loop)
//        -> unit edges from the dependence of every pair of memory accesses
//           (DependenceAnalysis where it can be trusted, else both ways;
//           joined with LoopAccessInfo's recorded dependences)
//        -> nodes: units joined by dependence cycles (Partition.h), an
//           acyclic graph of at most 16 nodes          [LoopPlan.cpp]
//        -> the model walks it (Protocol.h): "select" picks the next node
//           among those whose predecessors are placed, "merge" puts it into
//           the current loop or starts a new one        [Episode.cpp]
//        -> the ordered partition is validated (Partition.h) and the loop is
//           distributed: one copy per part (cloneLoopWithPreheader), each
//           keeping its nodes' slices and the loop control. [Distribute.cpp]
//
// This file holds the options, what one module decides with (Session), the
// pass that takes each loop through those steps (LoopDistribution.h lists
// the files) and the plugin's registration. LoopPlan.cpp says which loops
// are handled and why the result is correct.
//
// The model: any runner (-mlbridge-ld-runner; RunnerSettings.h) but gRPC,
// which this plugin is built without (it is loaded into every compile of
// its users; loading gRPC and protobuf would be most of its cost). With no
// runner option, the model compiled into the plugin when the build has
// one, else the built-in policy (BuiltinPolicy.cpp), which answers
// through the same protocol and code path. A model that fails or answers
// an illegal action: a warning, and the loop is left as it is.
//
//===----------------------------------------------------------------------===//

#include "LoopDistribution.h"

#include "PluginEmbeddings.h"
#include "PluginEntry.h"
#include "PluginSupport.h"

#include "mlbridge/model_runner.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/DependenceAnalysis.h"
#include "llvm/Analysis/LoopAccessAnalysis.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Transforms/Utils/LoopSimplify.h"
#include "llvm/Transforms/Utils/LoopUtils.h"
#include "llvm/Transforms/Utils/LoopVersioning.h"

#if MLBRIDGE_INTEGRATION_HAVE_COMPILED && MLBRIDGE_LOOPDIST_HAVE_MODEL
#include "LoopDistributionPolicy.h" // from models/plugins/loop_distribution_policy.onnx
#endif

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace llvm;
namespace mlb = mlbridge;
namespace mlp = mlbridge::plugins;
namespace ld = mlbridge::loopdist;

namespace {

constexpr const char *Prefix = "mlbridge-loop-distribution";

// ---- options -------------------------------------------------------------------

cl::OptionCategory Category("MLBridge loop-distribution plugin");

/// -mlbridge-ld-{runner,model,channel,server,format,timeout-ms}
/// (integrations/common/RunnerSettings.h). Runner 'default' is the
/// built-in policy.
const mlp::RunnerOptions RunnerOpts("mlbridge-ld", "MLBRIDGE_LD_", Category);
const mlp::Setting<std::string> PartitionOpt(
    "mlbridge-ld-partition", "MLBRIDGE_LD_PARTITION", Category,
    "Apply these ordered partitions instead of asking a model: "
    "';'-separated entries '<function>:<loop>=<partition>' or "
    "'*=<partition>' (every loop), e.g. 'kern:0=0,2|1'; <loop> counts the "
    "function's innermost loops in preorder from 0. Invalid partitions "
    "are reported and the loop is left alone.");
/// -mlbridge-ld-log, -mlbridge-ld-verbose, -mlbridge-ld-describe
/// (MLBRIDGE_LD_LOG, ...; PluginSupport.h).
const mlp::ReportOptions Report(
    "mlbridge-ld", "MLBRIDGE_LD_", Category,
    {"Append one JSON line per innermost loop (nodes, partition, result) to "
     "this file.",
     "Report the runner and each loop's outcome as remarks.",
     "Write the protocol (features, advice, lists) as JSON to this file; the "
     "compile goes on as without."});

// ---- the pass ------------------------------------------------------------------------

#if MLBRIDGE_INTEGRATION_HAVE_COMPILED && MLBRIDGE_LOOPDIST_HAVE_MODEL
constexpr mlp::EmbeddedModelRef Embedded =
    MLBRIDGE_EMBEDDED_MODEL(LoopDistributionPolicy);
#else
constexpr mlp::EmbeddedModelRef Embedded{};
#endif

/// What one module decides with: the runner (made on the module's first
/// function with loops, kept for the rest of the module: one channel), the
/// fixed partitions of -mlbridge-ld-partition, the log. Nothing is shared
/// between modules: ThinLTO compiles many at once on its backend threads,
/// each with its own pipeline and so its own LoopDistributionPass.
struct Session {
  std::string Error; // the settings are wrong or the runner could not be made
  bool ErrorReported = false;
  std::string RunnerName;
  std::optional<mlp::BoundRunner> Bound;
  std::map<std::string, std::string> Fixed; // "<function>:<loop>" or "*"
  std::string LogPath;
  bool Verbose = false;
  /// loop_id: the loops asked about so far in this module (0, 1, ...), so
  /// the same module always gives the same ids.
  int64_t NextLoopId = 0;
  /// Whether the runner reads node_embeddings (a model over pipes may; the
  /// built-in policy and a compiled-in model without that input do not).
  bool ReadsEmbeddings = false;
  bool EmbeddingsLoaded = false;
  /// IR2Vec (node_embeddings): its vocabulary is read on the first loop
  /// that needs it; null without the vocabulary.
  std::unique_ptr<mlbridge::ir2vec::PluginEmbeddings> Embeddings;

  explicit Session(LLVMContext &Ctx);

  mlbridge::ir2vec::PluginEmbeddings *embeddings(LLVMContext &Ctx) {
    if (!ReadsEmbeddings)
      return nullptr;
    if (!EmbeddingsLoaded) {
      EmbeddingsLoaded = true;
      if (auto E = mlbridge::ir2vec::PluginEmbeddings::create())
        Embeddings = std::move(*E);
      else
        mlp::diagnose(Ctx, Prefix, DS_Warning,
                      E.status().toString() + "; node_embeddings are 0");
    }
    return Embeddings.get();
  }
};

Session::Session(LLVMContext &Ctx) {
  mlp::writeDescription(Ctx, Prefix, Report.describePath(), ld::protocolDescription());
  Verbose = Report.verbose();
  LogPath = Report.logPath();
  const std::string FixedText = PartitionOpt.get();
  for (StringRef Rest = FixedText; !Rest.empty();) {
    auto [Entry, Tail] = Rest.split(';');
    Rest = Tail;
    Entry = Entry.trim();
    if (Entry.empty())
      continue;
    auto [Where, What] = Entry.split('=');
    std::string Why;
    if (What.trim().empty())
      Why = "'" + Entry.str() + "' is not '<function>:<loop>=<partition>' or '*=<partition>'";
    else if (!ld::parsePartition(What.trim(), Why))
      Why = "'" + Entry.str() + "': " + Why;
    if (!Why.empty()) {
      Error = "-mlbridge-ld-partition: " + Why;
      return;
    }
    Fixed[Where.trim().str()] = What.trim().str();
  }
  if (!Fixed.empty()) {
    RunnerName = "fixed";
    return;
  }
  mlb::Expected<mlp::RunnerSettings> C = RunnerOpts.read(Embedded.Name);
  if (!C) {
    Error = C.status().message();
    return;
  }
  const mlp::RunnerKind K = mlp::resolveRunnerKind(*C);
  mlp::RunnerRequest Req;
  Req.Features = ld::protocolFeatureSpecs();
  Req.Advice = ld::protocolAdviceSpec();
  Req.Diagnostics = mlp::llvmDiagnosticSink(Ctx, Prefix, Verbose);
  Req.MakeEmbedded = Embedded.Make;
  if (K == mlp::RunnerKind::Default) {
    RunnerName = "builtin";
    auto R = ld::makeBuiltinPolicy(Req.Features, Req.Advice);
    if (!R) {
      Error = R.status().message();
      return;
    }
    mlp::BoundRunner B;
    B.Runner = std::move(*R);
    if (mlb::Status St = B.Binding.bind(*B.Runner, Req.Features); !St.isOk()) {
      Error = St.message();
      return;
    }
    Bound = std::move(B);
  } else {
    RunnerName = mlp::runnerKindName(K);
    auto B = mlp::makeBoundRunner(K, *C, Req, "model", "loop distribution");
    if (!B) {
      Error = B.status().message();
      return;
    }
    Bound = std::move(*B);
    ReadsEmbeddings = Bound->Binding.has(ld::FNodeEmbeddings);
  }
  if (Verbose)
    mlp::diagnose(Ctx, Prefix, DS_Remark,
                  RunnerName == "builtin"
                      ? std::string("partitions chosen by the built-in policy")
                      : mlp::runnerRemark(K, "partitions chosen"));
}

// Two checks on what a model (or the built-in policy) decides, not on a
// fixed -mlbridge-ld-partition. Both decline what cannot pay in executed
// instructions whatever the model believes; measured on real code (zlib's
// and xxHash's loops), each one was a run-time loss.
//
// A loop whose accesses need more runtime pointer checks than this is left
// whole: the checks run at every entry of the loop, and a loop that needs
// many is typically a short copy (zlib's match copy needs 12 for three
// bytes an iteration). Eight is LLVM's own budget for the same trade-off
// (loop-vectorize's runtime-memory-check-threshold).
constexpr int64_t MaxRuntimeChecks = 8;

/// Whether a partition of Plan's nodes has a loop that could vectorize
/// where the whole loop could not (ld::someLoopGains: a loop free of cycles
/// with stores, or loads it does not share with another node). One without
/// only adds loop overhead and recomputes what the parts share: xxHash's
/// four lanes split four ways, lookup3's hash split into one copy per
/// live-out value, liblzma's CRC loops split from the count of bytes read
/// or from a value read again. In a versioned loop (it has runtime checks)
/// a cycle through dependences of unknown distance may go: zlib's byte
/// copies gain.
bool partitionCanGain(const ld::LoopPlan &Plan, const ld::OrderedPartition &P,
                      bool Versioned) {
  std::vector<bool> Cyclic, Work;
  for (size_t N = 0; N < Plan.NodeFeatures.size(); ++N) {
    const auto &F = Plan.NodeFeatures[N];
    const bool Fixed = N < Plan.FixedCycle.size() && Plan.FixedCycle[N];
    Cyclic.push_back(Versioned ? Fixed : F[ld::NFCyclic] > 0.5f);
    // Loads whose every instruction another loop computes too are no work
    // of their own (a value read again for use after the loop).
    Work.push_back(F[ld::NFStores] > 0.5f ||
                   (F[ld::NFLoads] > 0.5f && F[ld::NFInstructions] > F[ld::NFShared]));
  }
  return ld::someLoopGains(P, Cyclic, Work);
}

class LoopDistributionPass : public PassInfoMixin<LoopDistributionPass> {
public:
  PreservedAnalyses run(Function &F, FunctionAnalysisManager &FAM);

private:
  /// The session of the module being compiled, made on its first function
  /// with loops (in that module's context), remade if the pipeline is run on
  /// another module. Shared by the copies a pass manager may make.
  struct State {
    const Module *M = nullptr;
    std::unique_ptr<Session> S;
  };
  std::shared_ptr<State> Current = std::make_shared<State>();
};

PreservedAnalyses LoopDistributionPass::run(Function &F,
                                            FunctionAnalysisManager &FAM) {
  LLVMContext &Ctx = F.getContext();
  LoopInfo &LI = FAM.getResult<LoopAnalysis>(F);
  if (LI.empty())
    return PreservedAnalyses::all();
  if (!Current->S || Current->M != F.getParent()) {
    Current->S = std::make_unique<Session>(Ctx);
    Current->M = F.getParent();
  }
  Session &S = *Current->S;
  if (!S.Error.empty()) {
    if (!S.ErrorReported) // once per module
      mlp::diagnose(Ctx, Prefix, DS_Warning,
                    S.Error + "; loops are left as they are");
    S.ErrorReported = true;
    return PreservedAnalyses::all();
  }
  DominatorTree &DT = FAM.getResult<DominatorTreeAnalysis>(F);
  ScalarEvolution &SE = FAM.getResult<ScalarEvolutionAnalysis>(F);
  AAResults &AA = FAM.getResult<AAManager>(F);
  DependenceInfo DI(&F, &AA, &SE, &LI);
  bool EmbeddingsFresh = false; // F's cached vectors forgotten in this run
  LoopAccessInfoManager &LAIs = FAM.getResult<LoopAccessAnalysis>(F);
  const std::string Module = F.getParent()->getModuleIdentifier();

  SmallVector<Loop *, 8> Innermost;
  for (Loop *L : LI.getLoopsInPreorder())
    if (L->isInnermost())
      Innermost.push_back(L);
  // Loop-simplify and LCSSA form, as loop-vectorize makes them right after
  // this pass (earlier function passes need not keep them).
  bool Changed = false;
  for (Loop *L : Innermost) {
    Changed |= simplifyLoop(L, &DT, &LI, &SE, &FAM.getResult<AssumptionAnalysis>(F),
                            nullptr, /*PreserveLCSSA=*/false);
    Changed |= formLCSSA(*L, DT, &LI, &SE);
  }
  for (size_t Index = 0; Index < Innermost.size(); ++Index) {
    const std::string Where = F.getName().str() + ":" + std::to_string(Index);
    int64_t Nodes = 0, Asked = 0, Fallbacks = 0, LoopId = -1;
    std::string Result, Reason, PartText;
    Loop *L = Innermost[Index];
    // A diagnostic about this loop.
    auto Diagnose = [&](DiagnosticSeverity Severity, const std::string &What) {
      mlp::diagnose(Ctx, Prefix, Severity, F.getName() + " loop " + Twine(Index) + ": " + What);
    };
    ld::LoopPlan Plan;
    Reason = ld::planUnits(*L, LI, DT, SE, Plan);
    // Fewer than two units: one node at most, nothing to decide, so no
    // dependence analysis (the partition of -mlbridge-ld-partition is
    // still checked against the one node).
    const bool Decide = Reason.empty() && Plan.Units.Units >= 2;
    // Pointers that may alias: the loop is planned as if the runtime checks
    // LoopAccessInfo asks for had passed (LoopVersioning's noalias scopes on
    // its accesses, which DependenceAnalysis reads), and versioned only
    // when it is distributed; otherwise the scopes are taken off again.
    std::optional<LoopVersioning> Versioning;
    SmallVector<std::tuple<Instruction *, MDNode *, MDNode *>, 16> SavedScopes;
    int64_t Checks = 0;
    if (Decide) {
      const LoopAccessInfo &LAI = LAIs.getInfo(*L);
      const RuntimePointerChecking *RtPC = LAI.getRuntimePointerChecking();
      if (RtPC && RtPC->Need && !RtPC->getChecks().empty() &&
          LAI.getPSE().getPredicate().isAlwaysTrue()) {
        Checks = static_cast<int64_t>(RtPC->getChecks().size());
      }
      if (S.Fixed.empty() && Checks > MaxRuntimeChecks) {
        Reason = "more than " + std::to_string(MaxRuntimeChecks) +
                 " runtime pointer checks";
      } else if (Checks > 0) {
        Versioning.emplace(LAI, RtPC->getChecks(), L, &LI, &DT, &SE);
        for (BasicBlock *BB : L->blocks())
          for (Instruction &I : *BB)
            if (I.mayReadOrWriteMemory())
              SavedScopes.emplace_back(&I, I.getMetadata(LLVMContext::MD_alias_scope),
                                       I.getMetadata(LLVMContext::MD_noalias));
        Versioning->annotateLoopWithNoAlias();
      }
    }
    auto RestoreScopes = [&] {
      for (auto &[I, Scope, NoAlias] : SavedScopes) {
        I->setMetadata(LLVMContext::MD_alias_scope, Scope);
        I->setMetadata(LLVMContext::MD_noalias, NoAlias);
      }
      SavedScopes.clear();
    };
    if (Decide && Reason.empty()) {
      mlbridge::ir2vec::PluginEmbeddings *E = S.embeddings(Ctx);
      if (E && !EmbeddingsFresh) { // F may have changed since it was embedded
        E->invalidate(F);
        EmbeddingsFresh = true;
      }
      Reason = ld::planNodes(*L, DT, SE, AA, DI, &LAIs.getInfo(*L), E, Plan);
    } else if (!Decide && Reason.empty()) {
      Plan.Nodes = ld::collapse(Plan.Units);
    }
    if (!Reason.empty()) {
      Result = "declined";
    } else {
      Nodes = static_cast<int64_t>(Plan.Nodes.size());
      std::optional<ld::OrderedPartition> P;
      if (!S.Fixed.empty()) {
        auto It = S.Fixed.find(Where);
        if (It == S.Fixed.end())
          It = S.Fixed.find("*");
        if (It != S.Fixed.end()) {
          std::string Err; // the syntax was checked with the settings
          P = ld::parsePartition(It->second, Err);
        }
      } else if (Nodes >= 2) {
        LoopId = S.NextLoopId++;
        ld::EpisodeOutcome EO = ld::askModel(Plan, *S.Bound, LoopId, Module + ":" + Where);
        Asked = EO.Asked;
        if (EO.Partition) {
          Fallbacks = EO.Fallbacks;
          P = std::move(EO.Partition);
        } else {
          Result = "error";
          Reason = EO.Error;
          Diagnose(DS_Warning, Reason + "; the loop is left as it is");
        }
      }
      if (P) {
        PartText = ld::formatPartition(*P);
        const std::string Invalid = ld::validatePartition(Plan.Units, Plan.Nodes, *P);
        if (!Invalid.empty()) {
          Result = "invalid";
          Reason = Invalid;
          Diagnose(DS_Warning, "partition '" + PartText + "' is invalid: " + Invalid +
                                 "; the loop is left as it is");
        } else if (P->size() > 1 && S.Fixed.empty() &&
                   !partitionCanGain(Plan, *P, Versioning.has_value())) {
          Result = "unchanged";
          Reason = "no loop of the partition can vectorize (each keeps a dependence "
                   "cycle or does no memory work)";
        } else if (P->size() > 1) {
          if (Versioning) {
            // The fallback copy must not carry the scopes: off, version
            // (the fallback is cloned), then on the versioned loop again.
            RestoreScopes();
            Versioning->versionLoop();
            Versioning->annotateLoopWithNoAlias();
          }
          ld::distribute(Plan, *P, LI, DT, SE);
          if (S.Embeddings)
            S.Embeddings->invalidate(F);
          Changed = true;
          Result = "distributed";
        } else {
          Result = "unchanged";
        }
      } else if (Result.empty()) {
        Result = "unchanged";
        if (Nodes < 2)
          Reason = "one node: nothing to distribute";
      }
    }
    RestoreScopes(); // not distributed (or already done)
    if (Result != "distributed")
      Checks = 0;
    if (S.Verbose)
      Diagnose(DS_Remark, Result + (PartText.empty() ? "" : " '" + PartText + "'") +
                            (Reason.empty() ? "" : " (" + Reason + ")"));
    if (!S.LogPath.empty())
      mlp::appendLogLine(Ctx, Prefix, S.LogPath,
                         mlp::LogLine(Prefix, Module, S.RunnerName,
                                      static_cast<uint64_t>(Asked),
                                      static_cast<uint64_t>(Fallbacks))
                             .add("function", F.getName())
                             .add("loop", static_cast<int64_t>(Index))
                             .add("loop_id", LoopId)
                             .add("nodes", Nodes)
                             .add("partition", PartText)
                             .add("result", Result)
                             .add("reason", Reason)
                             .add("runtime_checks", Checks)
                             .str());
  }
  if (!Changed)
    return PreservedAnalyses::all();
  PreservedAnalyses PA;
  PA.preserve<LoopAnalysis>();
  PA.preserve<DominatorTreeAnalysis>();
  return PA;
}


} // namespace

// The entry (llvmGetPassPluginInfo) is common/PluginEntry.cpp's: it refuses
// a host of another LLVM version.
::llvm::PassPluginLibraryInfo mlbridge::plugins::passPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "MLBridgeLoopDistribution", LLVM_VERSION_STRING,
          [](PassBuilder &PB) {
            PB.registerPipelineParsingCallback(
                [](StringRef Name, FunctionPassManager &FPM,
                   ArrayRef<PassBuilder::PipelineElement>) {
                  if (Name != Prefix)
                    return false;
                  FPM.addPass(LoopDistributionPass());
                  return true;
                });
            PB.registerVectorizerStartEPCallback(
                [](FunctionPassManager &FPM, OptimizationLevel) {
                  FPM.addPass(LoopDistributionPass());
                });
          }};
}
