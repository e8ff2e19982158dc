//===- RegAllocPass.h - The -regalloc=mlbridge pass, inside -----*- C++ -*-===//
//
// The allocator's class and what its files share; internal to
// MLBridgeRegAlloc.so (RegAllocPlugin.cpp says what the allocator is). One
// pass in several files, each one concern:
//   RegAllocPlugin.cpp     the options, the pass (runOnMachineFunction) and
//                          its registration, as -regalloc and as a pass plugin
//   RegAllocActions.cpp    the queue, the candidates and their legality,
//                          assign / spill, the LiveRangeEdit delegate
//   RegAllocSplitting.cpp  the splits (per block, around a loop, local) and
//                          when each is legal
//   RegAllocPolicies.cpp   the heuristic, the features, the built-in
//                          policies and the model's episode
// In a named namespace (detail), as the class spans files; the plugin's
// symbols are hidden, so nothing here is seen outside it.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_REGALLOC_REGALLOCPASS_H
#define MLBRIDGE_INTEGRATIONS_LLVM_REGALLOC_REGALLOCPASS_H

#include "LLVMCompat.h"
#include "PluginSupport.h"
#include "RegAllocEmbeddings.h"
#include "RegAllocProtocol.h"

#include "mlbridge/model_runner.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/CodeGen/CalcSpillWeights.h"
#include "llvm/CodeGen/LiveDebugVariables.h"
#include "llvm/CodeGen/LiveIntervals.h"
#include "llvm/CodeGen/LiveRangeEdit.h"
#include "llvm/CodeGen/LiveRegMatrix.h"
#include "llvm/CodeGen/MachineBlockFrequencyInfo.h"
#include "llvm/CodeGen/MachineFunctionPass.h"
#include "llvm/CodeGen/MachineLoopInfo.h"
#include "llvm/CodeGen/MachineRegisterInfo.h"
#include "llvm/CodeGen/RegisterClassInfo.h"
#include "llvm/CodeGen/Spiller.h"
#include "llvm/CodeGen/TargetInstrInfo.h"
#include "llvm/CodeGen/TargetRegisterInfo.h"
#include "llvm/CodeGen/VirtRegMap.h"

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace mlbridge::regalloc::detail {

using namespace llvm;
namespace mlb = mlbridge;
namespace mlp = mlbridge::plugins;
namespace ra = mlbridge::regalloc;
namespace llvm_compat = mlbridge::llvm_compat;

/// Our diagnostics' and log lines' prefix.
constexpr const char *Prefix = "mlbridge-regalloc";
/// A spillable range is evicted at most this often (termination).
constexpr unsigned EvictionCap = 8;

enum class PolicyKind { Model, Heuristic, Random };

/// What the options say (RegAllocPlugin.cpp reads them per function).
struct Settings {
  unsigned Seed = 1;   // of the random policy
  unsigned Budget = 0; // rounds per function; 0: by its size (budget())
  bool Recolor = true; // hint recoloring after allocation (recolorHints())
};

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

/// -regalloc=mlbridge: a legacy machine function pass, one instance per
/// code generator (its runner and its MIR2Vec inputs kept across functions).
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
             ModelFailures = 0, OutOfRegisters = 0, Recolored = 0;
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
  /// The model's episode over MF (RegAllocEnv, through Runner bound by
  /// Binding), then the heuristic for what it left; returns the episode's
  /// error, if any.
  std::string runModel(const mlp::FeatureBinding &Binding);
  void runFallback();
  /// After allocation, greedy's hint recoloring (RAGreedy::tryHintsRecoloring):
  /// a range whose copies join registers it is not in moves, with the
  /// ranges copy-related to it, to its register where that is free and
  /// leaves fewer (frequency-weighted) copies; no decision of the policy
  /// changes, only which free register a chain of copies lands in.
  void recolorHints();
  void recolorFrom(Register Start, DenseSet<Register> &Visited);
  struct CopyHint {
    uint64_t Freq;        // of the copy's block
    Register Other;       // the register at the copy's other end
    MCRegister OtherPhys; // where it is (none: unassigned)
  };
  void copyHints(Register R, SmallVectorImpl<CopyHint> &Out) const;
  void finish();
  RangeInfo &info(Register R) { return Info[R]; }
  unsigned budget() const {
    return Config.Budget ? Config.Budget : 10 * MRI->getNumVirtRegs() + 1000;
  }

  // LiveRangeEdit::Delegate
  bool LRE_CanEraseVirtReg(Register R) override;
  void LRE_WillShrinkVirtReg(Register R) override;
  void LRE_DidCloneVirtReg(Register New, Register Old) override;

  Settings Config; // read per function by runOnMachineFunction
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

// The protocol as tensor specs (RegAllocPolicies.cpp).
/// The protocol's features, then the optional MIR2Vec ones
/// (RegAllocEmbeddings.h: function_embedding, node_embeddings).
std::vector<mlb::TensorSpec> modelFeatureSpecs(const ra::MIR2VecObservation &Obs);
mlb::TensorSpec protocolAdviceSpec();
/// -mlbridge-ra-describe: the protocol, the MIR2Vec inputs (when on) as
/// optional features.
std::string protocolDescription(const ra::MIR2VecObservation &Obs);

} // namespace mlbridge::regalloc::detail

#endif // MLBRIDGE_INTEGRATIONS_LLVM_REGALLOC_REGALLOCPASS_H
