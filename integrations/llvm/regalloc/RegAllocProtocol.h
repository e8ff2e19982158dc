//===- RegAllocProtocol.h - What the -regalloc=mlbridge agents see -*- C++ -*-===//
//
// The decision protocol of MLBridgeRegAlloc.so (docs/register-allocation.md).
// It is the contract between the allocator and every policy that drives it:
// a Python agent over pipes/gRPC while training, the ONNX or compiled-in
// model when deployed. Its names and shapes are RegAllocProtocol.def, which
// mlbridge.llvm.plugins.regalloc reads too.
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

// The names, shapes and orders come from RegAllocProtocol.def (the one
// definition the Python side parses too; what each column means is written
// there); each #include below picks one kind of item from it. Only the
// agents' names are needed here (rl::Driver's agents); the other lists'
// names reach the Python side from the .def and -mlbridge-ra-describe.
#define MLB_CONST(Name, Value) constexpr int64_t Name = Value;
#include "RegAllocProtocol.def"

enum Agent : int64_t {
#define MLB_LIST_Agent(E, Name) E,
#include "RegAllocProtocol.def"
  NumAgents
};
constexpr const char *AgentNames[NumAgents] = {
#define MLB_LIST_Agent(E, Name) #Name,
#include "RegAllocProtocol.def"
};

enum Action : int64_t {
#define MLB_LIST_Action(E, Name) E,
#include "RegAllocProtocol.def"
  NumActions
};

/// Per live range of the window.
enum NodeFeature : size_t {
#define MLB_LIST_NodeFeature(E, Name) E,
#include "RegAllocProtocol.def"
  NumNodeFeatures
};

/// Per candidate register of the range being decided.
enum RegFeature : size_t {
#define MLB_LIST_RegFeature(E, Name) E,
#include "RegAllocProtocol.def"
  NumRegFeatures
};

} // namespace mlbridge::regalloc

#endif // MLBRIDGE_INTEGRATIONS_LLVM_REGALLOCPROTOCOL_H
