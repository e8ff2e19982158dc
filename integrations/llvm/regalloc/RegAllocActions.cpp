//===- RegAllocActions.cpp - The allocator's queue, candidates and actions -===//
//
// The mechanics every policy drives (RegAllocPass.h): the queue of live
// ranges by priority and the window taken from it; each range's candidate
// registers -- RegisterClassInfo's allocation order after the target's
// hints -- and which are legal (free in the LiveRegMatrix, or taken only by
// lighter, evictable ranges); assign (evicting those) and spill (the inline
// spiller through LiveRangeEdit); and the LiveRangeEdit delegate that keeps
// the queue and the feature caches right when the spiller or a split edits
// ranges. Legality is decided here, never by the policy. The splits are
// RegAllocSplitting.cpp.
//
//===----------------------------------------------------------------------===//

#include "RegAllocPass.h"

#include <algorithm>

namespace mlbridge::regalloc::detail {

// ---- queue -------------------------------------------------------------------

double MLBridgeRegAlloc::priority(const LiveInterval &LI) const {
  // Like greedy: the largest ranges are the hardest to place, so first;
  // unspillable ones (a spill's reloads) before everything.
  double P = static_cast<double>(LI.getSize());
  if (!LI.isSpillable())
    P += 1e18;
  return P;
}

void MLBridgeRegAlloc::enqueue(Register R) {
  if (Queued.count(R))
    return;
  const double P = priority(LIS->getInterval(R));
  Queue.insert({P, R.id()});
  Queued[R] = P;
}

void MLBridgeRegAlloc::enqueueNew(ArrayRef<Register> Regs) {
  for (Register R : Regs) {
    if (!LIS->hasInterval(R))
      continue;
    if (MRI->reg_nodbg_empty(R)) {
      LIS->removeInterval(R);
      continue;
    }
    if (!VRM->hasPhys(R))
      enqueue(R);
  }
}

bool MLBridgeRegAlloc::prepareSelect() {
  Window.clear();
  Current = Register();
  for (auto It = Queue.begin(); It != Queue.end() &&
                                Window.size() < static_cast<size_t>(ra::MaxNodes);) {
    Register R(It->second);
    if (MRI->reg_nodbg_empty(R)) { // deleted while queued (LRE_CanEraseVirtReg)
      Queued.erase(R);
      It = Queue.erase(It);
      if (LIS->hasInterval(R))
        LIS->removeInterval(R);
      continue;
    }
    Window.push_back(R);
    ++It;
  }
  return !Window.empty();
}

void MLBridgeRegAlloc::applySelect(size_t Index) {
  Current = Window[Index];
  Queue.erase({Queued[Current], Current.id()});
  Queued.erase(Current);
  ++St.Rounds;
  prepareAction();
}

// ---- candidates and legality -------------------------------------------------------

/// The candidates of LI, hints first; returns how many are hints.
size_t MLBridgeRegAlloc::candidateList(const LiveInterval &LI,
                                       SmallVectorImpl<MCPhysReg> &List) const {
  const TargetRegisterClass *RC = MRI->getRegClass(LI.reg());
  ArrayRef<MCPhysReg> Order = RCI.getOrder(RC);
  SmallVector<MCPhysReg, 8> Hints;
  const bool HardHints =
      TRI->getRegAllocationHints(LI.reg(), Order, Hints, *MF, VRM, Matrix);
  for (MCPhysReg H : Hints)
    if (is_contained(Order, H) && !is_contained(List, H))
      List.push_back(H);
  const size_t NumHints = List.size();
  if (!HardHints || List.empty())
    for (MCPhysReg P : Order)
      if (!is_contained(List, P))
        List.push_back(P);
  if (List.size() > static_cast<size_t>(ra::MaxRegs))
    List.resize(ra::MaxRegs);
  return NumHints;
}

void MLBridgeRegAlloc::computeCandidates(const LiveInterval &LI) {
  Cands.clear();
  Matrix->invalidateVirtRegs();
  SmallVector<MCPhysReg, 32> List;
  const size_t NumHints = candidateList(LI, List);

  const bool Unspillable = !LI.isSpillable();
  for (size_t I = 0; I < List.size(); ++I) {
    Candidate C;
    C.Reg = List[I];
    C.Hint = I < NumHints;
    const MCRegister CSR = RCI.getLastCalleeSavedAlias(C.Reg);
    C.CalleeSavedUnused = CSR && !Matrix->isPhysRegUsed(CSR);
    switch (Matrix->checkInterference(LI, C.Reg)) {
    case LiveRegMatrix::IK_Free:
      C.Free = C.Legal = true;
      break;
    case LiveRegMatrix::IK_VirtReg: {
      bool Evictable = true;
      for (MCRegUnit Unit : TRI->regunits(C.Reg)) {
        LiveIntervalUnion::Query &Q = Matrix->query(LI, Unit);
        for (const LiveInterval *Intf : Q.interferingVRegs()) {
          if (is_contained(C.Intf, Intf))
            continue;
          C.Intf.push_back(Intf);
          C.MaxIntfWeight = std::max(C.MaxIntfWeight, Intf->weight());
          const RangeInfo *II = Info.count(Intf->reg()) ? &Info[Intf->reg()] : nullptr;
          const bool Capped = II && II->Evictions >= EvictionCap;
          if (!Intf->isSpillable() ||
              (!Unspillable && (Capped || !(Intf->weight() < LI.weight()))))
            Evictable = false;
        }
      }
      C.NumIntf = C.Intf.size();
      C.Legal = Evictable;
      break;
    }
    default: // a fixed register or a call's clobber is in the way
      break;
    }
    Cands.push_back(std::move(C));
  }
}

void MLBridgeRegAlloc::prepareAction() {
  const LiveInterval &LI = LIS->getInterval(Current);
  computeCandidates(LI);
  ActionMask[ra::ActAssign] =
      std::any_of(Cands.begin(), Cands.end(), [](const Candidate &C) { return C.Legal; });
  ActionMask[ra::ActSplit] = splitLegal(Current);
  ActionMask[ra::ActSpill] = LI.isSpillable();
}

// ---- actions ------------------------------------------------------------------------

bool MLBridgeRegAlloc::applyAction(int64_t A) {
  if (A == ra::ActAssign)
    return true;
  if (A == ra::ActSplit)
    split(Current);
  else if (A == ra::ActSpill)
    spill(Current);
  else { // nothing legal: out of registers (LLVM's allocators do the same)
    ++St.OutOfRegisters;
    const TargetRegisterClass *RC = MRI->getRegClass(Current);
    ArrayRef<MCPhysReg> Order = RCI.getOrder(RC);
    mlp::diagnose(MF->getFunction().getContext(), Prefix, DS_Error,
                  "ran out of registers during register allocation in '" +
                      MF->getName() + "'");
    if (!Order.empty())
      VRM->assignVirt2Phys(Current, Order.front());
  }
  return false;
}

void MLBridgeRegAlloc::applyRegister(size_t Index) { assign(Current, Cands[Index]); }

void MLBridgeRegAlloc::assign(Register R, const Candidate &C) {
  for (const LiveInterval *Intf : C.Intf) {
    const MCRegister P = VRM->getPhys(Intf->reg());
    Matrix->unassign(*Intf);
    assignmentChanged(Intf->reg(), P);
    ++info(Intf->reg()).Evictions;
    ++St.Evictions;
    enqueue(Intf->reg());
  }
  Matrix->assign(LIS->getInterval(R), C.Reg);
  assignmentChanged(R, C.Reg);
  ++St.Assigned;
}

void MLBridgeRegAlloc::spill(Register R) {
  ++St.Spills;
  SmallVector<Register, 4> NewVRegs;
  LiveRangeEdit LRE(&LIS->getInterval(R), NewVRegs, *MF, *LIS, VRM, this,
                    &DeadRemats);
  const Register Original = VRM->getOriginal(R);
  SpillerInstance->spill(LRE);
  // The spiller rewrites R and its siblings (the pieces of one original);
  // the ranges it shrinks or erases are reported to the delegate below.
  SmallVector<Register, 8> Siblings;
  for (const auto &KV : StaticCache)
    if (VRM->getOriginal(KV.first) == Original)
      Siblings.push_back(KV.first);
  for (const auto &KV : DynamicCache)
    if (VRM->getOriginal(KV.first) == Original)
      Siblings.push_back(KV.first);
  for (Register S : Siblings)
    intervalChanged(S);
  enqueueNew(NewVRegs);
}

// ---- hint recoloring (after allocation; greedy's tryHintsRecoloring) --------------

void MLBridgeRegAlloc::copyHints(Register R, SmallVectorImpl<CopyHint> &Out) const {
  Out.clear();
  for (const MachineInstr &MI : MRI->reg_nodbg_instructions(R)) {
    if (!TII->isFullCopyInstr(MI))
      continue;
    Register Other = MI.getOperand(0).getReg();
    if (Other == R) {
      Other = MI.getOperand(1).getReg();
      if (Other == R)
        continue;
    }
    const MCRegister OtherPhys = Other.isPhysical() ? Other.asMCReg() : VRM->getPhys(Other);
    Out.push_back({MBFI->getBlockFreq(MI.getParent()).getFrequency(), Other, OtherPhys});
  }
}

/// Moves the ranges copy-related to Start (transitively) into Start's
/// register where it is free, in their class's allocation order, and costs
/// no more copies (by block frequency) than where they are.
void MLBridgeRegAlloc::recolorFrom(Register Start, DenseSet<Register> &Visited) {
  const MCRegister Phys = VRM->getPhys(Start);
  SmallVector<Register, 8> Work{Start};
  Visited.insert(Start);
  SmallVector<CopyHint, 8> Hints;
  auto Broken = [&](MCRegister P) {
    uint64_t Cost = 0;
    for (const CopyHint &H : Hints)
      if (H.OtherPhys != P)
        Cost += H.Freq;
    return Cost;
  };
  while (!Work.empty()) {
    const Register R = Work.pop_back_val();
    if (!R.isVirtual() || !VRM->hasPhys(R) || !LIS->hasInterval(R))
      continue;
    LiveInterval &LI = LIS->getInterval(R);
    const MCRegister Cur = VRM->getPhys(R);
    if (Cur != Phys) {
      if (!is_contained(RCI.getOrder(MRI->getRegClass(R)), Phys))
        continue;
      Matrix->invalidateVirtRegs();
      if (Matrix->checkInterference(LI, Phys) != LiveRegMatrix::IK_Free)
        continue;
    }
    copyHints(R, Hints);
    if (Cur != Phys) {
      if (Broken(Cur) < Broken(Phys))
        continue;
      // As cheap or cheaper; equal may open the way for the next range.
      Matrix->unassign(LI);
      Matrix->assign(LI, Phys);
      ++St.Recolored;
    }
    for (const CopyHint &H : Hints)
      if (H.Other.isVirtual() && Visited.insert(H.Other).second)
        Work.push_back(H.Other);
  }
}

void MLBridgeRegAlloc::recolorHints() {
  if (!Config.Recolor)
    return;
  // The ranges with a copy to a register they are not in (greedy: those
  // assigned to another register than their hint), in register order.
  SmallVector<Register, 32> Broken;
  SmallVector<CopyHint, 8> Hints;
  for (unsigned I = 0, E = MRI->getNumVirtRegs(); I != E; ++I) {
    const Register R = Register::index2VirtReg(I);
    if (MRI->reg_nodbg_empty(R) || !VRM->hasPhys(R) || !LIS->hasInterval(R))
      continue;
    copyHints(R, Hints);
    const MCRegister P = VRM->getPhys(R);
    if (any_of(Hints, [&](const CopyHint &H) { return H.OtherPhys != P; }))
      Broken.push_back(R);
  }
  for (Register R : Broken) {
    DenseSet<Register> Visited;
    if (VRM->hasPhys(R))
      recolorFrom(R, Visited);
  }
}

// ---- LiveRangeEdit::Delegate (as LLVM's basic allocator) ---------------------------

bool MLBridgeRegAlloc::LRE_CanEraseVirtReg(Register R) {
  LiveInterval &LI = LIS->getInterval(R);
  intervalChanged(R);
  if (VRM->hasPhys(R)) {
    const MCRegister P = VRM->getPhys(R);
    Matrix->unassign(LI);
    assignmentChanged(R, P);
    return true;
  }
  // Queued: dropped when it reaches the window (prepareSelect).
  LI.clear();
  return false;
}

void MLBridgeRegAlloc::LRE_WillShrinkVirtReg(Register R) {
  intervalChanged(R);
  if (!VRM->hasPhys(R))
    return;
  // Assigned: take it back, it is decided again with its new extent.
  const MCRegister P = VRM->getPhys(R);
  Matrix->unassign(LIS->getInterval(R));
  assignmentChanged(R, P);
  enqueue(R);
}

void MLBridgeRegAlloc::LRE_DidCloneVirtReg(Register New, Register Old) {
  auto It = Info.find(Old);
  if (It != Info.end()) {
    RangeInfo Copy = It->second;
    Info[New] = Copy;
  }
}

} // namespace mlbridge::regalloc::detail
