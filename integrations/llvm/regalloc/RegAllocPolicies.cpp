//===- RegAllocPolicies.cpp - Who decides the allocator's rounds -----------===//
//
// The policies that drive the state machine of RegAllocPass.h (one round:
// select a range of the window, an action, a register): the built-in
// heuristic (greedy-like: a free register, else evict lighter ranges, else
// split, else spill), the seeded random legal policy (for fuzzing), the
// fallback past the budget, and the model's episode -- the three agents of
// RegAllocProtocol.h through any runner (pipes, gRPC, ONNX, compiled in),
// with the features they see, cached across rounds. Every answer is checked
// against the masks (RegAllocActions.cpp decides what is legal); an illegal
// one becomes the heuristic's choice.
//
//===----------------------------------------------------------------------===//

#include "RegAllocPass.h"

#include "mlbridge/rl.h"

#include "llvm/ADT/bit.h"
#include "llvm/CodeGen/SlotIndexes.h"
#include "llvm/IR/Function.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace mlbridge::regalloc::detail {

// ---- the heuristic ------------------------------------------------------------------

int64_t MLBridgeRegAlloc::heuristicAction() const {
  // A free register, else an eviction of lighter ranges, else split, else
  // spill.
  if (ActionMask[ra::ActAssign])
    for (const Candidate &C : Cands)
      if (C.Free)
        return ra::ActAssign;
  if (ActionMask[ra::ActAssign])
    return ra::ActAssign;
  if (ActionMask[ra::ActSplit])
    return ra::ActSplit;
  if (ActionMask[ra::ActSpill])
    return ra::ActSpill;
  return -1;
}

size_t MLBridgeRegAlloc::heuristicRegister() const {
  // The first free hint, else the first free register that costs no new
  // callee-saved save, else the first free one, else the cheapest eviction.
  size_t Best = Cands.size();
  for (size_t I = 0; I < Cands.size(); ++I)
    if (Cands[I].Free && Cands[I].Hint)
      return I;
  for (size_t I = 0; I < Cands.size(); ++I)
    if (Cands[I].Free && !Cands[I].CalleeSavedUnused)
      return I;
  for (size_t I = 0; I < Cands.size(); ++I)
    if (Cands[I].Free)
      return I;
  for (size_t I = 0; I < Cands.size(); ++I)
    if (Cands[I].Legal &&
        (Best == Cands.size() || Cands[I].MaxIntfWeight < Cands[Best].MaxIntfWeight))
      Best = I;
  return Best;
}

// ---- features -----------------------------------------------------------------------

bool MLBridgeRegAlloc::interfere(Register A, Register B) {
  if (A.id() > B.id())
    std::swap(A, B);
  const uint32_t VA = intervalVersion(A), VB = intervalVersion(B);
  auto [It, New] = OverlapCache.try_emplace({A.id(), B.id()});
  Overlap &O = It->second;
  if (New || O.VersionA != VA || O.VersionB != VB) {
    // LiveRange::overlaps needs a non-empty range on its left (it reads the
    // first segment unchecked); an empty interval -- a register with only
    // undef uses -- overlaps nothing.
    const LiveInterval &LA = LIS->getInterval(A), &LB = LIS->getInterval(B);
    O = {!LA.empty() && LA.overlaps(LB), VA, VB};
  }
  return O.Overlaps;
}

/// R was assigned or unassigned: the ranges overlapping it recheck their
/// candidates overlapping P; the ranges R is a hint of recompute theirs.
void MLBridgeRegAlloc::assignmentChanged(Register R, MCRegister P) {
  if (DynamicCache.empty())
    return;
  SmallVector<Register, 8> Stale;
  for (auto &[W, D] : DynamicCache) {
    if (W == R || is_contained(D.HintRegs, R))
      Stale.push_back(W);
    else if (!is_contained(D.Recheck, P) && interfere(W, R))
      D.Recheck.push_back(P);
  }
  for (Register W : Stale)
    DynamicCache.erase(W);
}

void MLBridgeRegAlloc::keepFeaturesOf(ArrayRef<Register> Window) {
  SmallVector<Register, 8> Gone;
  for (const auto &KV : DynamicCache)
    if (!is_contained(Window, KV.first))
      Gone.push_back(KV.first);
  for (Register R : Gone)
    DynamicCache.erase(R);
}

void MLBridgeRegAlloc::nodeFeatures(Register R, float *Out) {
  const LiveInterval &LI = LIS->getInterval(R);
  auto [SIt, SNew] = StaticCache.try_emplace(R);
  float *F = SIt->second.F;
  if (SNew) {
    const float Instrs =
        static_cast<float>(LI.getSize()) / SlotIndex::InstrDist + 1.0f;
    SmallPtrSet<const MachineInstr *, 16> Users;
    unsigned Depth = 0;
    for (const MachineInstr &MI : MRI->reg_nodbg_instructions(R))
      if (Users.insert(&MI).second)
        Depth = std::max(Depth, Loops->getLoopDepth(MI.getParent()));
    const TargetRegisterClass *RC = MRI->getRegClass(R);
    F[ra::NFLogWeight] = LI.isSpillable() ? std::log1p(LI.weight()) : 0.0f;
    F[ra::NFUnspillable] = LI.isSpillable() ? 0.0f : 1.0f;
    F[ra::NFLogSize] = std::log1p(Instrs);
    F[ra::NFUseDensity] = static_cast<float>(Users.size()) / Instrs;
    F[ra::NFLogUses] = std::log1p(static_cast<float>(Users.size()));
    F[ra::NFLoopDepth] = static_cast<float>(Depth);
    F[ra::NFRegClass] =
        static_cast<float>(RC->getID()) / static_cast<float>(TRI->getNumRegClasses());
    F[ra::NFOrderSize] = static_cast<float>(RCI.getOrder(RC).size()) / ra::MaxRegs;
    F[ra::NFSplittable] = canSplit(R) ? 1.0f : 0.0f;
  }
  auto [DIt, DNew] = DynamicCache.try_emplace(R);
  DynamicFeatures &D = DIt->second;
  if (DNew || !D.Recheck.empty()) {
    Matrix->invalidateVirtRegs();
    if (DNew) {
      D.NumHints = candidateList(LI, D.List);
      llvm_compat::virtualHints(*MRI, R, D.HintRegs);
    }
    for (size_t I = 0; I < D.List.size(); ++I) {
      if (!DNew && none_of(D.Recheck, [&](MCRegister P) { return TRI->regsOverlap(P, D.List[I]); }))
        continue;
      const uint64_t Bit = uint64_t(1) << I;
      if (Matrix->checkInterference(LI, D.List[I]) == LiveRegMatrix::IK_Free)
        D.Free |= Bit;
      else
        D.Free &= ~Bit;
    }
    D.Recheck.clear();
  }
  const auto It = Info.find(R);
  const unsigned Evicted = It == Info.end() ? 0 : It->second.Evictions;
  std::copy(F, F + ra::NumNodeFeatures, Out);
  Out[ra::NFHasHint] = D.NumHints ? 1.0f : 0.0f;
  Out[ra::NFFreeFraction] =
      D.List.empty() ? 0.0f
                     : static_cast<float>(llvm::popcount(D.Free)) / D.List.size();
  Out[ra::NFEvictions] = static_cast<float>(Evicted) / EvictionCap;
}

void MLBridgeRegAlloc::registerFeatures(const Candidate &C, float *Out) const {
  Out[ra::RFFree] = C.Free;
  Out[ra::RFLegal] = C.Legal;
  Out[ra::RFHint] = C.Hint;
  Out[ra::RFLogIntfWeight] =
      std::isfinite(C.MaxIntfWeight) ? std::log1p(C.MaxIntfWeight) : 30.0f;
  Out[ra::RFNumIntf] = static_cast<float>(C.NumIntf) / 8.0f;
  Out[ra::RFCalleeSaved] = C.CalleeSavedUnused;
}

// ---- policies -----------------------------------------------------------------------

/// The built-in policies and the fallback (past the budget): no model, no
/// features.
void MLBridgeRegAlloc::runBuiltIn(PolicyKind K, const Function &F) {
  std::mt19937_64 Rng(Config.Seed ^ std::hash<std::string>()(F.getName().str()));
  auto Pick = [&](size_t N) {
    return static_cast<size_t>(std::uniform_int_distribution<size_t>(0, N - 1)(Rng));
  };
  const unsigned Budget = budget();
  while (prepareSelect()) {
    if (St.Rounds >= Budget)
      return runFallback();
    const size_t S = K == PolicyKind::Random ? Pick(Window.size()) : heuristicSelect();
    St.record(ra::AgentSelect, S);
    applySelect(S);
    int64_t A = heuristicAction();
    if (K == PolicyKind::Random && A >= 0) {
      SmallVector<int64_t, 3> Legal;
      for (int64_t I = 0; I < ra::NumActions; ++I)
        if (ActionMask[I])
          Legal.push_back(I);
      A = Legal[Pick(Legal.size())];
    }
    St.record(ra::AgentAction, A);
    if (!applyAction(A))
      continue;
    size_t R = heuristicRegister();
    if (K == PolicyKind::Random) {
      SmallVector<size_t, 32> Legal;
      for (size_t I = 0; I < Cands.size(); ++I)
        if (Cands[I].Legal)
          Legal.push_back(I);
      R = Legal[Pick(Legal.size())];
    }
    St.record(ra::AgentRegister, R);
    applyRegister(R);
  }
}

/// Past the budget: the queue's order, a free register (or, for ranges
/// that cannot be spilled, the cheapest eviction), else spill. Spilling
/// only shrinks ranges, so this ends.
void MLBridgeRegAlloc::runFallback() {
  while (prepareSelect()) {
    ++St.FallbackRounds;
    applySelect(0);
    const auto Free = std::find_if(Cands.begin(), Cands.end(),
                                   [](const Candidate &C) { return C.Free; });
    if (Free != Cands.end())
      assign(Current, *Free);
    else if (ActionMask[ra::ActSpill])
      applyAction(ra::ActSpill);
    else if (ActionMask[ra::ActAssign])
      applyRegister(heuristicRegister());
    else
      applyAction(-1);
  }
}

// ---- the model's episode -------------------------------------------------------------

namespace {

enum ModelFeature : size_t {
#define MLB_FEATURE(E, Name, Type, ...) E,
#include "RegAllocProtocol.def"
  NumModelFeatures
};

/// The features of RegAllocProtocol.def.
std::vector<mlb::TensorSpec> protocolFeatureSpecs() {
  using namespace ra;
  return {
#define MLB_FEATURE(E, Name, Type, ...) mlb::TensorSpec::create<Type>(#Name, {__VA_ARGS__}),
#include "RegAllocProtocol.def"
  };
}

} // namespace

mlb::TensorSpec protocolAdviceSpec() {
#define MLB_ADVICE(Name, Type, ...) return mlb::TensorSpec::create<Type>(#Name, {__VA_ARGS__});
#include "RegAllocProtocol.def"
}

std::vector<mlb::TensorSpec> modelFeatureSpecs(const ra::MIR2VecObservation &Obs) {
  std::vector<mlb::TensorSpec> Specs = protocolFeatureSpecs();
  Obs.appendSpecs(Specs);
  return Specs;
}

std::string protocolDescription(const ra::MIR2VecObservation &Obs) {
  std::vector<mlb::TensorSpec> Optional;
  Obs.appendSpecs(Optional);
  std::vector<mlp::ProtocolList> Lists;
#define MLB_LIST(List, E, Name) mlp::addListItem(Lists, #List, #Name);
#include "RegAllocProtocol.def"
  return mlp::describeProtocol(protocolFeatureSpecs(), Optional, protocolAdviceSpec(), Lists);
}

/// One machine function as an rl::Environment: the three agents of
/// RegAllocProtocol.h in turn.
class RegAllocEnv : public mlb::rl::Environment {
public:
  RegAllocEnv(MLBridgeRegAlloc &RA, const mlp::FeatureBinding &B, unsigned Budget,
              ra::MIR2VecObservation &Obs)
      : RA(RA), Binding(B), Budget(Budget), Obs(Obs) {}

  mlb::Status reset() override {
    nextRound();
    return mlb::Status::ok();
  }

  mlb::Status observe(mlb::ModelRunner &R) override {
    const int64_t AgentId = Phase;
    Binding.write(R, FAgent, &AgentId);
    if (Phase == ra::AgentSelect || !WindowFilled) {
      WindowFilled = true;
      // The window's features stay in the runner's buffers for the round's
      // other agents (no runner clears its inputs).
      fillWindow();
      Binding.write(R, FNodeFeatures, NodeF.data());
      Binding.write(R, FAdjacency, Adj.data());
      Binding.write(R, FNodeMask, NodeMask.data());
    }
    // The register agent sees what the action agent saw (the runner kept
    // it); the select agent sees zeros, written only after other agents'.
    if (Phase == ra::AgentRegister && DecisionWritten)
      return writeEmbeddings(R);
    if (Phase == ra::AgentSelect && !DecisionWritten)
      return writeEmbeddings(R);
    DecisionWritten = Phase != ra::AgentSelect;
    std::fill(Selected.begin(), Selected.end(), 0.0f);
    std::fill(AMask.begin(), AMask.end(), 0.0f);
    std::fill(RegF.begin(), RegF.end(), 0.0f);
    std::fill(RMask.begin(), RMask.end(), 0.0f);
    if (Phase != ra::AgentSelect) {
      Selected[SelectedIndex] = 1.0f;
      for (int64_t A = 0; A < ra::NumActions; ++A)
        AMask[A] = RA.actionLegal(A);
      for (size_t I = 0; I < RA.candidates().size(); ++I) {
        RA.registerFeatures(RA.candidates()[I], &RegF[I * ra::NumRegFeatures]);
        RMask[I] = RA.candidates()[I].Legal;
      }
    }
    Binding.write(R, FSelected, Selected.data());
    Binding.write(R, FActionMask, AMask.data());
    Binding.write(R, FRegisterFeatures, RegF.data());
    Binding.write(R, FRegisterMask, RMask.data());
    return writeEmbeddings(R);
  }

  mlb::Status writeEmbeddings(mlb::ModelRunner &R) {
    if (Obs.enabled()) {
      Binding.write(R, NumModelFeatures, Obs.functionVector().data());
      Binding.write(R, NumModelFeatures + 1, NodeE.data());
    }
    return mlb::Status::ok();
  }

  /// The legal choice the agent's output stands for: its value when it is
  /// one integer, else the argmax over the legal entries. Illegal or
  /// unreadable answers become the heuristic's choice (counted).
  mlb::Expected<int64_t> decide(const mlb::TensorValue &Out) {
    ++RA.ModelAnswers;
    const size_t N = choices();
    auto Legal = [&](int64_t I) { return I >= 0 && static_cast<size_t>(I) < N && legal(I); };
    if (Out.elementCount() == 1 && Out.type() != mlb::DType::Float &&
        Out.type() != mlb::DType::Double) {
      mlb::Expected<int64_t> V = mlb::rl::decodeAction(Out, mlb::rl::ActionRule::Value);
      if (V && Legal(*V))
        return *V;
    } else if (Out.type() == mlb::DType::Float && Out.elementCount() >= N) {
      // The library's rule (a NaN score is a broken answer); scores past
      // the N choices (a fixed-size output) are masked off.
      std::vector<bool> Mask(Out.elementCount(), false);
      for (size_t I = 0; I < N; ++I)
        Mask[I] = legal(I);
      if (mlb::Expected<int64_t> Best = mlb::decodeAction(Out, mlb::ActionRule::Argmax, Mask))
        return *Best;
    }
    ++RA.St.Illegal;
    ++RA.IllegalAnswers;
    return heuristic();
  }

  /// A decision the model failed (reported by the driver, the runner's one
  /// warning): the heuristic takes it, and the episode ends; the pass
  /// lets the heuristic decide the rest of the compile, asking the model
  /// nothing more (a stopped peer would cost a timeout per decision).
  std::optional<int64_t> fallbackAction() override {
    ++RA.St.ModelFailures;
    RA.ModelFailed = true;
    setDone();
    return heuristic();
  }

  mlb::Status step(const mlb::rl::Action &A) override {
    RA.St.record(Phase, A.Index);
    switch (Phase) {
    case ra::AgentSelect:
      SelectedIndex = static_cast<size_t>(A.Index);
      RA.applySelect(SelectedIndex);
      if (RA.heuristicAction() < 0) { // nothing legal: out of registers
        RA.applyAction(-1);
        return nextRound();
      }
      Phase = ra::AgentAction;
      setNextAgent(ra::AgentNames[Phase]);
      return mlb::Status::ok();
    case ra::AgentAction:
      if (RA.applyAction(A.Index)) {
        Phase = ra::AgentRegister;
        setNextAgent(ra::AgentNames[Phase]);
        return mlb::Status::ok();
      }
      return nextRound();
    default:
      RA.applyRegister(static_cast<size_t>(A.Index));
      return nextRound();
    }
  }

  bool overBudget() const { return OverBudget; }

private:
  size_t choices() const {
    if (Phase == ra::AgentSelect)
      return RA.window().size();
    if (Phase == ra::AgentAction)
      return ra::NumActions;
    return RA.candidates().size();
  }
  bool legal(size_t I) const {
    if (Phase == ra::AgentSelect)
      return I < RA.window().size();
    if (Phase == ra::AgentAction)
      return RA.actionLegal(static_cast<int64_t>(I));
    return I < RA.candidates().size() && RA.candidates()[I].Legal;
  }
  int64_t heuristic() const {
    if (Phase == ra::AgentSelect)
      return static_cast<int64_t>(RA.heuristicSelect());
    if (Phase == ra::AgentAction)
      return RA.heuristicAction();
    return static_cast<int64_t>(RA.heuristicRegister());
  }

  mlb::Status nextRound() {
    Phase = ra::AgentSelect;
    WindowFilled = false;
    if (RA.St.Rounds >= Budget) {
      OverBudget = true;
      setDone();
      return mlb::Status::ok();
    }
    if (!RA.prepareSelect())
      setDone();
    else
      setNextAgent(ra::AgentNames[Phase]);
    return mlb::Status::ok();
  }

  /// Bit J of a byte as float J (0 or 1), for expanding the adjacency rows.
  using ByteFloats = std::array<std::array<float, 8>, 256>;
  static const ByteFloats &byteAsFloats() {
    static const ByteFloats Table = [] {
      ByteFloats T{};
      for (unsigned B = 0; B < 256; ++B)
        for (unsigned J = 0; J < 8; ++J)
          T[B][J] = (B >> J) & 1 ? 1.0f : 0.0f;
      return T;
    }();
    return Table;
  }

  void fillWindow() {
    const ByteFloats &ByteAsFloats = byteAsFloats();
    const std::vector<Register> &W = RA.window();
    RA.keepFeaturesOf(W);
    std::fill(NodeF.begin(), NodeF.end(), 0.0f);
    std::fill(NodeMask.begin(), NodeMask.end(), 0.0f);
    // A pair of ranges both in the last window keeps its entry while neither
    // interval changed (a round mostly removes one range and adds one).
    Prev.assign(W.size(), -1);
    PrevIndex.clear();
    for (size_t I = 0; I < PrevW.size(); ++I)
      if (RA.intervalVersion(PrevW[I]) == PrevVersions[I])
        PrevIndex[PrevW[I].id()] = static_cast<int>(I);
    for (size_t I = 0; I < W.size(); ++I) {
      auto It = PrevIndex.find(W[I].id());
      if (It != PrevIndex.end())
        Prev[I] = It->second;
    }
    NewOf.assign(PrevW.size(), -1);
    for (size_t I = 0; I < W.size(); ++I)
      if (Prev[I] >= 0)
        NewOf[Prev[I]] = static_cast<int>(I);
    std::swap(Rows, PrevRows);
    Rows.fill(0);
    Obs.nodeVectors(*RA.MF, W, NodeE);
    for (size_t I = 0; I < W.size(); ++I) {
      RA.nodeFeatures(W[I], &NodeF[I * ra::NumNodeFeatures]);
      NodeMask[I] = 1.0f;
      if (Prev[I] < 0) { // new in the window: its overlaps are computed
        for (size_t J = 0; J < W.size(); ++J)
          if (J != I && (Prev[J] >= 0 || J > I) && RA.interfere(W[I], W[J])) {
            Rows[I] |= uint64_t(1) << J;
            Rows[J] |= uint64_t(1) << I;
          }
        continue;
      }
      // Was in the last window: its overlaps with the others that were.
      for (uint64_t B = PrevRows[Prev[I]]; B; B &= B - 1) {
        const int J = NewOf[llvm::countr_zero(B)];
        if (J >= 0)
          Rows[I] |= uint64_t(1) << J;
      }
    }
    // As floats for the runner: only the rows that changed.
    for (size_t I = 0; I < Rows.size(); ++I)
      if (Rows[I] != AdjRowsWritten[I]) {
        for (size_t Byte = 0; Byte < 8; ++Byte)
          std::memcpy(&Adj[I * ra::MaxNodes + 8 * Byte],
                      ByteAsFloats[(Rows[I] >> (8 * Byte)) & 0xff].data(), 8 * sizeof(float));
        AdjRowsWritten[I] = Rows[I];
      }
    PrevW = W;
    PrevVersions.resize(W.size());
    for (size_t I = 0; I < W.size(); ++I)
      PrevVersions[I] = RA.intervalVersion(W[I]);
  }

  MLBridgeRegAlloc &RA;
  const mlp::FeatureBinding &Binding;
  unsigned Budget;
  int64_t Phase = ra::AgentSelect;
  size_t SelectedIndex = 0;
  bool OverBudget = false;
  ra::MIR2VecObservation &Obs;
  std::vector<float> NodeF = std::vector<float>(ra::MaxNodes * ra::NumNodeFeatures);
  std::vector<float> Adj = std::vector<float>(ra::MaxNodes * ra::MaxNodes);
  std::vector<float> NodeMask = std::vector<float>(ra::MaxNodes);
  std::vector<float> NodeE;
  bool WindowFilled = false; // this round's window is in NodeF, Adj, NodeMask
  /// The runner holds an action decision's selected, action_mask and
  /// register features (else the select agent's zeros).
  bool DecisionWritten = true;
  // The window's adjacency as bit rows (bit J of row I: ranges I and J
  // overlap), this round's and the last one's, and the rows Adj holds.
  std::array<uint64_t, ra::MaxNodes> Rows{}, PrevRows{}, AdjRowsWritten{};
  std::vector<Register> PrevW;          // the last window
  std::vector<uint32_t> PrevVersions;   // its ranges' interval versions
  SmallVector<int, ra::MaxNodes> Prev;  // this window's index -> the last's
  SmallVector<int, ra::MaxNodes> NewOf; // the last window's index -> this one's
  DenseMap<unsigned, int> PrevIndex;
  // The per-decision features, kept to avoid allocating per request.
  std::vector<float> Selected = std::vector<float>(ra::MaxNodes);
  std::vector<float> AMask = std::vector<float>(ra::NumActions);
  std::vector<float> RegF = std::vector<float>(ra::MaxRegs * ra::NumRegFeatures);
  std::vector<float> RMask = std::vector<float>(ra::MaxRegs);
};

std::string MLBridgeRegAlloc::runModel(const mlp::FeatureBinding &Binding) {
  const unsigned Budget = budget();
  ra::MIR2VecObservation &Obs = *Observation;
  std::string Error;
  Obs.beginFunction(*MF);
  RegAllocEnv Env(*this, Binding, Budget, Obs);
  mlb::rl::Driver Driver(Env);
  for (const char *Name : ra::AgentNames)
    (void)Driver.addAgent(Name, mlb::rl::Agent(*Runner, [&Env](const mlb::TensorValue &O) {
                            return Env.decide(O);
                          }));
  mlb::rl::EpisodeOptions EO;
  EO.MaxSteps = static_cast<size_t>(Budget) * 3 + 3;
  EO.Context = MF->getName().str();
  mlb::Expected<mlb::rl::EpisodeResult> R = Driver.runEpisode(EO);
  if (!R) {
    // Through the runner's sink too: one warning per runner and compile.
    Error = R.status().toString();
    Runner->report(mlb::Severity::Warning, "in '" + MF->getName().str() + "': " + Error);
    ModelFailed = true;
  }
  // A round the model left unfinished leaves its range selected: put it back.
  if (Current && !VRM->hasPhys(Current) && LIS->hasInterval(Current) &&
      !Queued.count(Current))
    enqueue(Current);
  // The rest, if the model failed; past the budget, the fallback.
  runBuiltIn(PolicyKind::Heuristic, MF->getFunction());
  return Error;
}

} // namespace mlbridge::regalloc::detail
