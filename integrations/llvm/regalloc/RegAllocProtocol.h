//===- RegAllocProtocol.h - What the -regalloc=mlbridge agents see -*- C++ -*-===//
//
// The decision protocol of MLBridgeRegAlloc.so (docs/register-allocation.md).
// It is the contract between the allocator and every policy that drives it:
// a Python agent over pipes/gRPC while training, the ONNX or compiled-in
// model when deployed. Change it only together with the trainer
// (mlbridge.llvm.plugins.regalloc and its constants).
//
// One episode per machine function. Each allocation round takes up to three
// decisions, by three named agents (rl::Driver) sharing one runner:
//
//   "select"   (agent = 0) which live range of the window to allocate next
//              -> index in [0, MaxNodes), legal where node_mask = 1
//   "action"   (agent = 1) what to do with it
//              -> 0 assign, 1 split, 2 spill; legal where action_mask = 1
//   "register" (agent = 2) which register (only after "assign")
//              -> index in [0, MaxRegs) of the candidate list; legal where
//                 register_mask = 1. A candidate whose interference is only
//                 lighter, evictable live ranges is legal: those are evicted.
//
// The window is the (up to) MaxNodes unallocated live ranges of highest
// priority (size, unspillable ranges first); larger functions are decided in
// successive windows. Every decision is checked in C++ against its mask: an
// illegal answer is replaced by the built-in heuristic's choice and counted
// ("illegal" in the log line). The candidate list is the register hints
// (MachineRegisterInfo + TargetRegisterInfo::getRegAllocationHints) followed
// by the rest of RegisterClassInfo's allocation order, truncated to MaxRegs.
//
// Features (every decision sends all of them; float32 unless noted):
//   agent              int64 [1]                   0 select, 1 action, 2 register
//   node_features      [1, MaxNodes, NodeFeatures] see NodeFeature
//   adjacency          [1, MaxNodes, MaxNodes]     1 where two window ranges
//                                                  interfere (overlap)
//   node_mask          [1, MaxNodes]               1 = a range in the window
//   selected           [1, MaxNodes]               one-hot: the range being
//                                                  decided (zeros for select)
//   action_mask        [1, NumActions]             legal actions (zeros for select)
//   register_features  [1, MaxRegs, RegFeatures]   see RegFeature (zeros for select)
//   register_mask      [1, MaxRegs]                legal registers (zeros for select)
// Advice: over pipes/gRPC an int64 "action" [1] (the index); in-process
// models output float scores [1, MaxNodes] (or any length >= the agent's
// choices), of which the C++ takes the legal argmax.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_REGALLOCPROTOCOL_H
#define MLBRIDGE_INTEGRATIONS_LLVM_REGALLOCPROTOCOL_H

#include <cstddef>
#include <cstdint>

namespace mlbridge::regalloc {

constexpr int64_t MaxNodes = 64;
constexpr int64_t MaxRegs = 32;

enum Agent : int64_t { AgentSelect = 0, AgentAction = 1, AgentRegister = 2 };
constexpr const char *AgentNames[] = {"select", "action", "register"};

enum Action : int64_t { ActAssign = 0, ActSplit = 1, ActSpill = 2, NumActions = 3 };
constexpr const char *ActionNames[] = {"assign", "split", "spill"};

/// Per live range of the window.
enum NodeFeature : size_t {
  NFLogWeight,     // log1p(spill weight); 0 for unspillable ranges
  NFUnspillable,   // 1 if the range cannot be spilled (e.g. a spill's reload)
  NFLogSize,       // log1p(instructions the range spans)
  NFUseDensity,    // instructions using/defining it / instructions spanned
  NFLogUses,       // log1p(instructions using/defining it)
  NFLoopDepth,     // deepest loop of a block that uses/defines it
  NFRegClass,      // register class id / number of classes of the target
  NFOrderSize,     // allocation order length / MaxRegs
  NFHasHint,       // 1 if it has a register hint
  NFFreeFraction,  // free candidate registers now / candidates
  NFEvictions,     // times evicted so far / eviction cap
  NFSplittable,    // 1 if "split" would be legal
  NumNodeFeatures
};
constexpr const char *NodeFeatureNames[NumNodeFeatures] = {
    "log_weight", "unspillable", "log_size",      "use_density",
    "log_uses",   "loop_depth",  "reg_class",     "order_size",
    "has_hint",   "free_fraction", "evictions",   "splittable"};

/// Per candidate register of the range being decided.
enum RegFeature : size_t {
  RFFree,          // 1 if nothing interferes
  RFLegal,         // 1 if assignable (free, or only evictable interference)
  RFHint,          // 1 if it is a hint
  RFLogIntfWeight, // log1p(largest spill weight among interfering ranges)
  RFNumIntf,       // interfering live ranges / 8
  RFCalleeSaved,   // 1 if a callee-saved register not used yet (costs a save)
  NumRegFeatures
};
constexpr const char *RegFeatureNames[NumRegFeatures] = {
    "free", "legal", "hint", "log_intf_weight", "num_intf", "callee_saved_unused"};

} // namespace mlbridge::regalloc

#endif // MLBRIDGE_INTEGRATIONS_LLVM_REGALLOCPROTOCOL_H
