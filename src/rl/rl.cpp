//===- rl/rl.cpp - Environments, agents, episodes -------------------------===//

#include "mlbridge/rl.h"

#include <vector>

namespace mlbridge::rl {

// ---- Environment ---------------------------------------------------------

Environment::~Environment() = default;

// ---- Agent ---------------------------------------------------------------

Agent::Agent(ModelRunner &Runner, ActionRule Rule) : R(&Runner), Rule(Rule) {}
Agent::Agent(std::unique_ptr<ModelRunner> Runner, ActionRule Rule)
    : Owned(std::move(Runner)), R(Owned.get()), Rule(Rule) {}
Agent::Agent(ModelRunner &Runner, Policy P)
    : R(&Runner), Rule(ActionRule::Auto), Custom(std::move(P)) {}
Agent::Agent(std::unique_ptr<ModelRunner> Runner, Policy P)
    : Owned(std::move(Runner)), R(Owned.get()), Rule(ActionRule::Auto),
      Custom(std::move(P)) {}

Expected<int64_t> Agent::act() {
  if (!R)
    return Status(ErrorCode::InvalidArgument, "agent without a runner");
  if (!Custom)
    return R->evaluateAction({}, Rule);
  if (!R->adviceSpec())
    if (Status S = R->setAdviceSpec(defaultActionSpec(Rule)); !S.isOk())
      return S;
  if (Status S = R->evaluateRaw(); !S.isOk())
    return S;
  return Custom(R->advice());
}

// ---- Driver --------------------------------------------------------------

Status Driver::addAgent(std::string Name, Agent A) {
  if (Agents.count(Name))
    return Status(ErrorCode::InvalidArgument,
                  "agent '" + Name + "' is added twice");
  Agents.emplace(std::move(Name), std::move(A));
  return Status::ok();
}

Agent *Driver::agent(std::string_view Name) {
  auto It = Agents.find(Name);
  return It == Agents.end() ? nullptr : &It->second;
}

Expected<Agent *> Driver::pick(const std::string &Name) {
  if (Name.empty()) {
    if (Agents.size() == 1)
      return &Agents.begin()->second;
    return Status(ErrorCode::InvalidArgument,
                  Agents.empty() ? std::string("the driver has no agents")
                                 : "the environment did not choose an agent "
                                   "(setNextAgent) and there are " +
                                       std::to_string(Agents.size()));
  }
  auto It = Agents.find(Name);
  if (It != Agents.end())
    return &It->second;
  std::string Known;
  for (const auto &KV : Agents)
    Known += (Known.empty() ? "'" : ", '") + KV.first + "'";
  return Status(ErrorCode::InvalidArgument,
                "the environment chose agent '" + Name +
                    "', which the driver does not have (agents: " +
                    (Known.empty() ? std::string("none") : Known) + ")");
}

Expected<EpisodeResult> Driver::runEpisode(const EpisodeOptions &Options) {
  if (Agents.empty())
    return Status(ErrorCode::InvalidArgument, "the driver has no agents");
  Env->Done = false;
  Env->Next.clear();
  if (Status S = Env->reset(); !S.isOk())
    return S.addContext("environment reset");

  if (!Options.Context.empty()) {
    std::vector<ModelRunner *> Seen;
    for (auto &KV : Agents) {
      ModelRunner *Runner = &KV.second.runner();
      bool Done = false;
      for (ModelRunner *P : Seen)
        Done = Done || P == Runner;
      if (Done)
        continue;
      Seen.push_back(Runner);
      if (Status S = Runner->switchContext(Options.Context); !S.isOk())
        return S.addContext("agent '" + KV.first + "': switching context");
    }
  }

  EpisodeResult Result;
  for (size_t Step = 0; !Env->isDone(); ++Step) {
    if (Step >= Options.MaxSteps)
      return Status(ErrorCode::Timeout,
                    "the episode did not end within " +
                        std::to_string(Options.MaxSteps) + " steps");
    Expected<Agent *> Picked = pick(Env->nextAgent());
    if (!Picked)
      return Picked.takeStatus().addContext("step " + std::to_string(Step));
    Agent &A = **Picked;
    // The agent's name as stored in the map (stable for the episode).
    std::string_view Name;
    for (const auto &KV : Agents)
      if (&KV.second == &A)
        Name = KV.first;
    auto Where = [&] {
      return "step " + std::to_string(Step) + ", agent '" +
             std::string(Name) + "'";
    };

    if (Status S = Env->observe(A.runner()); !S.isOk())
      return S.addContext(Where() + ": environment observe");
    Action Act;
    Act.Agent = Name;
    Act.Step = Step;
    Expected<int64_t> Decision = A.act();
    if (Decision) {
      Act.Index = *Decision;
      Act.Output = &A.output();
    } else {
      std::optional<int64_t> Fallback = Env->fallbackAction();
      if (!Fallback)
        return Decision.takeStatus().addContext(Where());
      A.runner().report(Severity::Warning,
                        Where() + ": model failed, using the environment's "
                                  "fallback action: " +
                            Decision.status().toString());
      Act.Index = *Fallback;
      Act.FromFallback = true;
      ++Result.FallbackSteps;
    }
    if (Options.OnDecision)
      Options.OnDecision(Act);
    if (Status S = Env->step(Act); !S.isOk())
      return S.addContext(Where() + ": environment step");
    ++Result.Steps;
  }
  return Result;
}

} // namespace mlbridge::rl
