//===- Protocol.h - What the loop-distribution model sees and decides -*- C++ -*-===//
//
// The contract between MLBridgeLoopDistribution.so and its model (a Python
// policy over pipes/shared memory/gRPC while training, an ONNX or compiled
// model in-process). docs/loop-distribution.md describes it in words;
// LoopDistributionProtocol.def holds the names and shapes, for C++ and Python.
// Keep it stable: trained models depend on every name, shape and column.
//
// ---- contract ----------------------------------------------------------------
// One channel (one runner), two agents taking turns, many loops per module:
//   agent 0 "select": which node is placed next. Legal: the nodes not yet
//                     placed all of whose predecessors are placed.
//   agent 1 "merge":  0 = put the node just selected into the current
//                     (last) loop, 1 = start a new loop with it.
// Decisions with one legal action are taken by the pass without asking
// (the first node of a loop always starts loop 0; a select with one
// eligible node). A loop with fewer than 2 nodes asks nothing.
//
// Features, every one sent on every call (an in-process model takes the
// subset it declares, by name):
//   node_features  float32 [16, 20]  one row per node, NodeFeature columns;
//                                    rows >= node count are 0
//   adjacency      float32 [16, 16]  [i][j] = 1: node i must be placed in
//                                    the same or an earlier loop than node j
//   eligible       float32 [16]      the asking agent's legal actions: select
//                                    -> 1 per eligible node; merge -> [0] = 1
//                                    (merge allowed), [1] = 1, rest 0
//   placed         float32 [16]      1 = node placed already
//   current        float32 [16]      1 = node is in the current (last) loop
//   candidate      float32 [16]      merge: one-hot of the node just
//                                    selected; select: all 0
//   loop_features  float32 [8]       LoopFeature columns
//   agent          int64   [1]       0 select, 1 merge
//   loop_id        int64   [1]       loops asked about so far in this module
//                                    (0, 1, ...): tells loops apart, the
//                                    same whatever the thread count
//   step           int64   [1]       decisions asked so far for this loop
//   node_embeddings float32 [16, 300] per node, the sum of the IR2Vec
//                                    (symbolic) vectors of its instructions,
//                                    in program order; 0 without the IR2Vec
//                                    vocabulary
// Advice (the model's output):
//   scores         float32 [16]      select: a score per node slot; merge:
//                                    [0] merge, [1] new loop (rest unused).
//                                    The pass takes the argmax over the legal
//                                    actions only (masked in C++, so an
//                                    illegal choice cannot happen; a NaN is
//                                    an error: the loop is left alone).
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_LOOPDIST_PROTOCOL_H
#define MLBRIDGE_INTEGRATIONS_LLVM_LOOPDIST_PROTOCOL_H

#include <cstddef>
#include <cstdint>

namespace mlbridge::loopdist {

// The names, shapes and orders come from LoopDistributionProtocol.def (the
// one definition the Python side parses too); each #include below picks one
// kind of item from it.
#define MLB_CONST(Name, Value) constexpr int64_t Name = Value;
#include "LoopDistributionProtocol.def"

enum AgentId : int64_t {
#define MLB_LIST_Agent(E, Name) E,
#include "LoopDistributionProtocol.def"
  NumAgents
};
constexpr const char *AgentNames[NumAgents] = {
#define MLB_LIST_Agent(E, Name) #Name,
#include "LoopDistributionProtocol.def"
};
enum MergeAction : int64_t {
#define MLB_LIST_MergeAction(E, Name) E,
#include "LoopDistributionProtocol.def"
  NumMergeActions
};

/// Columns of node_features: counts over the node's instructions (its
/// slices: the stores or live-out values it ends in and everything they
/// compute from inside the loop, loop control excluded).
///   instructions; loads; stores; int_arith: integer binary operators;
///   fp_arith: floating-point binary/unary operators; casts;
///   compare_select: icmp, fcmp, select; geps; phis (recurrences,
///   reductions, secondary inductions); pure_calls: calls without memory
///   effects (intrinsics, libm); pi_block: 1 = holds units merged because
///   their dependences form a cycle, or a unit whose store feeds one of its
///   own loads in a later iteration; units: slices (stores and live-out
///   values) in the node; live_out: 1 = a value of the node is used after
///   the loop; in_degree / out_degree: predecessor / successor nodes
///   (adjacency); cyclic: 1 = carries a dependence cycle that blocks
///   vectorization (a recurrence that is neither a reduction, an induction
///   nor a fixed-order one, or a backward/unknown memory dependence inside);
///   reductions: reduction phis; min_distance: smallest nonzero constant
///   dependence distance (in iterations) of its memory accesses, 0 = none;
///   unknown_distance: loop-carried dependences of unknown distance;
///   shared: instructions also computed by another node.
/// Columns of loop_features: nodes (<= MaxNodes); instructions of the loop;
///   blocks; trip_count (constant, 0 if unknown); depth (1 = outermost);
///   memory (loads and stores); cyclic_nodes (nodes with cyclic = 1); edges
///   (of adjacency).
enum NodeFeature : size_t {
#define MLB_LIST_NodeFeature(E, Name) E,
#include "LoopDistributionProtocol.def"
  NumNodeFeatures
};
constexpr const char *NodeFeatureNames[NumNodeFeatures] = {
#define MLB_LIST_NodeFeature(E, Name) #Name,
#include "LoopDistributionProtocol.def"
};
enum LoopFeature : size_t {
#define MLB_LIST_LoopFeature(E, Name) E,
#include "LoopDistributionProtocol.def"
  NumLoopFeatures
};
constexpr const char *LoopFeatureNames[NumLoopFeatures] = {
#define MLB_LIST_LoopFeature(E, Name) #Name,
#include "LoopDistributionProtocol.def"
};

/// The features, in the order the pass declares them to a runner.
enum FeatureId : size_t {
#define MLB_FEATURE(E, Name, Type, ...) E,
#include "LoopDistributionProtocol.def"
  NumFeatures
};
constexpr const char *FeatureNames[NumFeatures] = {
#define MLB_FEATURE(E, Name, Type, ...) #Name,
#include "LoopDistributionProtocol.def"
};
#define MLB_ADVICE(Name, Type, ...) constexpr const char *AdviceName = #Name;
#include "LoopDistributionProtocol.def"

} // namespace mlbridge::loopdist

#endif // MLBRIDGE_INTEGRATIONS_LLVM_LOOPDIST_PROTOCOL_H
