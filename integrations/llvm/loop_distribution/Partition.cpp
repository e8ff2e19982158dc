//===- Partition.cpp - Nodes and ordered partitions of one loop -----------===//
#include "Partition.h"

#include <algorithm>
#include <numeric>

namespace mlbridge::loopdist {

namespace {
size_t findRoot(std::vector<size_t> &Parent, size_t X) {
  while (Parent[X] != X)
    X = Parent[X] = Parent[Parent[X]];
  return X;
}
} // namespace

NodeGraph collapse(const UnitGraph &G) {
  const size_t U = G.Units;
  std::vector<size_t> Parent(U);
  std::iota(Parent.begin(), Parent.end(), size_t(0));
  auto Join = [&](size_t A, size_t B) {
    A = findRoot(Parent, A);
    B = findRoot(Parent, B);
    if (A != B)
      Parent[std::max(A, B)] = std::min(A, B);
  };
  // Reachability between units (loops have few units: Warshall is enough).
  std::vector<std::vector<bool>> Reach(U, std::vector<bool>(U, false));
  for (size_t I = 0; I < U; ++I)
    Reach[I][I] = true;
  for (const auto &[From, To] : G.Edges)
    if (From < U && To < U)
      Reach[From][To] = true;
  for (size_t K = 0; K < U; ++K)
    for (size_t I = 0; I < U; ++I)
      if (Reach[I][K])
        for (size_t J = 0; J < U; ++J)
          if (Reach[K][J])
            Reach[I][J] = true;
  for (size_t I = 0; I < U; ++I)
    for (size_t J = I + 1; J < U; ++J)
      if (Reach[I][J] && Reach[J][I])
        Join(I, J);

  NodeGraph N;
  N.NodeOfUnit.assign(U, 0);
  std::vector<long> NodeOfRoot(U, -1);
  for (size_t I = 0; I < U; ++I) { // roots are the smallest unit: in order
    const size_t R = findRoot(Parent, I);
    if (NodeOfRoot[R] < 0) {
      NodeOfRoot[R] = static_cast<long>(N.Members.size());
      N.Members.emplace_back();
    }
    N.NodeOfUnit[I] = static_cast<size_t>(NodeOfRoot[R]);
    N.Members[N.NodeOfUnit[I]].push_back(I);
  }
  const size_t Nodes = N.Members.size();
  N.Before.assign(Nodes, std::vector<bool>(Nodes, false));
  for (const auto &[From, To] : G.Edges)
    if (From < U && To < U && N.NodeOfUnit[From] != N.NodeOfUnit[To])
      N.Before[N.NodeOfUnit[From]][N.NodeOfUnit[To]] = true;
  N.Collapsed.assign(Nodes, false);
  for (size_t I = 0; I < Nodes; ++I)
    N.Collapsed[I] = N.Members[I].size() > 1;
  return N;
}

void addDependence(UnitGraph &G, const std::vector<size_t> &EarlierUnits,
                   const std::vector<size_t> &LaterUnits, unsigned Order) {
  for (size_t A : EarlierUnits)
    for (size_t B : LaterUnits) {
      if (A == B)
        continue;
      if (Order & OrderForward)
        G.Edges.emplace_back(A, B);
      if (Order & OrderBackward)
        G.Edges.emplace_back(B, A);
    }
}

std::optional<OrderedPartition> parsePartition(std::string_view Text,
                                               std::string &Error) {
  OrderedPartition P(1);
  bool HaveNumber = false, Expect = true; // Expect: a number must follow
  size_t Value = 0;
  auto Flush = [&]() -> bool {
    if (!HaveNumber) {
      Error = "a loop or a node is missing in '" + std::string(Text) + "'";
      return false;
    }
    P.back().push_back(Value);
    HaveNumber = false;
    Value = 0;
    return true;
  };
  for (char C : Text) {
    if (C == ' ')
      continue;
    if (C >= '0' && C <= '9') {
      Value = Value * 10 + static_cast<size_t>(C - '0');
      if (Value > 1000000) {
        Error = "node id too large in '" + std::string(Text) + "'";
        return std::nullopt;
      }
      HaveNumber = true;
      Expect = false;
    } else if (C == ',' || C == '|') {
      if (!Flush())
        return std::nullopt;
      Expect = true;
      if (C == '|')
        P.emplace_back();
    } else {
      Error = std::string("unexpected '") + C + "' in '" + std::string(Text) +
              "' (expected node ids like 0,1|2)";
      return std::nullopt;
    }
  }
  if (Expect || !Flush()) {
    Error = "a loop or a node is missing in '" + std::string(Text) + "'";
    return std::nullopt;
  }
  return P;
}

std::string formatPartition(const OrderedPartition &P) {
  std::string S;
  for (size_t L = 0; L < P.size(); ++L) {
    if (L)
      S += '|';
    for (size_t I = 0; I < P[L].size(); ++I)
      S += (I ? "," : "") + std::to_string(P[L][I]);
  }
  return S;
}

std::string validatePartition(const UnitGraph &G, const NodeGraph &N,
                              const OrderedPartition &P) {
  std::vector<long> LoopOf(N.size(), -1);
  for (size_t L = 0; L < P.size(); ++L) {
    if (P[L].empty())
      return "loop " + std::to_string(L) + " is empty";
    for (size_t Node : P[L]) {
      if (Node >= N.size())
        return "node " + std::to_string(Node) + " does not exist (the loop has " +
               std::to_string(N.size()) + " nodes)";
      if (LoopOf[Node] >= 0)
        return "node " + std::to_string(Node) + " is in more than one place";
      LoopOf[Node] = static_cast<long>(L);
    }
  }
  for (size_t Node = 0; Node < N.size(); ++Node)
    if (LoopOf[Node] < 0)
      return "node " + std::to_string(Node) + " is in no loop";
  auto LoopOfUnit = [&](size_t U) { return LoopOf[N.NodeOfUnit[U]]; };
  for (const auto &[From, To] : G.Edges)
    if (From < G.Units && To < G.Units && LoopOfUnit(From) > LoopOfUnit(To))
      return "node " + std::to_string(N.NodeOfUnit[To]) + " (loop " +
             std::to_string(LoopOfUnit(To)) + ") depends on node " +
             std::to_string(N.NodeOfUnit[From]) + " (loop " +
             std::to_string(LoopOfUnit(From)) +
             "): a dependence would go backward";
  return "";
}

bool someLoopGains(const OrderedPartition &P, const std::vector<bool> &Cyclic,
                   const std::vector<bool> &Work) {
  auto Marked = [](const std::vector<bool> &Flags, size_t Node) {
    return Node < Flags.size() && Flags[Node];
  };
  for (const std::vector<size_t> &Loop : P) {
    bool AnyCyclic = false, AnyWork = false;
    for (size_t Node : Loop) {
      AnyCyclic = AnyCyclic || Marked(Cyclic, Node);
      AnyWork = AnyWork || Marked(Work, Node);
    }
    if (AnyWork && !AnyCyclic)
      return true;
  }
  return false;
}

} // namespace mlbridge::loopdist
