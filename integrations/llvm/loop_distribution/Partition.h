//===- Partition.h - Nodes and ordered partitions of one loop ---*- C++ -*-===//
//
// The loop-distribution plugin's graph side, free of LLVM so that it is
// unit-tested on its own (tests/cpp/test_loop_partition.cpp).
//
// A loop's *units* are its slices: one per store and per value used after
// the loop, in program order. Unit edges say "unit From must run in the
// same or an earlier loop than unit To"; they come from the dependence of
// every pair of memory accesses (addDependence). The model's *nodes* are
// the units after collapsing dependence cycles (collapse()); an ordered
// partition lists loops of node ids, e.g. "0,2|1".
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_LOOPDIST_PARTITION_H
#define MLBRIDGE_INTEGRATIONS_LLVM_LOOPDIST_PARTITION_H

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mlbridge::loopdist {

struct UnitGraph {
  size_t Units = 0;
  /// (From, To): From's loop must not come after To's.
  std::vector<std::pair<size_t, size_t>> Edges;
};

/// What a dependence between two memory accesses of the loop requires, the
/// accesses taken in program order (the earlier one first): Forward, the
/// earlier access's units run in the same or an earlier loop than the later
/// one's (a direction '<' or '=' at the loop's level); Backward, the
/// reverse ('>'); Both for '*', a confused or an unknown dependence.
enum DependenceOrder : unsigned {
  NoOrder = 0,
  OrderForward = 1,
  OrderBackward = 2,
  OrderBoth = OrderForward | OrderBackward
};

/// Adds the edges Order requires between every unit holding the earlier
/// access (EarlierUnits) and every unit holding the later one.
void addDependence(UnitGraph &G, const std::vector<size_t> &EarlierUnits,
                   const std::vector<size_t> &LaterUnits, unsigned Order);

struct NodeGraph {
  /// The units of each node, ascending; nodes ordered by their first unit.
  std::vector<std::vector<size_t>> Members;
  std::vector<size_t> NodeOfUnit;
  /// Before[i][j]: a unit edge from node i to node j (i != j).
  std::vector<std::vector<bool>> Before;
  /// Node I absorbed a cycle of several units.
  std::vector<bool> Collapsed;
  size_t size() const { return Members.size(); }
};

/// The nodes of G: units joined by dependence cycles (strongly connected
/// components of the unit edges). The result is acyclic.
NodeGraph collapse(const UnitGraph &G);

/// Loops in execution order, each a list of node ids.
using OrderedPartition = std::vector<std::vector<size_t>>;

/// Parses "0,1|2" (loops separated by '|', nodes by ','; spaces allowed).
/// Only the syntax is checked; Error says what is wrong.
std::optional<OrderedPartition> parsePartition(std::string_view Text,
                                               std::string &Error);
std::string formatPartition(const OrderedPartition &P);

/// Empty if P is a valid ordered partition of N's nodes for G, else why not:
/// every node in exactly one loop, no loop empty, and no unit edge going
/// from a later loop to an earlier one.
std::string validatePartition(const UnitGraph &G, const NodeGraph &N,
                              const OrderedPartition &P);

/// Whether some loop of P could vectorize: it holds no node marked in
/// Cyclic (a dependence cycle that blocks vectorization) and at least one
/// marked in Work (a node with memory work of its own). A partition
/// without such a loop only adds loops: each part keeps a cycle, or only
/// computes a counter's final value or what another part computes too.
bool someLoopGains(const OrderedPartition &P, const std::vector<bool> &Cyclic,
                   const std::vector<bool> &Work);

} // namespace mlbridge::loopdist

#endif // MLBRIDGE_INTEGRATIONS_LLVM_LOOPDIST_PARTITION_H
