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
//           acyclic graph of at most 16 nodes
//        -> the model walks it (Protocol.h): "select" picks the next node
//           among those whose predecessors are placed, "merge" puts it into
//           the current loop or starts a new one
//        -> the ordered partition is validated (Partition.h) and the loop is
//           distributed: one copy per part (cloneLoopWithPreheader), each
//           keeping its nodes' slices and the loop control.
//
// Loops handled (anything else is left alone, with the reason in the log
// and, with -mlbridge-ld-verbose, a remark): innermost; loop-simplify form
// (preheader, one latch, dedicated exits) and LCSSA (the pass makes both,
// as loop-vectorize would); one exit block, left
// from the latch (rotated); a backedge-taken count ScalarEvolution can
// compute; no instruction with side effects other than simple stores (no
// volatile or atomic accesses, no calls that touch memory or may not
// return); loop control (the branches and what they compute from) that
// reads no memory the loop writes; at most MaxInstructions instructions and
// MaxUnits units, and 2..16 nodes.
//
// Why this is correct: a copy recomputes everything its slices need
// (loads included) and runs all its iterations before the next copy starts.
// A load sees the same memory as before exactly when every store it
// depends on is in its copy or an earlier one and every store that must
// come after it is in its copy or a later one. So every pair of accesses
// (one a store) that may touch the same memory gets unit edges from its
// direction at the loop's level ('<' or '=': the earlier access's units
// first; '>': the later's; both for '*' or when unknown), for every unit
// holding either access (a load may be duplicated), and validatePartition()
// checks them. DependenceAnalysis is asked only where its assumptions hold
// (shapeOf: an affine subscript with a provably non-zero step, whole
// aligned elements, one base); elsewhere the pair is ordered both ways,
// i.e. its units share one node. Pointers that may alias are separated
// only behind LoopAccessInfo's runtime checks (LoopVersioning; see run()).
//
// The model: any runner (-mlbridge-ld-runner; RunnerSettings.h) but gRPC,
// which this plugin is built without (it is loaded into every compile of
// its users; loading gRPC and protobuf would be most of its cost). With no
// runner option, the model compiled into the plugin when the build has
// one, else the built-in policy (BuiltinPolicyRunner below), which answers
// through the same protocol and code path. A model that fails or answers
// an illegal action: a warning, and the loop is left as it is.
//
//===----------------------------------------------------------------------===//

#include "Partition.h"
#include "Protocol.h"

#include "LLVMCompat.h"
#include "PluginEmbeddings.h"
#include "PluginEntry.h"
#include "PluginSupport.h"

#include "mlbridge/model_runner.h"
#include "mlbridge/rl.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/DependenceAnalysis.h"
#include "llvm/Analysis/IVDescriptors.h"
#include "llvm/Analysis/LoopAccessAnalysis.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/LoopIterator.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/LoopSimplify.h"
#include "llvm/Transforms/Utils/LoopUtils.h"
#include "llvm/Transforms/Utils/LoopVersioning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

#if MLBRIDGE_INTEGRATION_HAVE_COMPILED && MLBRIDGE_LOOPDIST_HAVE_MODEL
#include "LoopDistributionPolicy.h" // from models/plugins/loop_distribution_policy.onnx
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <string>
#include <vector>

using namespace llvm;
namespace mlb = mlbridge;
namespace mlp = mlbridge::plugins;
namespace ld = mlbridge::loopdist;

namespace {

constexpr const char *Prefix = "mlbridge-loop-distribution";
constexpr size_t MaxInstructions = 400;
constexpr size_t MaxUnits = 48;
constexpr size_t MaxMemoryAccesses = 64;

// ---- options -------------------------------------------------------------------

cl::OptionCategory Category("MLBridge loop-distribution plugin");

/// -mlbridge-ld-{runner,model,channel,server,format,timeout-ms}
/// (integrations/common/RunnerSettings.h). Runner 'default' is the
/// built-in policy.
const mlp::RunnerOptions RunnerOpts("mlbridge-ld", "MLBRIDGE_LD_", Category);
cl::opt<std::string> PartitionOpt(
    "mlbridge-ld-partition", cl::cat(Category),
    cl::desc("Apply these ordered partitions instead of asking a model: "
             "';'-separated entries '<function>:<loop>=<partition>' or "
             "'*=<partition>' (every loop), e.g. 'kern:0=0,2|1'; <loop> counts "
             "the function's innermost loops in preorder from 0. Invalid "
             "partitions are reported and the loop is left alone. Env: "
             "MLBRIDGE_LD_PARTITION"));
cl::opt<std::string> LogOpt(
    "mlbridge-ld-log", cl::cat(Category),
    cl::desc("Append one JSON line per innermost loop (nodes, partition, "
             "result) to this file. Env: MLBRIDGE_LD_LOG"));
cl::opt<std::string> DescribeOpt(
    "mlbridge-ld-describe", cl::cat(Category),
    cl::desc("Write the protocol (features, advice, lists) as JSON to this "
             "file; the compile goes on as without. Env: MLBRIDGE_LD_DESCRIBE"));
cl::opt<bool> VerboseOpt(
    "mlbridge-ld-verbose", cl::cat(Category), cl::init(false),
    cl::desc("Report the runner and each loop's outcome as remarks. Env: "
             "MLBRIDGE_LD_VERBOSE"));

// ---- the built-in policy -----------------------------------------------------------

/// The policy used when no model is given or compiled in, answering through
/// the protocol like any model (it reads only the features): LLVM-like, it
/// separates nodes that carry a dependence cycle blocking vectorization
/// (node_features "cyclic") from the others, so that the others can be
/// vectorized. It distributes a loop only if it has both kinds; then it
/// keeps placing nodes of the current loop's kind while any is eligible
/// (lowest index first) and starts a new loop when the kind changes.
class BuiltinPolicyRunner final : public mlb::ModelRunner {
public:
  static mlb::Expected<std::unique_ptr<mlb::ModelRunner>>
  create(std::vector<mlb::TensorSpec> Features, mlb::TensorSpec Advice) {
    auto R = created(std::unique_ptr<BuiltinPolicyRunner>(new BuiltinPolicyRunner(
        std::move(Features), std::move(Advice), CreateTag())));
    if (!R)
      return R.takeStatus();
    return std::unique_ptr<mlb::ModelRunner>(std::move(*R));
  }

private:
  BuiltinPolicyRunner(std::vector<mlb::TensorSpec> Features,
                      mlb::TensorSpec Advice, CreateTag)
      : ModelRunner(std::move(Features), std::move(Advice), mlb::RunnerOptions()) {}

  mlb::Status doEvaluate(const std::vector<const mlb::TensorValue *> &F, bool,
                         const mlb::TensorSpec &Spec,
                         mlb::TensorValue &Out) override {
    if (F.size() < ld::NumFeatures)
      return mlb::Status(mlb::ErrorCode::Internal, "built-in policy: features missing");
    const float *Nodes = F[ld::FNodeFeatures]->dataAs<float>();
    const float *Eligible = F[ld::FEligible]->dataAs<float>();
    const float *Current = F[ld::FCurrent]->dataAs<float>();
    const float *Candidate = F[ld::FCandidate]->dataAs<float>();
    const float *Loop = F[ld::FLoopFeatures]->dataAs<float>();
    const int64_t *Agent = F[ld::FAgent]->dataAs<int64_t>();
    if (!Nodes || !Eligible || !Current || !Candidate || !Loop || !Agent)
      return mlb::Status(mlb::ErrorCode::Internal, "built-in policy: feature types");
    auto Cyclic = [&](int64_t N) {
      return Nodes[N * ld::NumNodeFeatures + ld::NFCyclic] > 0.5f;
    };
    const bool Mixed = Loop[ld::LFCyclicNodes] > 0.5f &&
                       Loop[ld::LFCyclicNodes] < Loop[ld::LFNodes] - 0.5f;
    int CurrentKind = -1; // -1: no current loop; else 1 cyclic, 0 not
    for (int64_t N = 0; N < ld::MaxNodes; ++N)
      if (Current[N] > 0.5f)
        CurrentKind = std::max(CurrentKind, Cyclic(N) ? 1 : 0);
    Out = mlb::TensorValue(Spec);
    float *Scores = Out.dataAs<float>();
    if (!Scores || Out.elementCount() < static_cast<size_t>(ld::MaxNodes))
      return mlb::Status(mlb::ErrorCode::Internal, "built-in policy: advice type");
    std::fill(Scores, Scores + ld::MaxNodes, 0.0f);
    if (*Agent == ld::MergeAgent) {
      int64_t C = 0;
      while (C < ld::MaxNodes && Candidate[C] < 0.5f)
        ++C;
      const bool Split = Mixed && C < ld::MaxNodes && CurrentKind >= 0 &&
                         (Cyclic(C) ? 1 : 0) != CurrentKind;
      Scores[Split ? ld::StartNewLoop : ld::MergeIntoCurrent] = 1.0f;
      return mlb::Status::ok();
    }
    // select: prefer the current loop's kind, then the lowest index.
    for (int64_t N = 0; N < ld::MaxNodes; ++N)
      if (Eligible[N] > 0.5f)
        Scores[N] = 1.0f - static_cast<float>(N) / 64.0f +
                    ((Mixed && CurrentKind >= 0 &&
                      (Cyclic(N) ? 1 : 0) == CurrentKind)
                         ? 1.0f
                         : 0.0f);
    return mlb::Status::ok();
  }
};

// The specs and lists of LoopDistributionProtocol.def (ld:: names its dims).
std::vector<mlb::TensorSpec> protocolFeatureSpecs() {
  using namespace ld;
  return {
#define MLB_FEATURE(E, Name, Type, ...)                                          \
  mlb::TensorSpec::create<Type>(#Name, {__VA_ARGS__}),
#include "LoopDistributionProtocol.def"
  };
}

mlb::TensorSpec protocolAdviceSpec() {
  using namespace ld;
#define MLB_ADVICE(Name, Type, ...) return mlb::TensorSpec::create<Type>(#Name, {__VA_ARGS__});
#include "LoopDistributionProtocol.def"
}

std::string protocolDescription() {
  std::vector<mlp::ProtocolList> Lists;
#define MLB_LIST(List, E, Name) mlp::addListItem(Lists, #List, #Name);
#include "LoopDistributionProtocol.def"
  return mlp::describeProtocol(protocolFeatureSpecs(), {}, protocolAdviceSpec(), Lists);
}

// ---- the loop's units, nodes and features --------------------------------------------

/// A loop prepared for distribution: its units (slices), the unit graph and
/// the nodes, the features the model sees.
struct LoopPlan {
  Loop *L = nullptr;
  /// The loop control: every branch and what it computes from inside the
  /// loop. Every copy keeps it.
  SmallPtrSet<Instruction *, 16> Control;
  /// The last instruction of each unit (a store or a live-out value).
  std::vector<Instruction *> Anchors;
  std::vector<SmallPtrSet<Instruction *, 32>> Slices;
  ld::UnitGraph Units;
  ld::NodeGraph Nodes;
  std::vector<std::array<float, ld::NumNodeFeatures>> NodeFeatures;
  std::array<float, ld::NumLoopFeatures> LoopFeatures{};
  /// [MaxNodes * EmbeddingDim]: each node's IR2Vec vector (0 without the
  /// vocabulary); empty when the runner does not read them.
  std::vector<float> NodeEmbeddings;
  /// The loop's instructions in program order, its loads and stores, and
  /// the units each instruction belongs to (planUnits -> planNodes).
  std::vector<Instruction *> Order;
  size_t Memory = 0;
  DenseMap<Instruction *, SmallVector<unsigned, 4>> UnitsOf;
};

bool isPureCall(const Instruction &I) {
  const auto *CB = dyn_cast<CallBase>(&I);
  return CB && !CB->mayReadOrWriteMemory() && CB->willReturn() &&
         !CB->mayHaveSideEffects() && !CB->isConvergent();
}

/// The cheap half of planning, before any dependence analysis: why L is not
/// handled, or "" (then Plan's control, units and slices are filled). A loop
/// with fewer than two units has nothing to decide and needs no more.
std::string planUnits(Loop &L, LoopInfo &LI, DominatorTree &DT,
                      ScalarEvolution &SE, LoopPlan &Plan) {
  if (!L.isInnermost())
    return "not innermost";
  if (!L.isLoopSimplifyForm())
    return "not in loop-simplify form";
  if (!L.getExitBlock() || L.getExitingBlock() != L.getLoopLatch())
    return "more than one exit, or the exit is not at the latch";
  if (!L.isLCSSAForm(DT))
    return "not in LCSSA form";
  if (isa<SCEVCouldNotCompute>(SE.getBackedgeTakenCount(&L)))
    return "backedge-taken count not computable";

  Plan.L = &L;
  LoopBlocksRPO RPO(&L);
  RPO.perform(&LI);
  std::vector<Instruction *> &Order = Plan.Order;
  size_t &Memory = Plan.Memory;
  for (BasicBlock *BB : RPO)
    for (Instruction &I : *BB) {
      Order.push_back(&I);
      if (Order.size() > MaxInstructions)
        return "more than " + std::to_string(MaxInstructions) + " instructions";
      if (isa<DbgInfoIntrinsic>(I))
        continue;
      if (auto *S = dyn_cast<StoreInst>(&I)) {
        if (!S->isSimple())
          return "a volatile or atomic store";
        ++Memory;
      } else if (auto *Ld = dyn_cast<LoadInst>(&I)) {
        if (!Ld->isSimple())
          return "a volatile or atomic load";
        ++Memory;
      } else if (isa<CallBase>(I)) {
        if (!isPureCall(I))
          return "a call that may touch memory or have side effects";
      } else if (I.mayReadOrWriteMemory() || I.mayHaveSideEffects() ||
                 isa<AllocaInst>(I) || I.getType()->isTokenTy()) {
        return std::string("an instruction that cannot be duplicated (") +
               I.getOpcodeName() + ")";
      }
    }
  if (Memory > MaxMemoryAccesses)
    return "more than " + std::to_string(MaxMemoryAccesses) + " memory accesses";

  // The loop control: the branches and, transitively, their operands.
  SmallVector<Instruction *, 16> Work;
  for (BasicBlock *BB : L.blocks())
    Work.push_back(BB->getTerminator());
  while (!Work.empty()) {
    Instruction *I = Work.pop_back_val();
    if (!Plan.Control.insert(I).second)
      continue;
    for (Value *Op : I->operands())
      if (auto *OI = dyn_cast<Instruction>(Op))
        if (L.contains(OI))
          Work.push_back(OI);
  }

  // Units: stores and values used after the loop, outside the control.
  for (Instruction *I : Order) {
    if (Plan.Control.count(I))
      continue;
    const bool LiveOut = any_of(I->users(), [&](User *U) {
      return !L.contains(cast<Instruction>(U));
    });
    if (isa<StoreInst>(I) || LiveOut)
      Plan.Anchors.push_back(I);
  }
  if (Plan.Anchors.size() > MaxUnits)
    return "more than " + std::to_string(MaxUnits) + " stores and live-out values";
  auto &UnitsOf = Plan.UnitsOf;
  for (Instruction *A : Plan.Anchors) {
    const unsigned U = static_cast<unsigned>(Plan.Slices.size());
    Plan.Slices.emplace_back();
    auto &Slice = Plan.Slices.back();
    Work.push_back(A);
    while (!Work.empty()) {
      Instruction *I = Work.pop_back_val();
      if (Plan.Control.count(I) || !Slice.insert(I).second)
        continue;
      UnitsOf[I].push_back(U);
      for (Value *Op : I->operands())
        if (auto *OI = dyn_cast<Instruction>(Op))
          if (L.contains(OI))
            Work.push_back(OI);
    }
  }
  Plan.Units.Units = Plan.Anchors.size();
  return "";
}

/// DependenceInfo::depends answering for every execution (no runtime
/// assumption; LLVM 22 may otherwise answer under predicates nobody checks).
std::unique_ptr<Dependence> dependence(DependenceInfo &DI, Instruction *Src,
                                       Instruction *Dst) {
#if LLVM_VERSION_MAJOR >= 22
  return DI.depends(Src, Dst, /*UnderRuntimeAssumptions=*/false);
#else
  return DI.depends(Src, Dst, /*PossiblyLoopIndependent=*/true);
#endif
}

/// What DependenceAnalysis needs to be right about an access in L: its
/// address is a loop-invariant base plus an offset that is either invariant
/// in L or an affine recurrence of L whose step (and the step of every
/// outer recurrence in its start) is provably non-zero (DA
/// assumes a symbolic coefficient is not 0, and reads a wrapping, non-affine
/// or extended subscript as if it were affine), and the access is a whole
/// aligned element (DA compares addresses as points: an offset that is not a
/// multiple of the access size may overlap its neighbour).
struct AccessShape {
  const SCEV *Base = nullptr;
  uint64_t Size = 0;
  bool Trusted = false;
};

AccessShape shapeOf(Instruction *I, Loop &L, ScalarEvolution &SE) {
  AccessShape A;
  const DataLayout &DL = I->getModule()->getDataLayout();
  const TypeSize Size = DL.getTypeStoreSize(getLoadStoreType(I));
  if (Size.isScalable() || !isPowerOf2_64(Size.getFixedValue()))
    return A;
  A.Size = Size.getFixedValue();
  const SCEV *P = SE.getSCEV(getLoadStorePointerOperand(I));
  A.Base = SE.getPointerBase(P);
  if (!isa<SCEVUnknown>(A.Base) || !SE.isLoopInvariant(A.Base, &L))
    return A;
  const SCEV *Offset = SE.getMinusSCEV(P, A.Base);
  if (isa<SCEVCouldNotCompute>(Offset))
    return A;
  const unsigned AlignBits = Log2_64(A.Size);
  auto Aligned = [&](const SCEV *E) { return SE.getMinTrailingZeros(E) >= AlignBits; };
  // The outer loops' coefficients count too: DA's tests run over all
  // common levels at once.
  auto OuterStepsNonZero = [&](const SCEV *E) {
    return !SCEVExprContains(E, [&](const SCEV *Sub) {
      const auto *Outer = dyn_cast<SCEVAddRecExpr>(Sub);
      return Outer && (!Outer->isAffine() ||
                       !SE.isKnownNonZero(Outer->getStepRecurrence(SE)));
    });
  };
  if (SE.isLoopInvariant(Offset, &L)) {
    A.Trusted = Aligned(Offset) && OuterStepsNonZero(Offset);
    return A;
  }
  const auto *AR = dyn_cast<SCEVAddRecExpr>(Offset);
  if (!AR || AR->getLoop() != &L || !AR->isAffine())
    return A;
  const SCEV *Step = AR->getStepRecurrence(SE);
  A.Trusted = SE.isLoopInvariant(Step, &L) && SE.isKnownNonZero(Step) &&
              OuterStepsNonZero(AR->getStart()) && Aligned(AR->getStart()) &&
              Aligned(Step);
  return A;
}

/// The order the dependence between memory accesses X and Y of L requires
/// (X before Y in program order, at least one of them a store;
/// ld::DependenceOrder), read conservatively: none only if alias analysis
/// or DependenceAnalysis proves there is none where DA can be trusted
/// (shapeOf); the direction at L's level where it can; both otherwise.
unsigned dependenceOrder(Instruction *X, Instruction *Y, Loop &L,
                         const AccessShape &SX, const AccessShape &SY,
                         AAResults &AA, DependenceInfo &DI) {
  // As DA does, and valid across iterations: the pointers' whole objects
  // (type-based and scoped no-alias included).
  if (AA.isNoAlias(MemoryLocation::getBeforeOrAfter(getLoadStorePointerOperand(X),
                                                    X->getAAMetadata()),
                   MemoryLocation::getBeforeOrAfter(getLoadStorePointerOperand(Y),
                                                    Y->getAAMetadata())))
    return ld::NoOrder;
  if (!SX.Trusted || !SY.Trusted || SX.Base != SY.Base || SX.Size != SY.Size)
    return ld::OrderBoth;
  std::unique_ptr<Dependence> D = dependence(DI, X, Y);
  if (!D)
    return ld::NoOrder;
  const unsigned Level = L.getLoopDepth();
  if (D->isConfused() || D->getLevels() < Level)
    return ld::OrderBoth;
  const unsigned Dir = D->getDirection(Level);
  unsigned O = ld::NoOrder;
  if (Dir & (Dependence::DVEntry::LT | Dependence::DVEntry::EQ))
    O |= ld::OrderForward;
  if (Dir & Dependence::DVEntry::GT)
    O |= ld::OrderBackward;
  return O;
}

/// The order LoopAccessInfo's recorded dependence D requires between its
/// source and destination (ld::DependenceOrder, source first).
unsigned recordedOrder(const MemoryDepChecker::Dependence &D) {
  using T = MemoryDepChecker::Dependence;
  switch (D.Type) {
  case T::NoDep:
    return ld::NoOrder;
  case T::Forward:
  case T::ForwardButPreventsForwarding:
    return ld::OrderForward;
  case T::Backward:
  case T::BackwardVectorizable:
  case T::BackwardVectorizableButPreventsForwarding:
    return ld::OrderBackward;
  default: // Unknown, IndirectUnsafe
    return ld::OrderBoth;
  }
}

/// The expensive half (Plan from planUnits, at least two units): the
/// dependences, the nodes and their features; the IR2Vec node vectors only
/// when Embeddings is given. Why L is not handled, or "".
///
/// The unit edges come from the dependence of every pair of memory accesses
/// with a store among them (dependenceOrder), joined with the dependences
/// LoopAccessInfo recorded (LAI, as LLVM's LoopDistribute reads them): the
/// union of two analyses' constraints is sound when either one is.
std::string planNodes(Loop &L, DominatorTree &DT,
                      ScalarEvolution &SE, AAResults &AA, DependenceInfo &DI,
                      const LoopAccessInfo *LAI,
                      mlbridge::ir2vec::PluginEmbeddings *Embeddings,
                      LoopPlan &Plan) {
  const std::vector<Instruction *> &Order = Plan.Order;
  const auto &UnitsOf = Plan.UnitsOf;
  std::vector<Instruction *> Accesses;
  DenseMap<Instruction *, size_t> Position;
  for (Instruction *I : Order)
    if (isa<LoadInst>(I) || isa<StoreInst>(I)) {
      Position[I] = Accesses.size();
      Accesses.push_back(I);
    }
  std::vector<AccessShape> Shapes;
  for (Instruction *I : Accesses)
    Shapes.push_back(shapeOf(I, L, SE));
  auto UnitList = [&](Instruction *I) {
    const auto &Us = UnitsOf.lookup(I);
    return std::vector<size_t>(Us.begin(), Us.end());
  };
  // A unit whose store feeds a load of its own slice in a later iteration
  // (a recurrence through memory: the node feature pi_block).
  std::vector<bool> MemoryRecurrence(Plan.Units.Units, false);
  // Orders X (earlier) and Y (later); false: the loop control takes part.
  auto Require = [&](Instruction *X, Instruction *Y, unsigned O) {
    if (O == ld::NoOrder)
      return true;
    if (Plan.Control.count(X) || Plan.Control.count(Y))
      return false;
    const std::vector<size_t> UX = UnitList(X), UY = UnitList(Y);
    ld::addDependence(Plan.Units, UX, UY, O);
    const bool Flow = (isa<StoreInst>(X) && isa<LoadInst>(Y) && (O & ld::OrderForward)) ||
                      (isa<LoadInst>(X) && isa<StoreInst>(Y) && (O & ld::OrderBackward));
    if (Flow)
      for (size_t U : UX)
        if (std::find(UY.begin(), UY.end(), U) != UY.end())
          MemoryRecurrence[U] = true;
    return true;
  };
  for (size_t A = 0; A < Accesses.size(); ++A)
    for (size_t B = A + 1; B < Accesses.size(); ++B) {
      Instruction *X = Accesses[A], *Y = Accesses[B];
      if (!X->mayWriteToMemory() && !Y->mayWriteToMemory())
        continue;
      if (!Require(X, Y, dependenceOrder(X, Y, L, Shapes[A], Shapes[B], AA, DI)))
        return "loop control reads memory the loop writes";
    }
  if (LAI)
    if (const auto *Deps = LAI->getDepChecker().getDependences())
      for (const MemoryDepChecker::Dependence &D : *Deps) {
        Instruction *Src = D.getSource(LAI->getDepChecker());
        Instruction *Dst = D.getDestination(LAI->getDepChecker());
        auto PS = Position.find(Src), PD = Position.find(Dst);
        if (PS == Position.end() || PD == Position.end() || Src == Dst)
          continue;
        const unsigned O = recordedOrder(D);
        const bool InOrder = PS->second < PD->second;
        // As (earlier, later): a dependence named the other way round
        // swaps its directions.
        const unsigned Swapped = ((O & ld::OrderForward) ? unsigned(ld::OrderBackward) : 0u) |
                                 ((O & ld::OrderBackward) ? unsigned(ld::OrderForward) : 0u);
        if (!Require(InOrder ? Src : Dst, InOrder ? Dst : Src, InOrder ? O : Swapped))
          return "loop control reads memory the loop writes";
      }
  std::sort(Plan.Units.Edges.begin(), Plan.Units.Edges.end());
  Plan.Units.Edges.erase(std::unique(Plan.Units.Edges.begin(), Plan.Units.Edges.end()),
                         Plan.Units.Edges.end());
  Plan.Nodes = ld::collapse(Plan.Units);
  const size_t NN = Plan.Nodes.size();
  if (NN > static_cast<size_t>(ld::MaxNodes))
    return std::to_string(NN) + " nodes (at most " +
           std::to_string(ld::MaxNodes) + ")";

  // Node features.
  std::vector<SmallPtrSet<Instruction *, 32>> NodeInsts(NN);
  for (size_t U = 0; U < Plan.Slices.size(); ++U)
    NodeInsts[Plan.Nodes.NodeOfUnit[U]].insert(Plan.Slices[U].begin(),
                                               Plan.Slices[U].end());
  Plan.NodeFeatures.assign(NN, {});
  DenseMap<Instruction *, SmallVector<unsigned, 4>> NodesOf;
  for (size_t N = 0; N < NN; ++N)
    for (Instruction *I : NodeInsts[N])
      NodesOf[I].push_back(static_cast<unsigned>(N));
  size_t CyclicNodes = 0, EdgeCount = 0;
  for (size_t N = 0; N < NN; ++N) {
    auto &F = Plan.NodeFeatures[N];
    for (Instruction *I : NodeInsts[N]) {
      F[ld::NFInstructions] += 1;
      if (NodesOf[I].size() > 1)
        F[ld::NFShared] += 1;
      if (isa<LoadInst>(I))
        F[ld::NFLoads] += 1;
      else if (isa<StoreInst>(I))
        F[ld::NFStores] += 1;
      else if (isa<BinaryOperator>(I))
        F[I->getType()->isFPOrFPVectorTy() ? ld::NFFPArith : ld::NFIntArith] += 1;
      else if (isa<UnaryOperator>(I))
        F[ld::NFFPArith] += 1;
      else if (isa<CastInst>(I))
        F[ld::NFCasts] += 1;
      else if (isa<CmpInst>(I) || isa<SelectInst>(I))
        F[ld::NFCompareSelect] += 1;
      else if (isa<GetElementPtrInst>(I))
        F[ld::NFGEPs] += 1;
      else if (isa<CallBase>(I))
        F[ld::NFPureCalls] += 1;
      if (auto *Phi = dyn_cast<PHINode>(I)) {
        F[ld::NFPhis] += 1;
        if (Phi->getParent() == L.getHeader()) {
          RecurrenceDescriptor RD;
          InductionDescriptor ID;
          if (RecurrenceDescriptor::isReductionPHI(Phi, &L, RD, nullptr, nullptr,
                                                   &DT, &SE))
            F[ld::NFReductions] += 1;
          else if (!InductionDescriptor::isInductionPHI(Phi, &L, &SE, ID) &&
                   !RecurrenceDescriptor::isFixedOrderRecurrence(Phi, &L, &DT))
            F[ld::NFCyclic] = 1;
        }
      }
    }
    F[ld::NFPiBlock] = Plan.Nodes.Collapsed[N] ? 1 : 0;
    for (size_t U : Plan.Nodes.Members[N])
      if (MemoryRecurrence[U])
        F[ld::NFPiBlock] = 1;
    F[ld::NFUnits] = static_cast<float>(Plan.Nodes.Members[N].size());
    for (size_t U : Plan.Nodes.Members[N])
      if (!isa<StoreInst>(Plan.Anchors[U]))
        F[ld::NFLiveOut] = 1;
    for (size_t M = 0; M < NN; ++M) {
      F[ld::NFInDegree] += Plan.Nodes.Before[M][N] ? 1 : 0;
      F[ld::NFOutDegree] += Plan.Nodes.Before[N][M] ? 1 : 0;
      EdgeCount += Plan.Nodes.Before[N][M] ? 1 : 0;
    }
  }
  // Dependence distances (DependenceAnalysis): between accesses of one
  // node, a backward or unknown loop-carried dependence blocks
  // vectorization.
  const unsigned Level = L.getLoopDepth();
  for (size_t A = 0; A < Accesses.size(); ++A)
    for (size_t B = A; B < Accesses.size(); ++B) {
      Instruction *Src = Accesses[A], *Dst = Accesses[B];
      if (!NodesOf.count(Src) || !NodesOf.count(Dst) ||
          (!Src->mayWriteToMemory() && !Dst->mayWriteToMemory()))
        continue;
      std::unique_ptr<Dependence> D = dependence(DI, Src, Dst);
      if (!D || D->isInput())
        continue;
      bool Carried = D->isConfused(), Backward = D->isConfused();
      std::optional<uint64_t> Distance;
      if (!D->isConfused() && Level <= D->getLevels()) {
        const unsigned Dir = D->getDirection(Level);
        Carried = Dir != Dependence::DVEntry::EQ;
        Backward = (Dir & Dependence::DVEntry::GT) != 0;
        if (const auto *C = dyn_cast_or_null<SCEVConstant>(D->getDistance(Level)))
          Distance = C->getAPInt().abs().getLimitedValue();
      }
      if (!Carried)
        continue;
      for (unsigned N : NodesOf[Src])
        for (unsigned M : NodesOf[Dst]) {
          for (unsigned K : {N, M}) {
            auto &F = Plan.NodeFeatures[K];
            if (Distance && *Distance > 0) {
              const float Dv = static_cast<float>(*Distance);
              if (F[ld::NFMinDistance] == 0 || Dv < F[ld::NFMinDistance])
                F[ld::NFMinDistance] = Dv;
            } else if (!Distance) {
              F[ld::NFUnknownDistance] += 1;
            }
          }
          if (N == M && (Backward || !Distance))
            Plan.NodeFeatures[N][ld::NFCyclic] = 1;
        }
    }
  for (const auto &F : Plan.NodeFeatures)
    CyclicNodes += F[ld::NFCyclic] > 0 ? 1 : 0;

  // IR2Vec vectors: summed in program order, so the same loop always gives
  // the same floats.
  if (Embeddings)
    Plan.NodeEmbeddings.assign(ld::MaxNodes * ld::EmbeddingDim, 0.0f);
  if (Embeddings && Embeddings->dimension() == ld::EmbeddingDim)
    for (size_t N = 0; N < NN; ++N) {
      std::vector<const Instruction *> InOrder;
      for (Instruction *I : Order)
        if (NodeInsts[N].count(I))
          InOrder.push_back(I);
      const mlbridge::ir2vec::Vector V = Embeddings->sumOfInstructions(InOrder);
      for (int64_t D = 0; D < ld::EmbeddingDim; ++D)
        Plan.NodeEmbeddings[N * ld::EmbeddingDim + D] = static_cast<float>(V[D]);
    }

  auto &LF = Plan.LoopFeatures;
  LF[ld::LFNodes] = static_cast<float>(NN);
  LF[ld::LFInstructions] = static_cast<float>(Order.size());
  LF[ld::LFBlocks] = static_cast<float>(L.getNumBlocks());
  LF[ld::LFTripCount] = static_cast<float>(SE.getSmallConstantTripCount(&L));
  LF[ld::LFDepth] = static_cast<float>(L.getLoopDepth());
  LF[ld::LFMemory] = static_cast<float>(Plan.Memory);
  LF[ld::LFCyclicNodes] = static_cast<float>(CyclicNodes);
  LF[ld::LFEdges] = static_cast<float>(EdgeCount);
  return "";
}

// ---- the decision episode of one loop ------------------------------------------------

/// The model's walk over one loop's nodes (Protocol.h).
class PartitionEnv final : public mlb::rl::Environment {
public:
  PartitionEnv(const LoopPlan &Plan, const mlp::FeatureBinding &Binding,
               int64_t LoopId)
      : Plan(Plan), Binding(Binding), LoopId(LoopId),
        N(static_cast<int64_t>(Plan.Nodes.size())) {}

  mlb::Status reset() override {
    Placed.assign(N, false);
    Partition.clear();
    Candidate = -1;
    Asked = 0;
    Phase = ld::SelectAgent;
    advance();
    return mlb::Status::ok();
  }

  mlb::Status observe(mlb::ModelRunner &Runner) override {
    std::vector<float> Nodes(ld::MaxNodes * ld::NumNodeFeatures, 0.0f);
    std::vector<float> Adj(ld::MaxNodes * ld::MaxNodes, 0.0f);
    std::vector<float> PlacedV(ld::MaxNodes, 0.0f), CurrentV(ld::MaxNodes, 0.0f),
        CandidateV(ld::MaxNodes, 0.0f);
    for (int64_t I = 0; I < N; ++I) {
      std::copy(Plan.NodeFeatures[I].begin(), Plan.NodeFeatures[I].end(),
                Nodes.begin() + I * ld::NumNodeFeatures);
      for (int64_t J = 0; J < N; ++J)
        Adj[I * ld::MaxNodes + J] = Plan.Nodes.Before[I][J] ? 1.0f : 0.0f;
      PlacedV[I] = Placed[I] ? 1.0f : 0.0f;
    }
    if (!Partition.empty())
      for (size_t Node : Partition.back())
        CurrentV[Node] = 1.0f;
    if (Phase == ld::MergeAgent && Candidate >= 0)
      CandidateV[Candidate] = 1.0f;
    const std::vector<float> Mask = mask();
    const int64_t Agent = Phase, Step = Asked;
    Binding.write(Runner, ld::FNodeFeatures, Nodes.data());
    Binding.write(Runner, ld::FAdjacency, Adj.data());
    Binding.write(Runner, ld::FEligible, Mask.data());
    Binding.write(Runner, ld::FPlaced, PlacedV.data());
    Binding.write(Runner, ld::FCurrent, CurrentV.data());
    Binding.write(Runner, ld::FCandidate, CandidateV.data());
    Binding.write(Runner, ld::FLoopFeatures, Plan.LoopFeatures.data());
    Binding.write(Runner, ld::FAgent, &Agent);
    Binding.write(Runner, ld::FLoopId, &LoopId);
    Binding.write(Runner, ld::FStep, &Step);
    if (!Plan.NodeEmbeddings.empty())
      Binding.write(Runner, ld::FNodeEmbeddings, Plan.NodeEmbeddings.data());
    return mlb::Status::ok();
  }

  mlb::Status step(const mlb::rl::Action &A) override {
    const std::vector<float> Mask = mask();
    if (A.Index < 0 || A.Index >= ld::MaxNodes || Mask[A.Index] < 0.5f) {
      std::string Legal;
      for (int64_t I = 0; I < ld::MaxNodes; ++I)
        if (Mask[I] > 0.5f)
          Legal += (Legal.empty() ? "" : ", ") + std::to_string(I);
      return mlb::Status(mlb::ErrorCode::InvalidArgument,
                         std::string("the ") + ld::AgentNames[Phase] +
                             " agent chose " + std::to_string(A.Index) +
                             ", which is not legal here (legal: " + Legal + ")");
    }
    ++Asked;
    apply(A.Index);
    advance();
    return mlb::Status::ok();
  }

  /// The legal actions of the agent about to act.
  std::vector<float> mask() const {
    std::vector<float> M(ld::MaxNodes, 0.0f);
    if (Phase == ld::MergeAgent) {
      M[ld::MergeIntoCurrent] = Partition.empty() ? 0.0f : 1.0f;
      M[ld::StartNewLoop] = 1.0f;
      return M;
    }
    for (int64_t I = 0; I < N; ++I)
      if (!Placed[I]) {
        bool Ready = true;
        for (int64_t J = 0; J < N && Ready; ++J)
          Ready = !Plan.Nodes.Before[J][I] || Placed[J];
        M[I] = Ready ? 1.0f : 0.0f;
      }
    return M;
  }

  const ld::OrderedPartition &partition() const { return Partition; }
  int64_t asked() const { return Asked; }

private:
  void apply(int64_t Action) {
    if (Phase == ld::SelectAgent) {
      Candidate = Action;
      Phase = ld::MergeAgent;
      return;
    }
    if (Action == ld::StartNewLoop || Partition.empty())
      Partition.emplace_back();
    Partition.back().push_back(static_cast<size_t>(Candidate));
    Placed[Candidate] = true;
    Candidate = -1;
    Phase = ld::SelectAgent;
  }

  /// Takes the decisions that have one legal action; ends the episode when
  /// every node is placed, else names the agent to ask.
  void advance() {
    for (;;) {
      if (std::all_of(Placed.begin(), Placed.end(), [](bool B) { return B; })) {
        setDone();
        return;
      }
      const std::vector<float> M = mask();
      int64_t Legal = 0, Only = -1;
      for (int64_t I = 0; I < ld::MaxNodes; ++I)
        if (M[I] > 0.5f) {
          ++Legal;
          Only = I;
        }
      if (Legal != 1) {
        setNextAgent(ld::AgentNames[Phase]);
        return;
      }
      apply(Only);
    }
  }

  const LoopPlan &Plan;
  const mlp::FeatureBinding &Binding;
  int64_t LoopId;
  int64_t N;
  std::vector<bool> Placed;
  ld::OrderedPartition Partition;
  int64_t Candidate = -1;
  int64_t Asked = 0;
  int64_t Phase = ld::SelectAgent;
};

/// The agents' rule over the model's scores: the argmax over the legal
/// actions only (an illegal choice is impossible, whatever the model says).
mlb::rl::Policy maskedArgmax(const PartitionEnv &Env) {
  return [&Env](const mlb::TensorValue &Out) -> mlb::Expected<int64_t> {
    const float *S = Out.dataAs<float>();
    if (!S || Out.elementCount() < static_cast<size_t>(ld::MaxNodes))
      return mlb::Status(mlb::ErrorCode::TypeMismatch,
                         "the model's scores are not float32 [16]");
    const std::vector<float> M = Env.mask();
    int64_t Best = -1;
    for (int64_t I = 0; I < ld::MaxNodes; ++I) {
      if (std::isnan(S[I]))
        return mlb::Status(mlb::ErrorCode::InvalidArgument,
                           "the model's scores contain NaN");
      if (M[I] > 0.5f && (Best < 0 || S[I] > S[Best]))
        Best = I;
    }
    if (Best < 0)
      return mlb::Status(mlb::ErrorCode::Internal, "no legal action");
    return Best;
  };
}

// ---- the transformation ------------------------------------------------------------

/// Distributes Plan's loop into P's loops, in order. P has at least two
/// loops and is valid (validatePartition).
void distribute(LoopPlan &Plan, const ld::OrderedPartition &P, LoopInfo &LI,
                DominatorTree &DT, ScalarEvolution &SE) {
  Loop *L = Plan.L;
  LLVMContext &Ctx = L->getHeader()->getContext();
  const size_t K = P.size();
  std::vector<SmallPtrSet<Instruction *, 32>> Keep(K);
  for (size_t Part = 0; Part < K; ++Part) {
    Keep[Part].insert(Plan.Control.begin(), Plan.Control.end());
    for (size_t Node : P[Part])
      for (size_t U : Plan.Nodes.Members[Node])
        Keep[Part].insert(Plan.Slices[U].begin(), Plan.Slices[U].end());
  }
  SE.forgetLoop(L);

  // An empty preheader with one predecessor: the copies' preheaders are
  // cloned from it and chained behind that predecessor.
  BasicBlock *PH = L->getLoopPreheader();
  if (!PH->getSinglePredecessor() || &*PH->begin() != PH->getTerminator())
    SplitBlock(PH, PH->getTerminator(), &DT, &LI);
  PH = L->getLoopPreheader();
  BasicBlock *Pred = PH->getSinglePredecessor();
  BasicBlock *Exit = L->getExitBlock();
  BasicBlock *Latch = L->getLoopLatch();
  MDNode *OrigID = L->getLoopID();

  // Copies 0..K-2 before the original loop, which becomes part K-1.
  std::vector<std::unique_ptr<ValueToValueMapTy>> Maps(K);
  std::vector<Loop *> Loops(K, nullptr);
  Loops[K - 1] = L;
  BasicBlock *TopPH = PH;
  for (size_t Part = K - 1; Part-- > 0;) {
    Maps[Part] = std::make_unique<ValueToValueMapTy>();
    SmallVector<BasicBlock *, 8> Blocks;
    Loops[Part] = cloneLoopWithPreheader(TopPH, Pred, L, *Maps[Part],
                                         ".ldist" + Twine(Part), &LI, &DT, Blocks);
    (*Maps[Part])[Exit] = TopPH;
    remapInstructionsInBlocks(Blocks, *Maps[Part]);
    TopPH = Loops[Part]->getLoopPreheader();
  }
  Pred->getTerminator()->replaceUsesOfWith(PH, TopPH);
  for (size_t Part = 0; Part + 1 < K; ++Part)
    DT.changeImmediateDominator(Loops[Part + 1]->getLoopPreheader(),
                                Loops[Part]->getExitingBlock());

  // Values used after the loop computed by a copy: through a phi in the
  // copy's exit (the next preheader) into the original exit's LCSSA phis.
  for (size_t Part = 0; Part + 1 < K; ++Part)
    for (size_t Node : P[Part])
      for (size_t U : Plan.Nodes.Members[Node]) {
        Instruction *A = Plan.Anchors[U];
        SmallVector<Instruction *, 4> Outside;
        for (User *Us : A->users())
          if (!L->contains(cast<Instruction>(Us)))
            Outside.push_back(cast<Instruction>(Us));
        if (Outside.empty())
          continue;
        BasicBlock *Next = Loops[Part + 1]->getLoopPreheader();
        PHINode *Phi = PHINode::Create(A->getType(), 1, A->getName() + ".ldist");
        Phi->insertInto(Next, Next->begin());
        Phi->addIncoming((*Maps[Part])[A],
                         cast<BasicBlock>((*Maps[Part])[Latch]));
        for (Instruction *Us : Outside)
          Us->replaceUsesOfWith(A, Phi);
      }

  // Each loop keeps its slices and the control.
  for (size_t Part = 0; Part < K; ++Part) {
    SmallVector<Instruction *, 32> Unused;
    for (BasicBlock *BB : L->blocks())
      for (Instruction &I : *BB)
        if (!Keep[Part].count(&I))
          Unused.push_back(Maps[Part] ? cast<Instruction>((*Maps[Part])[&I]) : &I);
    for (Instruction *I : reverse(Unused)) {
      if (!I->use_empty())
        I->replaceAllUsesWith(PoisonValue::get(I->getType()));
      I->eraseFromParent();
    }
  }

  // Loop metadata: each loop its own ID, with the original's hints
  // (vectorize, unroll, ...) but not its distribute ones, and marked as
  // distributed so that LLVM's loop-distribute leaves it alone.
  MDNode *Done = MDNode::get(
      Ctx, {MDString::get(Ctx, "llvm.loop.distribute.enable"),
            ConstantAsMetadata::get(ConstantInt::getFalse(Ctx))});
  for (Loop *Each : Loops)
    Each->setLoopID(makePostTransformationMetadata(
        Ctx, OrigID, {"llvm.loop.distribute."}, {Done}));
}

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
  mlp::writeDescription(Ctx, Prefix, mlp::stringSetting(DescribeOpt, "MLBRIDGE_LD_DESCRIBE"),
                        protocolDescription());
  Verbose = mlp::boolSetting(VerboseOpt, "MLBRIDGE_LD_VERBOSE");
  LogPath = mlp::stringSetting(LogOpt, "MLBRIDGE_LD_LOG");
  const std::string FixedText = mlp::stringSetting(PartitionOpt, "MLBRIDGE_LD_PARTITION");
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
  Req.Features = protocolFeatureSpecs();
  Req.Advice = protocolAdviceSpec();
  Req.Diagnostics = mlp::llvmDiagnosticSink(Ctx, Prefix, Verbose);
  Req.MakeEmbedded = Embedded.Make;
  if (K == mlp::RunnerKind::Default) {
    RunnerName = "builtin";
    auto R = BuiltinPolicyRunner::create(Req.Features, Req.Advice);
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
    LoopPlan Plan;
    Reason = planUnits(*L, LI, DT, SE, Plan);
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
    if (Decide) {
      mlbridge::ir2vec::PluginEmbeddings *E = S.embeddings(Ctx);
      if (E && !EmbeddingsFresh) { // F may have changed since it was embedded
        E->invalidate(F);
        EmbeddingsFresh = true;
      }
      Reason = planNodes(*L, DT, SE, AA, DI, &LAIs.getInfo(*L), E, Plan);
    } else if (Reason.empty()) {
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
        PartitionEnv Env(Plan, S.Bound->Binding, LoopId);
        mlb::rl::Driver D(Env);
        mlb::ModelRunner &R = *S.Bound->Runner;
        (void)D.addAgent(ld::AgentNames[ld::SelectAgent],
                         mlb::rl::Agent(R, maskedArgmax(Env)));
        (void)D.addAgent(ld::AgentNames[ld::MergeAgent],
                         mlb::rl::Agent(R, maskedArgmax(Env)));
        mlb::rl::EpisodeOptions EO;
        EO.Context = Module + ":" + Where;
        mlb::Expected<mlb::rl::EpisodeResult> ER = D.runEpisode(EO);
        Asked = Env.asked();
        if (ER) {
          Fallbacks = static_cast<int64_t>(ER->FallbackSteps);
          P = Env.partition();
        } else {
          Result = "error";
          Reason = ER.status().toString();
          mlp::diagnose(Ctx, Prefix, DS_Warning,
                        F.getName() + " loop " + Twine(Index) + ": " + Reason +
                            "; the loop is left as it is");
        }
      }
      if (P) {
        PartText = ld::formatPartition(*P);
        const std::string Invalid = ld::validatePartition(Plan.Units, Plan.Nodes, *P);
        if (!Invalid.empty()) {
          Result = "invalid";
          Reason = Invalid;
          mlp::diagnose(Ctx, Prefix, DS_Warning,
                        F.getName() + " loop " + Twine(Index) + ": partition '" +
                            PartText + "' is invalid: " + Invalid +
                            "; the loop is left as it is");
        } else if (P->size() > 1) {
          if (Versioning) {
            // The fallback copy must not carry the scopes: off, version
            // (the fallback is cloned), then on the versioned loop again.
            RestoreScopes();
            Versioning->versionLoop();
            Versioning->annotateLoopWithNoAlias();
          }
          distribute(Plan, *P, LI, DT, SE);
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
      mlp::diagnose(Ctx, Prefix, DS_Remark,
                    F.getName() + " loop " + Twine(Index) + ": " + Result +
                        (PartText.empty() ? "" : " '" + PartText + "'") +
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
