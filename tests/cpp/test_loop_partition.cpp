// The loop-distribution plugin's graph side (integrations/llvm/loop_distribution/
// Partition.h): unit edges from dependence directions, nodes from units and
// cycles; ordered partitions parsed and validated.
#include "Partition.h"

#include <gtest/gtest.h>

using namespace mlbridge::loopdist;

namespace {

// Units 0..4: 0 -> 1 (1 must not run before 0), 2 <-> 3 and 1 <-> 4
// (cycles).
UnitGraph sample() {
  UnitGraph G;
  G.Units = 5;
  G.Edges = {{0, 1}, {2, 3}, {3, 2}, {1, 4}, {4, 1}};
  return G;
}

TEST(LoopPartition, CollapseJoinsCycles) {
  const NodeGraph N = collapse(sample());
  ASSERT_EQ(N.size(), 3u);
  EXPECT_EQ(N.Members[0], (std::vector<size_t>{0}));
  EXPECT_EQ(N.Members[1], (std::vector<size_t>{1, 4}));
  EXPECT_EQ(N.Members[2], (std::vector<size_t>{2, 3}));
  EXPECT_TRUE(N.Before[0][1]);
  EXPECT_FALSE(N.Before[1][0]);
  EXPECT_FALSE(N.Collapsed[0]);
  EXPECT_TRUE(N.Collapsed[1]);
  EXPECT_TRUE(N.Collapsed[2]);
}

TEST(LoopPartition, CollapseOfALongerCycleIsOneNode) {
  UnitGraph G;
  G.Units = 4;
  G.Edges = {{0, 1}, {1, 2}, {2, 0}, {2, 3}};
  const NodeGraph N = collapse(G);
  ASSERT_EQ(N.size(), 2u);
  EXPECT_EQ(N.Members[0], (std::vector<size_t>{0, 1, 2}));
  EXPECT_TRUE(N.Before[0][1]);
}

TEST(LoopPartition, ParseAndFormat) {
  std::string Err;
  auto P = parsePartition(" 0, 2 | 1 ", Err);
  ASSERT_TRUE(P) << Err;
  EXPECT_EQ(*P, (OrderedPartition{{0, 2}, {1}}));
  EXPECT_EQ(formatPartition(*P), "0,2|1");
  for (const char *Bad : {"", "0,", "|0", "0||1", "a", "0;1"}) {
    EXPECT_FALSE(parsePartition(Bad, Err)) << Bad;
    EXPECT_FALSE(Err.empty());
  }
}

TEST(LoopPartition, ValidPartitions) {
  const UnitGraph G = sample();
  const NodeGraph N = collapse(G);
  for (const OrderedPartition &P :
       {OrderedPartition{{0, 1, 2}}, OrderedPartition{{0}, {1}, {2}},
        OrderedPartition{{2}, {0}, {1}}, OrderedPartition{{0, 2}, {1}}})
    EXPECT_EQ(validatePartition(G, N, P), "") << formatPartition(P);
}

TEST(LoopPartition, InvalidPartitions) {
  const UnitGraph G = sample();
  const NodeGraph N = collapse(G);
  EXPECT_NE(validatePartition(G, N, {{1}, {0}, {2}}).find("backward"), std::string::npos);
  EXPECT_NE(validatePartition(G, N, {{0, 1}}).find("node 2 is in no loop"),
            std::string::npos);
  EXPECT_NE(validatePartition(G, N, {{0, 1}, {1, 2}}).find("more than one place"),
            std::string::npos);
  EXPECT_NE(validatePartition(G, N, {{0, 1, 2}, {}}).find("empty"), std::string::npos);
  EXPECT_NE(validatePartition(G, N, {{0, 1, 7}}).find("does not exist"),
            std::string::npos);
}

TEST(LoopPartition, SomeLoopGains) {
  const std::vector<bool> Cyclic = {true, false, true, false};
  const std::vector<bool> Work = {true, true, true, false}; // 3: an induction
  EXPECT_FALSE(someLoopGains({{0}, {2}}, Cyclic, Work));
  EXPECT_FALSE(someLoopGains({{0, 1}, {2}}, Cyclic, Work));
  EXPECT_TRUE(someLoopGains({{0}, {1}, {2}}, Cyclic, Work)); // node 1 alone
  EXPECT_TRUE(someLoopGains({{1}, {0, 2}}, Cyclic, Work));
  EXPECT_FALSE(someLoopGains({{0}, {3}, {2}}, Cyclic, Work)); // 3 does nothing
  EXPECT_TRUE(someLoopGains({{1, 3}, {0, 2}}, Cyclic, Work));
  EXPECT_FALSE(someLoopGains({}, Cyclic, Work));
}

TEST(LoopPartition, DependenceDirectionsGiveEdges) {
  // '<' or '=': the earlier access's units first; '>': the later's first;
  // '*' or unknown: both, so the units become one node.
  UnitGraph G;
  G.Units = 4;
  addDependence(G, {0}, {1}, OrderForward);
  addDependence(G, {2}, {1}, OrderBackward);
  addDependence(G, {1}, {1}, OrderBoth); // one unit: nothing to order
  EXPECT_EQ(G.Edges, (std::vector<std::pair<size_t, size_t>>{{0, 1}, {1, 2}}));
  addDependence(G, {3}, {0, 2}, OrderBoth);
  const NodeGraph N = collapse(G); // 0 -> 1 -> 2 <-> 3 <-> 0: one node
  ASSERT_EQ(N.size(), 1u);
  EXPECT_NE(validatePartition(G, N, {{0}, {1}}).find("does not exist"), std::string::npos);
}

TEST(LoopPartition, AnyDirectionDependenceRefusesEveryOrder) {
  // Issue 34, item 2: `b[-i] = 7; c[i] = b[i+k] + 7`: the store's unit 0
  // and the load's unit 1 with direction '*': neither order is valid when
  // the nodes are forced apart (as with a collapse that ignored cycles).
  UnitGraph G;
  G.Units = 2;
  addDependence(G, {0}, {1}, OrderBoth);
  NodeGraph Apart = collapse(UnitGraph{2, {}});
  ASSERT_EQ(Apart.size(), 2u);
  EXPECT_NE(validatePartition(G, Apart, {{0}, {1}}).find("backward"), std::string::npos);
  EXPECT_NE(validatePartition(G, Apart, {{1}, {0}}).find("backward"), std::string::npos);
  EXPECT_EQ(validatePartition(G, Apart, {{0, 1}}), "");
}

} // namespace
