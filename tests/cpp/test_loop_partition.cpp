// The loop-distribution plugin's graph side (integrations/llvm/loop_distribution/
// Partition.h): nodes from units, pi-blocks and cycles; ordered partitions
// parsed and validated.
#include "Partition.h"

#include <gtest/gtest.h>

using namespace mlbridge::loopdist;

namespace {

// Units 0..4: 0 -> 1 (1 must not run before 0), 2 <-> 3 (a cycle), pi-block
// {1, 4}.
UnitGraph sample() {
  UnitGraph G;
  G.Units = 5;
  G.Edges = {{0, 1}, {2, 3}, {3, 2}};
  G.PiBlocks = {{1, 4}};
  return G;
}

TEST(LoopPartition, CollapseJoinsPiBlocksAndCycles) {
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

TEST(LoopPartition, PiBlocksStayWhole) {
  // Nodes made without joining the pi-block (as if collapse had a bug): the
  // validation still refuses to split it.
  const UnitGraph G = sample();
  UnitGraph NoPi = G;
  NoPi.PiBlocks.clear();
  const NodeGraph N = collapse(NoPi); // {0} {1} {2,3} {4}
  ASSERT_EQ(N.size(), 4u);
  EXPECT_NE(validatePartition(G, N, {{0, 1}, {2, 3}}).find("pi-block 0 is split"),
            std::string::npos);
  EXPECT_EQ(validatePartition(G, N, {{0}, {1, 3}, {2}}), "");
}

} // namespace
