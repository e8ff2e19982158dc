//===- RegAllocPlugin.cpp - -regalloc=mlbridge, decided by a model ---------===//
//
// A register allocator for stock llc-19 / clang-19, loaded as a shared
// object (llc -load, clang -fplugin) and selected with -regalloc=mlbridge
// (docs/register-allocation.md). Every decision -- which live range next,
// assign / split / spill, which register -- is taken by a policy through
// the protocol of RegAllocProtocol.h: a model through any runner (pipes,
// gRPC, ONNX, compiled in), the built-in heuristic, or a seeded random legal
// policy (for fuzzing). Legality is decided here, never by the policy.
//
// The mechanics are LLVM's public ones: LiveIntervals, LiveRegMatrix for
// interference, VirtRegMap, RegisterClassInfo's allocation order and the
// target's hints, VirtRegAuxInfo spill weights, the inline spiller through
// LiveRangeEdit, and the stock VirtRegRewriter after us. Splitting is our
// own (SplitKit is not public): a range is split per basic block -- each
// block using it gets a local copy of the value (copy in before the first
// use, copy out at the block's last split point when live out), the
// original keeps only the parts between blocks; or around a loop, or in two
// inside one block.
//
// Also registers the score pass (RegAllocScore.cpp).
//
//===----------------------------------------------------------------------===//

#include "LLVMCompat.h"
#include "PluginEntry.h"
#include "PluginSupport.h"
#include "RegAllocEmbeddings.h"
#include "RegAllocProtocol.h"
#include "RegAllocScore.h"

#include "mlbridge/model_runner.h"
#include "mlbridge/rl.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/CodeGen/CalcSpillWeights.h"
#include "llvm/CodeGen/LiveDebugVariables.h"
#include "llvm/CodeGen/LiveIntervals.h"
#include "llvm/CodeGen/LiveRangeEdit.h"
#include "llvm/CodeGen/LiveRegMatrix.h"
#include "llvm/CodeGen/LiveStacks.h"
#include "llvm/CodeGen/MachineBlockFrequencyInfo.h"
#include "llvm/CodeGen/MachineDominators.h"
#include "llvm/CodeGen/MachineFunctionPass.h"
#include "llvm/CodeGen/MachineInstrBuilder.h"
#include "llvm/CodeGen/MachineLoopInfo.h"
#include "llvm/CodeGen/MachineRegisterInfo.h"
#include "llvm/CodeGen/RegAllocRegistry.h"
#include "llvm/CodeGen/RegisterClassInfo.h"
#include "llvm/CodeGen/SlotIndexes.h"
#include "llvm/CodeGen/Spiller.h"
#include "llvm/CodeGen/TargetInstrInfo.h"
#include "llvm/CodeGen/TargetRegisterInfo.h"
#include "llvm/CodeGen/TargetSubtargetInfo.h"
#include "llvm/CodeGen/VirtRegMap.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#if MLBRIDGE_REGALLOC_EMBEDDED
#include "RegAllocPolicy.h" // generated from models/plugins/regalloc_policy.onnx
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

// The registry of -regalloc lives in libLLVM; instantiating its static
// member here would make a private copy nobody reads (the plugin hides its
// symbols), so refer to LLVM's.
extern template llvm::MachinePassRegistry<llvm::RegisterRegAlloc::FunctionPassCtor>
    llvm::RegisterRegAllocBase<llvm::RegisterRegAlloc>::Registry;

using namespace llvm;
namespace mlb = mlbridge;
namespace mlp = mlbridge::plugins;
namespace ra = mlbridge::regalloc;
namespace llvm_compat = mlbridge::llvm_compat;

namespace {

constexpr const char *Prefix = "mlbridge-regalloc";
/// A spillable range is evicted at most this often (termination).
constexpr unsigned EvictionCap = 8;

// ---- options -------------------------------------------------------------------

cl::OptionCategory Category("MLBridge register allocator (-regalloc=mlbridge)");

/// -mlbridge-ra-{runner,model,channel,server,format,timeout-ms}
/// (integrations/common/RunnerSettings.h).
const mlp::RunnerOptions RunnerOpts("mlbridge-ra", "MLBRIDGE_RA_", Category);
cl::opt<std::string> PolicyOpt(
    "mlbridge-ra-policy", cl::cat(Category), cl::init("model"),
    cl::desc("Who decides: model (the runner settings; with none, the model "
             "built into the plugin, else the heuristic) | heuristic | random "
             "(seeded legal choices, for fuzzing). Env: MLBRIDGE_RA_POLICY"));
cl::opt<unsigned> SeedOpt(
    "mlbridge-ra-seed", cl::cat(Category), cl::init(1),
    cl::desc("Seed of the random policy (per function: seed + function "
             "name). Env: MLBRIDGE_RA_SEED"));
cl::opt<unsigned> BudgetOpt(
    "mlbridge-ra-budget", cl::cat(Category), cl::init(0),
    cl::desc("Allocation rounds per function before the rest is allocated "
             "by the fallback (assign a free register or spill); 0: 10 x "
             "the function's live ranges + 1000. Env: MLBRIDGE_RA_BUDGET"));
cl::opt<std::string> LogOpt(
    "mlbridge-ra-log", cl::cat(Category),
    cl::desc("Append one JSON line per function (decisions, spills, splits, "
             "evictions, fallbacks) to this file. Env: MLBRIDGE_RA_LOG"));
cl::opt<std::string> DescribeOpt(
    "mlbridge-ra-describe", cl::cat(Category),
    cl::desc("Write the protocol (features, advice, lists) as JSON to this "
             "file on the first function; allocation goes on as without. Env: "
             "MLBRIDGE_RA_DESCRIBE"));
cl::opt<bool> VerboseOpt(
    "mlbridge-ra-verbose", cl::cat(Category), cl::init(false),
    cl::desc("Report the runner as a remark. Env: MLBRIDGE_RA_VERBOSE"));
cl::opt<bool> EnableOpt(
    "mlbridge-ra-enable", cl::cat(Category), cl::init(false),
    cl::desc("Loaded as a pass plugin (clang -fpass-plugin, lld "
             "--load-pass-plugin), make this the allocator of optimized code "
             "generation unless -regalloc is given. Env: MLBRIDGE_RA_ENABLE "
             "(those hosts parse -mllvm before loading the plugin)"));

/// The model built in: models/plugins/regalloc_policy.onnx compiled in when
/// the build has it (MLBRIDGE_REGALLOC_EMBEDDED), else none (the heuristic).
#if MLBRIDGE_REGALLOC_EMBEDDED
mlb::integrations::EmbeddedModelRef Embedded = MLBRIDGE_EMBEDDED_MODEL(RegAllocPolicy);
#else
mlb::integrations::EmbeddedModelRef Embedded{};
#endif

enum class PolicyKind { Model, Heuristic, Random };

// ---- the allocator ---------------------------------------------------------------

/// One candidate register of the range being decided.
struct Candidate {
  MCRegister Reg;
  bool Free = false;
  bool Legal = false;
  bool Hint = false;
  float MaxIntfWeight = 0;
  unsigned NumIntf = 0;
  bool CalleeSavedUnused = false;
  SmallVector<const LiveInterval *, 4> Intf; // evicted when chosen
};

/// Per virtual register state of ours.
struct RangeInfo {
  unsigned Evictions = 0;
  bool NoSplit = false; // a product of a per-block split: no more of those
  /// The loop a piece was split around (it may be split around loops inside
  /// it only; its copy out at the exits makes it live just outside).
  const MachineLoop *Within = nullptr;
};

class MLBridgeRegAlloc : public MachineFunctionPass,
                         private LiveRangeEdit::Delegate {
public:
  static char ID;
  MLBridgeRegAlloc() : MachineFunctionPass(ID) {}
  StringRef getPassName() const override {
    return "MLBridge Register Allocator";
  }
  void getAnalysisUsage(AnalysisUsage &AU) const override;
  bool runOnMachineFunction(MachineFunction &MF) override;
  bool doFinalization(Module &M) override;
  MachineFunctionProperties getClearedProperties() const override {
    return MachineFunctionProperties().set(
        MachineFunctionProperties::Property::IsSSA);
  }

  // ---- the state machine every policy drives (one round: select, action,
  // register) ----
  /// Drops deleted ranges and fills Window; false when nothing is left.
  bool prepareSelect();
  void applySelect(size_t Index);
  /// Computes the candidates and the action mask of Current.
  void prepareAction();
  /// Returns true when the round needs a register decision.
  bool applyAction(int64_t A);
  void applyRegister(size_t Index);

  // What the policies see.
  const std::vector<Register> &window() const { return Window; }
  const std::vector<Candidate> &candidates() const { return Cands; }
  bool actionLegal(int64_t A) const { return ActionMask[A]; }
  Register current() const { return Current; }

  // The built-in heuristic.
  size_t heuristicSelect() const { return 0; } // the window is by priority
  int64_t heuristicAction() const;
  size_t heuristicRegister() const;

  // Features (RegAllocProtocol.h).
  void nodeFeatures(Register R, float *Out);
  void registerFeatures(const Candidate &C, float *Out) const;
  bool interfere(Register A, Register B);
  /// Keeps the cached features of the window's ranges only.
  void keepFeaturesOf(ArrayRef<Register> Window);
  /// Bumped whenever R's interval changes (a pair's overlap stays valid
  /// while both versions do).
  uint32_t intervalVersion(Register R) const {
    const unsigned I = R.virtRegIndex();
    return I < Versions.size() ? Versions[I] : 0;
  }

  struct Stats {
    uint64_t Rounds = 0, Decisions = 0, Assigned = 0, Evictions = 0,
             Splits = 0, LoopSplits = 0, LocalSplits = 0, Spills = 0, Illegal = 0, FallbackRounds = 0,
             ModelFailures = 0, OutOfRegisters = 0;
    uint64_t TraceHash = 1469598103934665603ull; // FNV-1a of the decisions
    void record(int64_t Agent, int64_t V) {
      ++Decisions;
      for (int64_t X : {Agent, V}) {
        TraceHash ^= static_cast<uint64_t>(X);
        TraceHash *= 1099511628211ull;
      }
    }
  } St;

private:
  void enqueue(Register R);
  double priority(const LiveInterval &LI) const;
  size_t candidateList(const LiveInterval &LI, SmallVectorImpl<MCPhysReg> &List) const;
  void computeCandidates(const LiveInterval &LI);
  bool canSplit(Register R) const;
  bool canBlockSplit(const LiveInterval &LI) const;
  struct CopyOut {
    bool Possible; // else MBB is not split
    bool Needed;   // else the rest keeps the value through MBB
    MachineBasicBlock::iterator At;
  };
  CopyOut copyOut(MachineBasicBlock &MBB, const LiveInterval &LI) const;
  bool splittableBlock(MachineBasicBlock &MBB, const LiveInterval &LI,
                       ArrayRef<const MachineInstr *> Instrs) const;
  MachineInstr *localSplitPoint(const LiveInterval &LI) const;
  void splitLocal(Register R, MachineInstr &At);
  bool loopSplittable(const LiveInterval &LI, MachineLoop &L) const;
  bool loopSplitPays(const LiveInterval &LI, MachineLoop &L) const;
  void splitLoops(const LiveInterval &LI, SmallVectorImpl<MachineLoop *> &Out) const;
  void split(Register R);
  void splitAroundLoop(Register R, MachineLoop &L);
  void splitPerBlock(Register R);
  void finishSplit(Register R, std::vector<Register> &Pieces, bool Final);
  void spill(Register R);
  void assign(Register R, const Candidate &C);
  void enqueueNew(ArrayRef<Register> Regs);
  void runBuiltIn(PolicyKind K, const Function &F);
  void runFallback();
  void finish();
  RangeInfo &info(Register R) { return Info[R]; }
  unsigned budget() const {
    const unsigned B = mlp::unsignedSetting(BudgetOpt, "MLBRIDGE_RA_BUDGET");
    return B ? B : 10 * MRI->getNumVirtRegs() + 1000;
  }

  // LiveRangeEdit::Delegate
  bool LRE_CanEraseVirtReg(Register R) override;
  void LRE_WillShrinkVirtReg(Register R) override;
  void LRE_DidCloneVirtReg(Register New, Register Old) override;

  MachineFunction *MF = nullptr;
  const TargetRegisterInfo *TRI = nullptr;
  const TargetInstrInfo *TII = nullptr;
  MachineRegisterInfo *MRI = nullptr;
  LiveIntervals *LIS = nullptr;
  LiveRegMatrix *Matrix = nullptr;
  VirtRegMap *VRM = nullptr;
  MachineLoopInfo *Loops = nullptr;
  const MachineBlockFrequencyInfo *MBFI = nullptr;
  LiveDebugVariables *LDV = nullptr;
  RegisterClassInfo RCI;
  std::unique_ptr<VirtRegAuxInfo> VRAI;
  std::unique_ptr<Spiller> SpillerInstance;
  SmallPtrSet<MachineInstr *, 32> DeadRemats;
  DenseMap<Register, RangeInfo> Info;

  // The window's features, cached across rounds (most rounds assign one
  // range and change nothing else): what depends only on a range's
  // interval, dropped when intervals change (a split, a spill); what
  // depends on the assignment (free candidates, hints), dropped for the
  // ranges an assignment can affect.
  struct StaticFeatures {
    float F[ra::NumNodeFeatures];
  };
  struct DynamicFeatures {
    SmallVector<MCPhysReg, 32> List; // candidateList
    uint64_t Free = 0;               // bit I: List[I] is free
    size_t NumHints = 0;
    SmallVector<Register, 2> HintRegs;    // virtual registers hinting at it
    SmallVector<MCRegister, 2> Recheck;   // assigned or freed since
  };
  DenseMap<Register, StaticFeatures> StaticCache;
  DenseMap<Register, DynamicFeatures> DynamicCache;
  struct Overlap {
    bool Overlaps;
    uint32_t VersionA, VersionB; // of the lower and higher register
  };
  DenseMap<std::pair<unsigned, unsigned>, Overlap> OverlapCache;
  /// intervalVersion, by virtual register index.
  std::vector<uint32_t> Versions;
  void intervalsChanged() {
    StaticCache.clear();
    DynamicCache.clear();
    OverlapCache.clear();
    Versions.clear();
  }
  /// R's interval changed: its features and overlaps are computed again.
  /// Only the ranges the allocator touches change (a spill: the spilled
  /// range's siblings, which are cached when they were ever in the window;
  /// the others through the LiveRangeEdit delegate), never another's.
  void intervalChanged(Register R) {
    StaticCache.erase(R);
    DynamicCache.erase(R);
    const unsigned I = R.virtRegIndex();
    if (I >= Versions.size())
      Versions.resize(I + 1, 0);
    ++Versions[I];
  }
  /// R was assigned to, or taken from, physical register P.
  void assignmentChanged(Register R, MCRegister P);
  bool splitLegal(Register R) {
    auto It = StaticCache.find(R);
    return It != StaticCache.end() ? It->second.F[ra::NFSplittable] > 0.5f : canSplit(R);
  }

  // Priority queue: highest priority first, then lowest register number.
  std::set<std::pair<double, unsigned>, std::greater<>> Queue;
  DenseMap<Register, double> Queued; // register -> its key in Queue
  std::vector<Register> Window;
  Register Current;
  std::vector<Candidate> Cands;
  bool ActionMask[ra::NumActions] = {false, false, false};

  // The model runner, kept across functions (one pipe connection per
  // compiler process), and the optional MIR2Vec inputs: this pass's, as
  // everything it keeps (ThinLTO's backend threads each build their own
  // code generator, so their own pass).
  friend class RegAllocEnv;
  std::unique_ptr<ra::MIR2VecObservation> Observation;
  std::unique_ptr<mlb::ModelRunner> Runner;
  mlp::RunnerKind RunnerKindUsed = mlp::RunnerKind::Default;
  bool RunnerTried = false;
  std::string RunnerError;
  /// The model failed a decision: the heuristic decides from then on.
  bool ModelFailed = false;
  /// The model's answers in this compile, and how many were not legal.
  uint64_t ModelAnswers = 0, IllegalAnswers = 0;
};

char MLBridgeRegAlloc::ID = 0;

void MLBridgeRegAlloc::getAnalysisUsage(AnalysisUsage &AU) const {
  // What LLVM's own allocators use; the inline spiller takes LiveStacks,
  // the dominator tree and block frequencies from this pass.
  AU.setPreservesCFG();
  AU.addRequired<AAResultsWrapperPass>();
  AU.addPreserved<AAResultsWrapperPass>();
  AU.addRequired<LiveIntervalsWrapperPass>();
  AU.addPreserved<LiveIntervalsWrapperPass>();
  AU.addPreserved<SlotIndexesWrapperPass>();
  AU.addRequired<llvm_compat::LiveDebugVariablesPass>();
  AU.addPreserved<llvm_compat::LiveDebugVariablesPass>();
  AU.addRequired<llvm_compat::LiveStacksPass>();
  AU.addPreserved<llvm_compat::LiveStacksPass>();
  AU.addRequired<MachineBlockFrequencyInfoWrapperPass>();
  AU.addPreserved<MachineBlockFrequencyInfoWrapperPass>();
  AU.addRequired<MachineDominatorTreeWrapperPass>();
  AU.addPreserved<MachineDominatorTreeWrapperPass>();
  AU.addRequired<MachineLoopInfoWrapperPass>();
  AU.addPreserved<MachineLoopInfoWrapperPass>();
  AU.addRequired<llvm_compat::VirtRegMapPass>();
  AU.addPreserved<llvm_compat::VirtRegMapPass>();
  AU.addRequired<llvm_compat::LiveRegMatrixPass>();
  AU.addPreserved<llvm_compat::LiveRegMatrixPass>();
  MachineFunctionPass::getAnalysisUsage(AU);
}

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
  std::mt19937_64 Rng(mlp::unsignedSetting(SeedOpt, "MLBRIDGE_RA_SEED") ^
                      std::hash<std::string>()(F.getName().str()));
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

mlb::TensorSpec protocolAdviceSpec() {
#define MLB_ADVICE(Name, Type, ...) return mlb::TensorSpec::create<Type>(#Name, {__VA_ARGS__});
#include "RegAllocProtocol.def"
}

/// The protocol's features, then the optional MIR2Vec ones
/// (RegAllocEmbeddings.h: function_embedding, node_embeddings).
std::vector<mlb::TensorSpec> modelFeatureSpecs(const ra::MIR2VecObservation &Obs) {
  std::vector<mlb::TensorSpec> Specs = protocolFeatureSpecs();
  Obs.appendSpecs(Specs);
  return Specs;
}

/// -mlbridge-ra-describe: the protocol, the MIR2Vec inputs (when on) as
/// optional features.
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
      const float *S = Out.dataAs<float>();
      int64_t Best = -1;
      for (size_t I = 0; I < N; ++I)
        if (legal(I) && !std::isnan(S[I]) && (Best < 0 || S[I] > S[Best]))
          Best = static_cast<int64_t>(I);
      if (Best >= 0)
        return Best;
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

// ---- the pass -----------------------------------------------------------------------

void MLBridgeRegAlloc::finish() {
  SpillerInstance->postOptimization();
  for (MachineInstr *Dead : DeadRemats) {
    LIS->RemoveMachineInstrFromMaps(*Dead);
    Dead->eraseFromParent();
  }
  DeadRemats.clear();
}

bool MLBridgeRegAlloc::runOnMachineFunction(MachineFunction &Fn) {
  MF = &Fn;
  TRI = MF->getSubtarget().getRegisterInfo();
  TII = MF->getSubtarget().getInstrInfo();
  MRI = &MF->getRegInfo();
  LIS = &getAnalysis<LiveIntervalsWrapperPass>().getLIS();
  Matrix = &llvm_compat::liveRegMatrix(*this);
  VRM = &llvm_compat::virtRegMap(*this);
  Loops = &getAnalysis<MachineLoopInfoWrapperPass>().getLI();
  LDV = &llvm_compat::liveDebugVariables(*this);
  MRI->freezeReservedRegs();
  RCI.runOnMachineFunction(*MF);
  MBFI = &getAnalysis<MachineBlockFrequencyInfoWrapperPass>().getMBFI();
  VRAI = std::make_unique<VirtRegAuxInfo>(*MF, *LIS, *VRM, *Loops, *MBFI);
  VRAI->calculateSpillWeightsAndHints();
  SpillerInstance.reset(llvm_compat::createInlineSpiller(*this, *MF, *VRM, *VRAI, *Matrix));
  Info.clear();
  intervalsChanged();
  Queue.clear();
  Queued.clear();
  St = Stats();

  for (unsigned I = 0, E = MRI->getNumVirtRegs(); I != E; ++I) {
    Register R = Register::index2VirtReg(I);
    if (!MRI->reg_nodbg_empty(R))
      enqueue(R);
  }

  LLVMContext &Ctx = MF->getFunction().getContext();
  if (!Observation) { // the first function of this pass
    Observation = std::make_unique<ra::MIR2VecObservation>(Ctx);
    mlp::writeDescription(Ctx, Prefix, mlp::stringSetting(DescribeOpt, "MLBRIDGE_RA_DESCRIBE"),
                          protocolDescription(*Observation));
  }
  const bool Verbose = mlp::boolSetting(VerboseOpt, "MLBRIDGE_RA_VERBOSE");
  const std::string PolicyText = mlp::stringSetting(PolicyOpt, "MLBRIDGE_RA_POLICY");
  PolicyKind Policy = PolicyKind::Model;
  if (PolicyText == "heuristic")
    Policy = PolicyKind::Heuristic;
  else if (PolicyText == "random")
    Policy = PolicyKind::Random;
  else if (PolicyText != "model") {
    if (!RunnerTried)
      mlp::diagnose(Ctx, Prefix, DS_Warning,
                    "unknown -mlbridge-ra-policy '" + PolicyText +
                        "' (model, heuristic, random); using the heuristic");
    RunnerTried = true;
    Policy = PolicyKind::Heuristic;
  }

  std::string Used = Policy == PolicyKind::Random ? "random" : "heuristic";
  std::string Error;
  mlp::FeatureBinding Binding;
  if (Policy == PolicyKind::Model && !RunnerTried) {
    // Once per compiler process: the runner (a pipe connection, a model
    // loaded) serves every function.
    RunnerTried = true;
    mlb::Expected<mlp::RunnerSettings> C = RunnerOpts.read(Embedded.Name);
    if (!C) {
      RunnerError = C.status().message();
    } else {
      RunnerKindUsed = mlp::resolveRunnerKind(*C);
      if (RunnerKindUsed != mlp::RunnerKind::Default) {
        mlp::RunnerRequest Req;
        Req.Features = modelFeatureSpecs(*Observation);
        Req.Advice = protocolAdviceSpec();
        // The runner's first failure is its one warning: the heuristic then
        // decides the rest of the compile, asking the model nothing more
        // (ModelFailed).
        Req.Diagnostics = mlp::llvmDiagnosticSink(
            Ctx, Prefix, Verbose, "; the built-in heuristic decides the rest of the compile");
        Req.MakeEmbedded = Embedded.Make;
        auto Bound = mlp::makeBoundRunner(RunnerKindUsed, *C, Req, "model",
                                          "the register allocator");
        if (!Bound)
          RunnerError = Bound.status().message();
        else
          Runner = std::move(Bound->Runner);
      }
    }
    if (!RunnerError.empty())
      mlp::diagnose(Ctx, Prefix, DS_Warning,
                    RunnerError + "; the built-in heuristic decides");
    else if (Verbose)
      mlp::diagnose(Ctx, Prefix, DS_Remark,
                    Runner ? mlp::runnerRemark(RunnerKindUsed, "decisions taken")
                           : std::string("no model: the built-in heuristic decides"));
  }
  if (Runner && (ModelFailed || Runner->isUnavailable())) {
    // A failed model, a dead peer or broken channel: the heuristic takes the
    // rest of the compile instead of failing every decision of every
    // function. Through the runner's sink: a warning only if it gave none.
    if (!ModelFailed)
      Runner->report(mlb::Severity::Warning,
                     "the model's runner is unavailable from '" + MF->getName().str() + "' on");
    Runner.reset();
  }
  const unsigned Budget = budget();
  ra::MIR2VecObservation &Obs = *Observation;
  if (Policy == PolicyKind::Model && Runner &&
      Binding.bind(*Runner, modelFeatureSpecs(Obs)).isOk()) {
    Used = mlp::runnerKindName(RunnerKindUsed);
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
  } else {
    runBuiltIn(Policy == PolicyKind::Random ? PolicyKind::Random
                                            : PolicyKind::Heuristic,
               MF->getFunction());
  }
  finish();

  const std::string LogPath = mlp::stringSetting(LogOpt, "MLBRIDGE_RA_LOG");
  if (!LogPath.empty()) {
    char Hash[17];
    snprintf(Hash, sizeof(Hash), "%016llx", static_cast<unsigned long long>(St.TraceHash));
    mlp::appendLogLine(
        Ctx, Prefix, LogPath,
        mlp::LogLine(Prefix, MF->getFunction().getParent()->getModuleIdentifier(), Used,
                     St.Decisions, St.FallbackRounds)
            .add("function", MF->getName())
            .add("rounds", static_cast<int64_t>(St.Rounds))
            .add("assigned", static_cast<int64_t>(St.Assigned))
            .add("evictions", static_cast<int64_t>(St.Evictions))
            .add("splits", static_cast<int64_t>(St.Splits))
            .add("loop_splits", static_cast<int64_t>(St.LoopSplits))
            .add("local_splits", static_cast<int64_t>(St.LocalSplits))
            .add("spills", static_cast<int64_t>(St.Spills))
            .add("illegal", static_cast<int64_t>(St.Illegal))
            .add("model_failures", static_cast<int64_t>(St.ModelFailures))
            .add("out_of_registers", static_cast<int64_t>(St.OutOfRegisters))
            .add("trace", std::string(Hash))
            .add("error", Error)
            .str());
  }
  SpillerInstance.reset();
  VRAI.reset();
  return true;
}

bool MLBridgeRegAlloc::doFinalization(Module &M) {
  // A model that never answers legally (NaN scores, illegal indices) does
  // not fail, so no runner reports it: once per compile, here.
  if (ModelAnswers > 0 && IllegalAnswers == ModelAnswers)
    mlp::diagnose(M.getContext(), Prefix, DS_Warning,
                  "the model gave no legal answer in " + Twine(ModelAnswers) +
                      " decisions (NaN or an illegal choice every time): it is "
                      "broken; the built-in heuristic took every decision");
  ModelAnswers = IllegalAnswers = 0;
  return false;
}

FunctionPass *createMLBridgeRegAlloc() { return new MLBridgeRegAlloc(); }

// Registered only in a host of the LLVM this plugin was built for: loaded
// with llc -load or clang -fplugin, no entry is called that could refuse
// another one, so the registration asks (common/PluginEntry.h).
struct Registration {
  std::optional<RegisterRegAlloc> Allocator;
  Registration() {
    if (mlp::hostLLVMMatches())
      Allocator.emplace("mlbridge",
                        "MLBridge register allocator (decisions by a model, "
                        "docs/register-allocation.md)",
                        createMLBridgeRegAlloc);
  }
} MLBridgeRegAllocRegistration;

// ---- loaded as a pass plugin (clang -fpass-plugin, lld --load-pass-plugin) --
// Those hosts parse -mllvm before they load the plugin, so -regalloc=mlbridge
// cannot name it; MLBRIDGE_RA_ENABLE=1 makes it LLVM's default allocator
// instead. TargetPassConfig::createRegAllocPass takes
// RegisterRegAlloc::getDefault() and only when that is unset fills it from
// -regalloc, so the default is set before the code generator is built:
// when the optimization pipeline that precedes it is (per module, in the
// same thread, also in lld's LTO backends). Never at -O0 (LLVM's fast
// allocator stays), never over a -regalloc given on the command line.

bool regallocGiven() {
  const auto &Opts = cl::getRegisteredOptions(); // a StringMap on 19, a DenseMap on 22
  const auto It = Opts.find("regalloc");
  return It != Opts.end() && It->second->getNumOccurrences() > 0;
}

/// Once per process: the default is LLVM's process-wide registry, and the
/// setting is the same for every module (the environment, the command line).
void selectAsDefault(OptimizationLevel Level) {
  if (Level == OptimizationLevel::O0 || !MLBridgeRegAllocRegistration.Allocator)
    return;
  static std::once_flag Once;
  std::call_once(Once, [] {
    if (!regallocGiven())
      RegisterRegAlloc::setDefault(createMLBridgeRegAlloc);
  });
}

/// Loaded as a pass plugin with nothing asking for it: say how, once.
void adviseEnable() {
  static std::once_flag Once;
  std::call_once(Once, [] {
    const char *Env = std::getenv("MLBRIDGE_RA_ENABLE");
    if ((Env && *Env) || EnableOpt.getNumOccurrences() || regallocGiven())
      return;
    errs() << "warning: " << Prefix
           << ": MLBridgeRegAlloc.so is loaded as a pass plugin but selects no "
              "allocator: set MLBRIDGE_RA_ENABLE=1 to make it the default "
              "allocator of optimized code generation (or load it with "
              "-fplugin= / llc -load and pass -regalloc=mlbridge)\n";
  });
}

} // namespace

::llvm::PassPluginLibraryInfo mlbridge::plugins::passPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "MLBridgeRegAlloc", LLVM_VERSION_STRING,
          [](PassBuilder &PB) {
            if (!mlp::boolSetting(EnableOpt, "MLBRIDGE_RA_ENABLE"))
              return adviseEnable();
            // Every pipeline that code generation can follow: per module
            // (clang, ThinLTO's backends) and full LTO.
            llvm_compat::registerOptimizerLast(
                PB, [](ModulePassManager &, OptimizationLevel L) { selectAsDefault(L); });
            PB.registerFullLinkTimeOptimizationLastEPCallback(
                [](ModulePassManager &, OptimizationLevel L) { selectAsDefault(L); });
          }};
}
