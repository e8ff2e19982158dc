//===- LoopPlan.cpp - A loop's units, dependences, nodes and features -----===//
//
// The planning half of MLBridgeLoopDistribution.so (LoopDistribution.h):
// which innermost loops are handled, and the graph the model decides on.
//
//   loop -> units (one slice per store and per value used after the loop)
//        -> unit edges from the dependence of every pair of memory accesses
//           (DependenceAnalysis where it can be trusted, else both ways;
//           joined with LoopAccessInfo's recorded dependences)
//        -> nodes: units joined by dependence cycles (Partition.h), an
//           acyclic graph of at most 16 nodes, and their features
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
// only behind LoopAccessInfo's runtime checks (LoopVersioning; see the
// pass's run()).
//
//===----------------------------------------------------------------------===//

#include "LoopDistribution.h"

#include "PluginEmbeddings.h"

#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/Analysis/DependenceAnalysis.h"
#include "llvm/Analysis/IVDescriptors.h"
#include "llvm/Analysis/LoopAccessAnalysis.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/LoopIterator.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

using namespace llvm;
namespace ld = mlbridge::loopdist;
using ld::LoopPlan;

namespace {

constexpr size_t MaxInstructions = 400;
constexpr size_t MaxUnits = 48;
constexpr size_t MaxMemoryAccesses = 64;

bool isPureCall(const Instruction &I) {
  const auto *CB = dyn_cast<CallBase>(&I);
  return CB && !CB->mayReadOrWriteMemory() && CB->willReturn() &&
         !CB->mayHaveSideEffects() && !CB->isConvergent();
}

/// Adds the instructions of L that I uses to Work (a walk up the operands).
void pushOperandsInLoop(Instruction &I, Loop &L, SmallVectorImpl<Instruction *> &Work) {
  for (Value *Op : I.operands())
    if (auto *OI = dyn_cast<Instruction>(Op))
      if (L.contains(OI))
        Work.push_back(OI);
}

} // namespace

std::string ld::planUnits(Loop &L, LoopInfo &LI, DominatorTree &DT,
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
    pushOperandsInLoop(*I, L, Work);
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
      pushOperandsInLoop(*I, L, Work);
    }
  }
  Plan.Units.Units = Plan.Anchors.size();
  return "";
}

namespace {

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

} // namespace

// The unit edges come from the dependence of every pair of memory accesses
// with a store among them (dependenceOrder), joined with the dependences
// LoopAccessInfo recorded (LAI, as LLVM's LoopDistribute reads them): the
// union of two analyses' constraints is sound when either one is.
std::string ld::planNodes(Loop &L, DominatorTree &DT, ScalarEvolution &SE, AAResults &AA,
                          DependenceInfo &DI, const LoopAccessInfo *LAI,
                          mlbridge::ir2vec::PluginEmbeddings *Embeddings, LoopPlan &Plan) {
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
  Plan.FixedCycle.assign(NN, false);
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
                   !RecurrenceDescriptor::isFixedOrderRecurrence(Phi, &L, &DT)) {
            F[ld::NFCyclic] = 1;
            Plan.FixedCycle[N] = true;
          }
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
          if (N == M && Backward && Distance)
            Plan.FixedCycle[N] = true;
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
