//===- Episode.cpp - What the loop-distribution model sees and decides ----===//
//
// The model's side of MLBridgeLoopDistribution.so (LoopDistribution.h): the
// protocol's tensor specs, read from LoopDistributionProtocol.def, and the
// decision episode of one loop, in which the model walks the loop's nodes
// (Protocol.h): "select" picks the next node among those whose predecessors
// are placed, "merge" puts it into the current loop or starts a new one.
// The pass validates the ordered partition it gives (Partition.h) before
// distributing.
//
//===----------------------------------------------------------------------===//

#include "LoopDistribution.h"

#include "PluginSupport.h"

#include "mlbridge/rl.h"

#include <algorithm>
#include <string>
#include <vector>

namespace mlb = mlbridge;
namespace mlp = mlbridge::plugins;
namespace ld = mlbridge::loopdist;
using ld::LoopPlan;

// ---- the protocol --------------------------------------------------------------

// The specs and lists of LoopDistributionProtocol.def (its dims are ld:: names,
// in scope here).
std::vector<mlb::TensorSpec> ld::protocolFeatureSpecs() {
  return {
#define MLB_FEATURE(E, Name, Type, ...)                                          \
  mlb::TensorSpec::create<Type>(#Name, {__VA_ARGS__}),
#include "LoopDistributionProtocol.def"
  };
}

mlb::TensorSpec ld::protocolAdviceSpec() {
#define MLB_ADVICE(Name, Type, ...) return mlb::TensorSpec::create<Type>(#Name, {__VA_ARGS__});
#include "LoopDistributionProtocol.def"
}

std::string ld::protocolDescription() {
  std::vector<mlp::ProtocolList> Lists;
#define MLB_LIST(List, E, Name) mlp::addListItem(Lists, #List, #Name);
#include "LoopDistributionProtocol.def"
  return mlp::describeProtocol(protocolFeatureSpecs(), {}, protocolAdviceSpec(), Lists);
}

// ---- the decision episode of one loop ------------------------------------------------

namespace {

/// The model's walk over one loop's nodes (Protocol.h).
class PartitionEnv final : public mlb::rl::Environment {
public:
  PartitionEnv(const LoopPlan &Plan, const mlp::FeatureBinding &Binding,
               int64_t LoopId)
      : Plan(Plan), Binding(Binding), LoopId(LoopId),
        N(static_cast<int64_t>(Plan.Nodes.size())) {}

  mlb::Status reset() override {
    Placed.assign(N, false);
    Partition.clear();
    Candidate = -1;
    Asked = 0;
    Phase = ld::SelectAgent;
    advance();
    return mlb::Status::ok();
  }

  mlb::Status observe(mlb::ModelRunner &Runner) override {
    std::vector<float> Nodes(ld::MaxNodes * ld::NumNodeFeatures, 0.0f);
    std::vector<float> Adj(ld::MaxNodes * ld::MaxNodes, 0.0f);
    std::vector<float> PlacedV(ld::MaxNodes, 0.0f), CurrentV(ld::MaxNodes, 0.0f),
        CandidateV(ld::MaxNodes, 0.0f);
    for (int64_t I = 0; I < N; ++I) {
      std::copy(Plan.NodeFeatures[I].begin(), Plan.NodeFeatures[I].end(),
                Nodes.begin() + I * ld::NumNodeFeatures);
      for (int64_t J = 0; J < N; ++J)
        Adj[I * ld::MaxNodes + J] = Plan.Nodes.Before[I][J] ? 1.0f : 0.0f;
      PlacedV[I] = Placed[I] ? 1.0f : 0.0f;
    }
    if (!Partition.empty())
      for (size_t Node : Partition.back())
        CurrentV[Node] = 1.0f;
    if (Phase == ld::MergeAgent && Candidate >= 0)
      CandidateV[Candidate] = 1.0f;
    const std::vector<float> Mask = mask();
    const int64_t Agent = Phase, Step = Asked;
    Binding.write(Runner, ld::FNodeFeatures, Nodes.data());
    Binding.write(Runner, ld::FAdjacency, Adj.data());
    Binding.write(Runner, ld::FEligible, Mask.data());
    Binding.write(Runner, ld::FPlaced, PlacedV.data());
    Binding.write(Runner, ld::FCurrent, CurrentV.data());
    Binding.write(Runner, ld::FCandidate, CandidateV.data());
    Binding.write(Runner, ld::FLoopFeatures, Plan.LoopFeatures.data());
    Binding.write(Runner, ld::FAgent, &Agent);
    Binding.write(Runner, ld::FLoopId, &LoopId);
    Binding.write(Runner, ld::FStep, &Step);
    if (!Plan.NodeEmbeddings.empty())
      Binding.write(Runner, ld::FNodeEmbeddings, Plan.NodeEmbeddings.data());
    return mlb::Status::ok();
  }

  mlb::Status step(const mlb::rl::Action &A) override {
    const std::vector<float> Mask = mask();
    if (A.Index < 0 || A.Index >= ld::MaxNodes || Mask[A.Index] < 0.5f) {
      std::string Legal;
      for (int64_t I = 0; I < ld::MaxNodes; ++I)
        if (Mask[I] > 0.5f)
          Legal += (Legal.empty() ? "" : ", ") + std::to_string(I);
      return mlb::Status(mlb::ErrorCode::InvalidArgument,
                         std::string("the ") + ld::AgentNames[Phase] +
                             " agent chose " + std::to_string(A.Index) +
                             ", which is not legal here (legal: " + Legal + ")");
    }
    ++Asked;
    apply(A.Index);
    advance();
    return mlb::Status::ok();
  }

  /// The legal actions of the agent about to act.
  std::vector<float> mask() const {
    std::vector<float> M(ld::MaxNodes, 0.0f);
    if (Phase == ld::MergeAgent) {
      M[ld::MergeIntoCurrent] = Partition.empty() ? 0.0f : 1.0f;
      M[ld::StartNewLoop] = 1.0f;
      return M;
    }
    for (int64_t I = 0; I < N; ++I)
      if (!Placed[I]) {
        bool Ready = true;
        for (int64_t J = 0; J < N && Ready; ++J)
          Ready = !Plan.Nodes.Before[J][I] || Placed[J];
        M[I] = Ready ? 1.0f : 0.0f;
      }
    return M;
  }

  const ld::OrderedPartition &partition() const { return Partition; }
  int64_t asked() const { return Asked; }

private:
  void apply(int64_t Action) {
    if (Phase == ld::SelectAgent) {
      Candidate = Action;
      Phase = ld::MergeAgent;
      return;
    }
    if (Action == ld::StartNewLoop || Partition.empty())
      Partition.emplace_back();
    Partition.back().push_back(static_cast<size_t>(Candidate));
    Placed[Candidate] = true;
    Candidate = -1;
    Phase = ld::SelectAgent;
  }

  /// Takes the decisions that have one legal action; ends the episode when
  /// every node is placed, else names the agent to ask.
  void advance() {
    for (;;) {
      if (std::all_of(Placed.begin(), Placed.end(), [](bool B) { return B; })) {
        setDone();
        return;
      }
      const std::vector<float> M = mask();
      int64_t Legal = 0, Only = -1;
      for (int64_t I = 0; I < ld::MaxNodes; ++I)
        if (M[I] > 0.5f) {
          ++Legal;
          Only = I;
        }
      if (Legal != 1) {
        setNextAgent(ld::AgentNames[Phase]);
        return;
      }
      apply(Only);
    }
  }

  const LoopPlan &Plan;
  const mlp::FeatureBinding &Binding;
  int64_t LoopId;
  int64_t N;
  std::vector<bool> Placed;
  ld::OrderedPartition Partition;
  int64_t Candidate = -1;
  int64_t Asked = 0;
  int64_t Phase = ld::SelectAgent;
};

/// The agents' rule over the model's scores: the argmax over the legal
/// actions only (an illegal choice is impossible, whatever the model says).
mlb::rl::Policy maskedArgmax(const PartitionEnv &Env) {
  return [&Env](const mlb::TensorValue &Out) -> mlb::Expected<int64_t> {
    if (Out.type() != mlb::DType::Float || Out.elementCount() < static_cast<size_t>(ld::MaxNodes))
      return mlb::Status(mlb::ErrorCode::TypeMismatch,
                         "the model's scores are not float32 [16]");
    // The library's rule; scores past the 16 nodes are masked off.
    std::vector<bool> Legal(Out.elementCount(), false);
    const std::vector<float> M = Env.mask();
    for (size_t I = 0; I < M.size(); ++I)
      Legal[I] = M[I] > 0.5f;
    return mlb::decodeAction(Out, mlb::ActionRule::Argmax, Legal);
  };
}

} // namespace

ld::EpisodeOutcome ld::askModel(const LoopPlan &Plan, mlb::BoundRunner &Bound,
                                int64_t LoopId, const std::string &Context) {
  PartitionEnv Env(Plan, Bound.Binding, LoopId);
  mlb::rl::Driver D(Env);
  mlb::ModelRunner &R = *Bound.Runner;
  (void)D.addAgent(ld::AgentNames[ld::SelectAgent],
                   mlb::rl::Agent(R, maskedArgmax(Env)));
  (void)D.addAgent(ld::AgentNames[ld::MergeAgent],
                   mlb::rl::Agent(R, maskedArgmax(Env)));
  mlb::rl::EpisodeOptions EO;
  EO.Context = Context;
  mlb::Expected<mlb::rl::EpisodeResult> ER = D.runEpisode(EO);
  EpisodeOutcome Out;
  Out.Asked = Env.asked();
  if (ER) {
    Out.Fallbacks = static_cast<int64_t>(ER->FallbackSteps);
    Out.Partition = Env.partition();
  } else {
    Out.Error = ER.status().toString();
  }
  return Out;
}
