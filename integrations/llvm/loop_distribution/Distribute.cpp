//===- Distribute.cpp - Distributing a loop into an ordered partition -----===//
//
// The transformation of MLBridgeLoopDistribution.so (LoopDistribution.h):
// one copy of the loop per part of a validated ordered partition
// (cloneLoopWithPreheader), in order, each keeping its nodes' slices and
// the loop control; values used after the loop leave through the copy that
// computes them. Why that is correct: LoopPlan.cpp.
//
//===----------------------------------------------------------------------===//

#include "LoopDistribution.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Metadata.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/LoopUtils.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

#include <memory>
#include <vector>

using namespace llvm;
namespace ld = mlbridge::loopdist;
using ld::LoopPlan;

void ld::distribute(LoopPlan &Plan, const ld::OrderedPartition &P, LoopInfo &LI,
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
