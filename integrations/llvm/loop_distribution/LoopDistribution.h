//===- LoopDistribution.h - What the plugin's files hand each other -*- C++ -*-===//
//
// Internal to MLBridgeLoopDistribution.so (LoopDistributionPlugin.cpp has
// the overview). One loop goes through these parts in this order:
//
//   LoopPlan.cpp       planUnits, planNodes: whether the loop is handled, its
//                      units, the dependences between them, the nodes and
//                      their features (and why those edges make any valid
//                      partition correct)
//   Episode.cpp        the protocol's specs (LoopDistributionProtocol.def)
//                      and askModel, the model's walk over the nodes
//   BuiltinPolicy.cpp  the policy used when there is no model
//   Partition.h        validatePartition (LLVM-free, unit-tested)
//   Distribute.cpp     distribute: the transformation
//
// and LoopDistributionPlugin.cpp has the options, a module's session, the
// pass that runs these steps and its registration. A named namespace: the
// types are used across files, which an anonymous namespace cannot do (the
// plugin is built with hidden visibility, so nothing here is exported).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_LOOPDIST_LOOPDISTRIBUTION_H
#define MLBRIDGE_INTEGRATIONS_LLVM_LOOPDIST_LOOPDISTRIBUTION_H

#include "Partition.h"
#include "Protocol.h"

#include "mlbridge/feature_binding.h"
#include "mlbridge/model_runner.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class AAResults;
class DependenceInfo;
class DominatorTree;
class Instruction;
class Loop;
class LoopAccessInfo;
class LoopInfo;
class ScalarEvolution;
} // namespace llvm

namespace mlbridge::ir2vec {
class PluginEmbeddings;
} // namespace mlbridge::ir2vec

namespace mlbridge::loopdist {

/// A loop prepared for distribution: its units (slices), the unit graph and
/// the nodes, the features the model sees.
struct LoopPlan {
  llvm::Loop *L = nullptr;
  /// The loop control: every branch and what it computes from inside the
  /// loop. Every copy keeps it.
  llvm::SmallPtrSet<llvm::Instruction *, 16> Control;
  /// The last instruction of each unit (a store or a live-out value).
  std::vector<llvm::Instruction *> Anchors;
  std::vector<llvm::SmallPtrSet<llvm::Instruction *, 32>> Slices;
  UnitGraph Units;
  NodeGraph Nodes;
  std::vector<std::array<float, NumNodeFeatures>> NodeFeatures;
  /// Per node: a dependence cycle no runtime pointer check removes (a
  /// header phi that is no reduction, induction or fixed-order recurrence,
  /// or a backward dependence of known distance). The feature "cyclic" also
  /// counts dependences of unknown distance, which versioning may remove.
  std::vector<bool> FixedCycle;
  std::array<float, NumLoopFeatures> LoopFeatures{};
  /// [MaxNodes * EmbeddingDim]: each node's IR2Vec vector (0 without the
  /// vocabulary); empty when the runner does not read them.
  std::vector<float> NodeEmbeddings;
  /// The loop's instructions in program order, its loads and stores, and
  /// the units each instruction belongs to (planUnits -> planNodes).
  std::vector<llvm::Instruction *> Order;
  size_t Memory = 0;
  llvm::DenseMap<llvm::Instruction *, llvm::SmallVector<unsigned, 4>> UnitsOf;
};

// ---- LoopPlan.cpp --------------------------------------------------------------

/// The cheap half of planning, before any dependence analysis: why L is not
/// handled, or "" (then Plan's control, units and slices are filled). A loop
/// with fewer than two units has nothing to decide and needs no more.
std::string planUnits(llvm::Loop &L, llvm::LoopInfo &LI, llvm::DominatorTree &DT,
                      llvm::ScalarEvolution &SE, LoopPlan &Plan);

/// The expensive half (Plan from planUnits, at least two units): the
/// dependences, the nodes and their features; the IR2Vec node vectors only
/// when Embeddings is given. Why L is not handled, or "".
std::string planNodes(llvm::Loop &L, llvm::DominatorTree &DT, llvm::ScalarEvolution &SE,
                      llvm::AAResults &AA, llvm::DependenceInfo &DI,
                      const llvm::LoopAccessInfo *LAI, ir2vec::PluginEmbeddings *Embeddings,
                      LoopPlan &Plan);

// ---- Episode.cpp ---------------------------------------------------------------

/// The specs and lists of LoopDistributionProtocol.def.
std::vector<TensorSpec> protocolFeatureSpecs();
TensorSpec protocolAdviceSpec();
/// The protocol as JSON (-mlbridge-ld-describe).
std::string protocolDescription();

/// What one episode (one loop's decisions) gave.
struct EpisodeOutcome {
  /// The model's ordered partition; none if the episode failed (Error).
  std::optional<OrderedPartition> Partition;
  std::string Error;
  int64_t Asked = 0;     // decisions the model was asked for
  int64_t Fallbacks = 0; // of those, taken by the fallback action (rl.h)
};

/// Lets Bound's model choose Plan's ordered partition (Plan has at least two
/// nodes); Context names the loop in the runner's messages.
EpisodeOutcome askModel(const LoopPlan &Plan, BoundRunner &Bound, int64_t LoopId,
                        const std::string &Context);

// ---- BuiltinPolicy.cpp ---------------------------------------------------------

/// The built-in policy as a runner of the protocol (Features, Advice).
Expected<std::unique_ptr<ModelRunner>> makeBuiltinPolicy(std::vector<TensorSpec> Features,
                                                         TensorSpec Advice);

// ---- Distribute.cpp ------------------------------------------------------------

/// Distributes Plan's loop into P's loops, in order. P has at least two
/// loops and is valid (validatePartition).
void distribute(LoopPlan &Plan, const OrderedPartition &P, llvm::LoopInfo &LI,
                llvm::DominatorTree &DT, llvm::ScalarEvolution &SE);

} // namespace mlbridge::loopdist

#endif // MLBRIDGE_INTEGRATIONS_LLVM_LOOPDIST_LOOPDISTRIBUTION_H
