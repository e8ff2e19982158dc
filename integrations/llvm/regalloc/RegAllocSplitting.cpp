//===- RegAllocSplitting.cpp - How the allocator splits a live range --------===//
//
// The "split" action of RegAllocPass.h and when it is legal. Splitting is
// our own (SplitKit is not public): a range is split around a loop (its
// part inside gets a register of its own, with copies at the preheader and
// the exits), per basic block -- each block using it gets a local copy of
// the value (copy in before the first use, copy out at the block's last
// split point when live out), the original keeps only the parts between
// blocks -- or in two inside one block. split() takes the first of those
// that applies; the pieces go back to the queue.
//
//===----------------------------------------------------------------------===//

#include "RegAllocPass.h"

#include "llvm/CodeGen/MachineInstrBuilder.h"
#include "llvm/CodeGen/SlotIndexes.h"

#include <algorithm>
#include <vector>

namespace mlbridge::regalloc::detail {

// ---- when a split is legal --------------------------------------------------------

/// Where the copy of a per-block piece back to the rest goes when LI lives
/// on out of MBB: its last split point (greedy's
/// SplitAnalysis::getLastSplitPoint, for asm goto). Normally before the
/// terminators. But an INLINEASM_BR is no terminator: it leaves the block
/// from inside, and LiveIntervals takes the value leaving MBB for the one
/// each successor receives, so a range live into one of its indirect
/// targets must not be written after it. Then the copy goes before the
/// (first) INLINEASM_BR when LI is written in MBB, before it only; none is
/// needed when LI is not written in MBB (the rest keeps the value through
/// the block); and the block is not split when LI is written after it.
MLBridgeRegAlloc::CopyOut MLBridgeRegAlloc::copyOut(MachineBasicBlock &MBB,
                                                    const LiveInterval &LI) const {
  const MachineBasicBlock::iterator Terminators = MBB.getFirstTerminator();
  const auto Leave = std::find_if(MBB.begin(), Terminators, [](const MachineInstr &MI) {
    return MI.getOpcode() == TargetOpcode::INLINEASM_BR;
  });
  if (Leave == Terminators || none_of(MBB.successors(), [&](const MachineBasicBlock *S) {
        return S->isInlineAsmBrIndirectTarget() && LIS->isLiveInToMBB(LI, S);
      }))
    return {true, true, Terminators};
  const SlotIndex LeaveIdx = LIS->getInstructionIndex(*Leave);
  bool Written = false;
  for (const MachineInstr &MI : MRI->def_instructions(LI.reg())) {
    if (MI.getParent() != &MBB)
      continue;
    if (LIS->getInstructionIndex(MI) > LeaveIdx)
      return {false, false, Terminators};
    Written = true;
  }
  return {true, Written, Leave};
}

/// Whether the copies of a per-block split of LI may go into MBB, given the
/// instructions of MBB that use or define it: not after a terminator or an
/// inline asm that reads it, not where an exception leaves the block, and
/// the value going on has a place to be copied out (copyOut).
bool MLBridgeRegAlloc::splittableBlock(MachineBasicBlock &MBB, const LiveInterval &LI,
                                       ArrayRef<const MachineInstr *> Instrs) const {
  if (MBB.hasEHPadSuccessor() || MBB.isEHPad())
    return false;
  for (const MachineInstr *MI : Instrs)
    if (MI->isTerminator() || MI->isInlineAsm())
      return false;
  return !LIS->isLiveOutOfMBB(LI, &MBB) || copyOut(MBB, LI).Possible;
}

bool MLBridgeRegAlloc::canBlockSplit(const LiveInterval &LI) const {
  auto It = Info.find(LI.reg());
  if (It != Info.end() && It->second.NoSplit)
    return false;
  // Live in two blocks at least, and some block where we may put the copies.
  DenseMap<const MachineBasicBlock *, SmallVector<const MachineInstr *, 4>> Used;
  for (const MachineInstr &MI : MRI->reg_nodbg_instructions(LI.reg()))
    Used[MI.getParent()].push_back(&MI);
  unsigned LiveBlocks = 0;
  bool Eligible = false;
  for (MachineBasicBlock &MBB : *MF) {
    if (!LIS->getSlotIndexes()->getMBBRange(&MBB).first.isValid())
      continue;
    const SlotIndex Start = LIS->getMBBStartIdx(&MBB);
    const SlotIndex End = LIS->getMBBEndIdx(&MBB);
    if (!LI.overlaps(Start, End))
      continue;
    ++LiveBlocks;
    auto It = Used.find(&MBB);
    if (It != Used.end() && splittableBlock(MBB, LI, It->second))
      Eligible = true;
  }
  return LiveBlocks >= 2 && Eligible;
}

/// Whether R's part inside L can become a register of its own: a copy in
/// at the end of the preheader when R comes into the loop, a copy out at
/// the start of every exit it leaves through, each exit entered only from
/// the loop and not an exception or asm-goto target.
bool MLBridgeRegAlloc::loopSplittable(const LiveInterval &LI, MachineLoop &L) const {
  if (LIS->isLiveInToMBB(LI, L.getHeader())) {
    MachineBasicBlock *P = L.getLoopPreheader();
    if (!P)
      return false;
    for (const MachineInstr &T : P->terminators())
      for (const MachineOperand &MO : T.operands())
        if (MO.isReg() && MO.getReg() == LI.reg())
          return false;
  }
  SmallVector<MachineBasicBlock *, 4> Exits;
  L.getExitBlocks(Exits);
  for (const MachineBasicBlock *E : Exits) {
    if (!LIS->isLiveInToMBB(LI, E))
      continue;
    if (E->isEHPad() || E->isInlineAsmBrIndirectTarget())
      return false;
    for (const MachineBasicBlock *Pred : E->predecessors())
      if (!L.contains(Pred))
        return false;
  }
  return true;
}

/// Whether the copies around L are cheaper than what they keep out of the
/// loop: at least one reload per block using LI in L were LI spilled.
bool MLBridgeRegAlloc::loopSplitPays(const LiveInterval &LI, MachineLoop &L) const {
  uint64_t Copies = 0, Uses = 0;
  if (LIS->isLiveInToMBB(LI, L.getHeader()))
    Copies += MBFI->getBlockFreq(L.getLoopPreheader()).getFrequency();
  SmallVector<MachineBasicBlock *, 4> Exits;
  L.getUniqueExitBlocks(Exits);
  for (const MachineBasicBlock *E : Exits)
    if (LIS->isLiveInToMBB(LI, E))
      Copies += MBFI->getBlockFreq(E).getFrequency();
  SmallPtrSet<const MachineBasicBlock *, 16> Seen;
  for (const MachineInstr &MI : MRI->reg_nodbg_instructions(LI.reg()))
    if (L.contains(MI.getParent()) && Seen.insert(MI.getParent()).second)
      Uses += MBFI->getBlockFreq(MI.getParent()).getFrequency();
  return Copies < Uses;
}

/// The loops a region split of LI goes around (greedy's region split,
/// reduced to loops): for each block using LI in a loop, its outermost loop
/// that LI is also live outside of, if the copies have places there.
void MLBridgeRegAlloc::splitLoops(const LiveInterval &LI,
                                  SmallVectorImpl<MachineLoop *> &Out) const {
  Out.clear();
  if (!LI.isSpillable() || LI.empty())
    return;
  // The blocks LI is live in, from its segments.
  SmallVector<const MachineBasicBlock *, 16> Live;
  const SlotIndexes &SI = *LIS->getSlotIndexes();
  for (const LiveRange::Segment &S : LI) {
    for (MachineFunction::const_iterator B = SI.getMBBFromIndex(S.start)->getIterator();
         B != MF->end() && LIS->getMBBStartIdx(&*B) < S.end; ++B)
      if (Live.empty() || Live.back() != &*B)
        Live.push_back(&*B);
  }
  auto LiveOutside = [&](const MachineLoop *L) {
    return any_of(Live, [&](const MachineBasicBlock *B) { return !L->contains(B); });
  };
  const auto It = Info.find(LI.reg());
  const MachineLoop *Within = It == Info.end() ? nullptr : It->second.Within;
  auto Eligible = [&](const MachineLoop *L) {
    return (!Within || (L != Within && Within->contains(L))) && LiveOutside(L);
  };
  SmallPtrSet<const MachineBasicBlock *, 16> Seen;
  for (const MachineInstr &MI : MRI->reg_nodbg_instructions(LI.reg())) {
    if (!Seen.insert(MI.getParent()).second)
      continue;
    MachineLoop *L = Loops->getLoopFor(MI.getParent());
    if (!L || !Eligible(L))
      continue;
    while (L->getParentLoop() && Eligible(L->getParentLoop()))
      L = L->getParentLoop();
    if (!is_contained(Out, L) && loopSplittable(LI, *L) && loopSplitPays(LI, *L))
      Out.push_back(L);
  }
}

bool MLBridgeRegAlloc::canSplit(Register R) const {
  const LiveInterval &LI = LIS->getInterval(R);
  if (!LI.isSpillable())
    return false;
  SmallVector<MachineLoop *, 4> Around;
  splitLoops(LI, Around);
  return !Around.empty() || canBlockSplit(LI) || localSplitPoint(LI);
}

/// Where a range inside one block may be split in two (greedy's local
/// split, reduced to halves): before the middle instruction using it, when
/// it reads the value there; both halves are shorter, so splitting again
/// ends. Not for subregister operands or terminators.
MachineInstr *MLBridgeRegAlloc::localSplitPoint(const LiveInterval &LI) const {
  if (!LI.isSpillable() || LI.empty() || !LIS->intervalIsInOneMBB(LI))
    return nullptr;
  SmallVector<MachineInstr *, 8> Instrs;
  for (MachineOperand &MO : MRI->reg_nodbg_operands(LI.reg())) {
    if (MO.getSubReg())
      return nullptr;
    if (!is_contained(Instrs, MO.getParent()))
      Instrs.push_back(MO.getParent());
  }
  // The halves have N/2 + 1 and N - N/2 + 1 instructions (with the copy).
  if (Instrs.size() < 4)
    return nullptr;
  sort(Instrs, [&](MachineInstr *A, MachineInstr *B) {
    return LIS->getInstructionIndex(*A) < LIS->getInstructionIndex(*B);
  });
  MachineInstr *At = Instrs[Instrs.size() / 2];
  if (At->isTerminator() || At->isInlineAsm() || !At->readsVirtualRegister(LI.reg()))
    return nullptr;
  return At;
}

// ---- splits -----------------------------------------------------------------------

void MLBridgeRegAlloc::split(Register R) {
  ++St.Splits;
  SmallVector<MachineLoop *, 4> Around;
  splitLoops(LIS->getInterval(R), Around);
  if (!Around.empty()) {
    // One loop per split (its hottest): with two, one loop's preheader or
    // exit may lie in the other, where the copy would read the rest while
    // the value lives in the other loop's register. The rest is split
    // around the next loop in a later round.
    MachineLoop *Hottest = *std::max_element(
        Around.begin(), Around.end(), [&](MachineLoop *A, MachineLoop *B) {
          return MBFI->getBlockFreq(A->getHeader()) < MBFI->getBlockFreq(B->getHeader());
        });
    ++St.LoopSplits;
    splitAroundLoop(R, *Hottest);
  } else if (canBlockSplit(LIS->getInterval(R)))
    splitPerBlock(R);
  else if (MachineInstr *At = localSplitPoint(LIS->getInterval(R))) {
    ++St.LocalSplits;
    splitLocal(R, *At);
  }
}

/// Around loop L: R's part in L gets its own register (copy in at the
/// preheader, copy out at the exits), the rest is another register. The
/// piece inside may be split again around loops inside L, or per block.
void MLBridgeRegAlloc::splitAroundLoop(Register R, MachineLoop &L) {
  LiveInterval &LI = LIS->getInterval(R);
  SmallVector<Register, 8> NewRegs;
  LiveRangeEdit LRE(&LI, NewRegs, *MF, *LIS, VRM, this, &DeadRemats);
  const Register Rest = LRE.createFrom(R);
  info(Rest).Within = info(R).Within;
  std::vector<Register> Pieces;
  const bool LiveIn = LIS->isLiveInToMBB(LI, L.getHeader());
  SmallVector<MachineBasicBlock *, 4> Exits, LiveExits;
  L.getUniqueExitBlocks(Exits);
  for (MachineBasicBlock *E : Exits)
    if (LIS->isLiveInToMBB(LI, E))
      LiveExits.push_back(E);
  const Register N = LRE.createFrom(R);
  Pieces.push_back(N);
  info(N).Within = &L;
  for (MachineOperand &MO : make_early_inc_range(MRI->reg_operands(R)))
    if (L.contains(MO.getParent()->getParent()))
      MO.setReg(N);
  if (LiveIn) {
    // A preheader has no INLINEASM_BR (MachineBasicBlock::isLegalToHoistInto),
    // so its last split point is before the terminators.
    MachineBasicBlock *P = L.getLoopPreheader();
    const MachineBasicBlock::iterator At = P->getFirstTerminator();
    const DebugLoc DL = At != P->end() ? At->getDebugLoc() : DebugLoc();
    LIS->InsertMachineInstrInMaps(
        *BuildMI(*P, At, DL, TII->get(TargetOpcode::COPY), N).addReg(Rest));
  }
  for (MachineBasicBlock *E : LiveExits) {
    const MachineBasicBlock::iterator At = E->SkipPHIsLabelsAndDebug(E->begin());
    const DebugLoc DL = At != E->end() ? At->getDebugLoc() : DebugLoc();
    LIS->InsertMachineInstrInMaps(
        *BuildMI(*E, At, DL, TII->get(TargetOpcode::COPY), Rest).addReg(N));
  }
  for (MachineOperand &MO : make_early_inc_range(MRI->reg_operands(R)))
    MO.setReg(Rest);
  Pieces.push_back(Rest);
  finishSplit(R, Pieces, /*Final=*/false);
}

/// Inside one block: the instructions before At use one register, At and
/// those after another, with a copy from the first to the second before At.
void MLBridgeRegAlloc::splitLocal(Register R, MachineInstr &At) {
  LiveInterval &LI = LIS->getInterval(R);
  SmallVector<Register, 4> NewRegs;
  LiveRangeEdit LRE(&LI, NewRegs, *MF, *LIS, VRM, this, &DeadRemats);
  const Register First = LRE.createFrom(R), Second = LRE.createFrom(R);
  info(First).Within = info(Second).Within = info(R).Within;
  const SlotIndex Split = LIS->getInstructionIndex(At);
  for (MachineOperand &MO : make_early_inc_range(MRI->reg_operands(R))) {
    const MachineInstr &MI = *MO.getParent();
    const bool After = !MI.isDebugInstr() ? LIS->getInstructionIndex(MI) >= Split
                                          : false;
    MO.setReg(After ? Second : First);
  }
  LIS->InsertMachineInstrInMaps(*BuildMI(*At.getParent(), At, At.getDebugLoc(),
                                         TII->get(TargetOpcode::COPY), Second)
                                     .addReg(First));
  std::vector<Register> Pieces{First, Second};
  finishSplit(R, Pieces, info(R).NoSplit);
}

/// Per block: every block using R (where copies may go) gets its own
/// register for R's part in it (copy in before the first use when the
/// value comes in, copy out at copyOut's place when it goes on); the rest,
/// between the blocks, is another register. Its pieces are not split
/// again.
void MLBridgeRegAlloc::splitPerBlock(Register R) {
  LiveInterval &LI = LIS->getInterval(R);
  // The instructions using or defining R, by block, in program order.
  std::vector<std::pair<MachineBasicBlock *, SmallVector<MachineInstr *, 4>>> ByBlock;
  {
    SmallPtrSet<MachineInstr *, 16> Seen;
    DenseMap<MachineBasicBlock *, size_t> Slot;
    for (MachineInstr &MI : MRI->reg_nodbg_instructions(R)) {
      if (!Seen.insert(&MI).second)
        continue;
      auto [It, New] = Slot.try_emplace(MI.getParent(), ByBlock.size());
      if (New)
        ByBlock.push_back({MI.getParent(), {}});
      ByBlock[It->second].second.push_back(&MI);
    }
  }
  SmallVector<Register, 8> NewRegs;
  LiveRangeEdit LRE(&LI, NewRegs, *MF, *LIS, VRM, this, &DeadRemats);
  const Register Rest = LRE.createFrom(R);
  info(Rest).Within = info(R).Within;
  std::vector<Register> Pieces;
  for (auto &[MBB, Instrs] : ByBlock) {
    if (!splittableBlock(*MBB, LI, ArrayRef<const MachineInstr *>(
                                       reinterpret_cast<const MachineInstr *const *>(
                                           Instrs.data()),
                                       Instrs.size())))
      continue;
    // Found while R still has its operands here (splittableBlock said it is possible).
    const CopyOut Out = LIS->isLiveOutOfMBB(LI, MBB) ? copyOut(*MBB, LI)
                                                     : CopyOut{true, false, MBB->end()};
    sort(Instrs, [&](MachineInstr *A, MachineInstr *B) {
      return LIS->getInstructionIndex(*A) < LIS->getInstructionIndex(*B);
    });
    MachineInstr *First = Instrs.front();
    const bool CopyIn = First->readsVirtualRegister(R);
    const Register N = LRE.createFrom(R);
    Pieces.push_back(N);
    for (MachineInstr *MI : Instrs)
      for (MachineOperand &MO : MI->operands())
        if (MO.isReg() && MO.getReg() == R)
          MO.setReg(N);
    const DebugLoc DL = First->getDebugLoc();
    if (CopyIn)
      LIS->InsertMachineInstrInMaps(
          *BuildMI(*MBB, First, DL, TII->get(TargetOpcode::COPY), N).addReg(Rest));
    if (Out.Needed)
      LIS->InsertMachineInstrInMaps(
          *BuildMI(*MBB, Out.At, DL, TII->get(TargetOpcode::COPY), Rest).addReg(N));
  }
  for (MachineOperand &MO : make_early_inc_range(MRI->reg_operands(R)))
    MO.setReg(Rest);
  Pieces.push_back(Rest);
  finishSplit(R, Pieces, /*Final=*/true);
}

/// After either split: R itself keeps its live interval untouched and has
/// lost all its operands (the inline spiller takes the original interval as
/// the extent of every piece split from it). Recomputes the pieces; one
/// whose liveness falls apart (the rest, between several blocks or loops)
/// becomes one register per connected component, as LLVM requires.
void MLBridgeRegAlloc::finishSplit(Register R, std::vector<Register> &Pieces, bool Final) {
  const Register Original = VRM->getOriginal(R);
  // A piece of a per-block split stays final through later loop splits.
  Final = Final || info(R).NoSplit;
  for (size_t I = 0, E = Pieces.size(); I != E; ++I) {
    const Register N = Pieces[I];
    if (LIS->hasInterval(N))
      LIS->removeInterval(N);
    SmallVector<LiveInterval *, 4> Components;
    LIS->splitSeparateComponents(LIS->createAndComputeVirtRegInterval(N), Components);
    const MachineLoop *Within = info(N).Within;
    for (LiveInterval *C : Components) {
      VRM->setIsSplitFromReg(C->reg(), Original);
      info(C->reg()).Within = Within;
      Pieces.push_back(C->reg());
    }
  }
  for (Register N : Pieces) {
    VRAI->calculateSpillWeightAndHint(LIS->getInterval(N));
    info(N).NoSplit = Final;
  }
  // Only R changed (its operands went to the pieces, new registers); the
  // assignment did not.
  intervalChanged(R);
  if (LDV)
    LDV->splitRegister(R, Pieces, *LIS);
  if (VRM->getOriginal(R) != R && LIS->hasInterval(R)) // not an original:
    LIS->removeInterval(R); // nobody needs its interval
  enqueueNew(Pieces);
}

} // namespace mlbridge::regalloc::detail
