//===- Protocol.h - What the loop-distribution model sees and decides -*- C++ -*-===//
//
// The contract between MLBridgeLoopDistribution.so and its model (a Python
// policy over pipes/shared memory/gRPC while training, an ONNX or compiled
// model in-process). docs/loop-distribution.md describes it in words;
// python/mlbridge/llvm/plugins/loop_distribution.py mirrors the constants.
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

constexpr int64_t MaxNodes = 16;
/// IR2Vec's vector dimension (integrations/llvm/ir2vec/PluginEmbeddings.h).
constexpr int64_t EmbeddingDim = 300;

enum AgentId : int64_t { SelectAgent = 0, MergeAgent = 1 };
constexpr const char *AgentNames[] = {"select", "merge"};
enum MergeAction : int64_t { MergeIntoCurrent = 0, StartNewLoop = 1 };

/// Columns of node_features: counts over the node's instructions (its
/// slices: the stores or live-out values it ends in and everything they
/// compute from inside the loop, loop control excluded).
enum NodeFeature : size_t {
  NFInstructions,     // instructions
  NFLoads,            // loads
  NFStores,           // stores
  NFIntArith,         // integer binary operators
  NFFPArith,          // floating-point binary/unary operators
  NFCasts,            // casts
  NFCompareSelect,    // icmp, fcmp, select
  NFGEPs,             // getelementptr
  NFPhis,             // phis (recurrences, reductions, secondary inductions)
  NFPureCalls,        // calls without memory effects (intrinsics, libm)
  NFPiBlock,          // 1: holds units merged because their dependences
                      //    form a cycle, or a unit whose store feeds one of
                      //    its own loads in a later iteration
  NFUnits,            // slices (stores and live-out values) in the node
  NFLiveOut,          // 1: a value of the node is used after the loop
  NFInDegree,         // predecessor nodes (adjacency)
  NFOutDegree,        // successor nodes
  NFCyclic,           // 1: carries a dependence cycle that blocks
                      //    vectorization (a recurrence that is neither a
                      //    reduction, an induction nor a fixed-order one, or
                      //    a backward/unknown memory dependence inside)
  NFReductions,       // reduction phis
  NFMinDistance,      // smallest nonzero constant dependence distance (in
                      //    iterations) of its memory accesses; 0: none
  NFUnknownDistance,  // loop-carried dependences of unknown distance
  NFShared,           // instructions also computed by another node
  NumNodeFeatures
};
constexpr const char *NodeFeatureNames[NumNodeFeatures] = {
    "instructions", "loads",     "stores",        "int_arith",
    "fp_arith",     "casts",     "compare_select", "geps",
    "phis",         "pure_calls", "pi_block",     "units",
    "live_out",     "in_degree", "out_degree",    "cyclic",
    "reductions",   "min_distance", "unknown_distance", "shared"};

/// Columns of loop_features.
enum LoopFeature : size_t {
  LFNodes,        // nodes (<= MaxNodes)
  LFInstructions, // instructions of the loop
  LFBlocks,       // basic blocks
  LFTripCount,    // constant trip count, 0 if unknown
  LFDepth,        // loop depth (1 = outermost)
  LFMemory,       // loads and stores
  LFCyclicNodes,  // nodes with NFCyclic = 1
  LFEdges,        // edges of adjacency
  NumLoopFeatures
};
constexpr const char *LoopFeatureNames[NumLoopFeatures] = {
    "nodes", "instructions", "blocks", "trip_count",
    "depth", "memory",       "cyclic_nodes", "edges"};

/// The features, in the order the pass declares them to a runner.
enum FeatureId : size_t {
  FNodeFeatures,
  FAdjacency,
  FEligible,
  FPlaced,
  FCurrent,
  FCandidate,
  FLoopFeatures,
  FAgent,
  FLoopId,
  FStep,
  FNodeEmbeddings,
  NumFeatures
};
constexpr const char *FeatureNames[NumFeatures] = {
    "node_features", "adjacency", "eligible", "placed",  "current",
    "candidate",     "loop_features", "agent", "loop_id", "step",
    "node_embeddings"};
constexpr const char *AdviceName = "scores";

} // namespace mlbridge::loopdist

#endif // MLBRIDGE_INTEGRATIONS_LLVM_LOOPDIST_PROTOCOL_H
