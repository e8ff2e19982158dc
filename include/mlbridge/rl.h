//===- mlbridge/rl.h - Environments, agents, episodes -----------*- C++ -*-===//
//
// Reinforcement-learning style passes (phase ordering, register allocation,
// ...) take many decisions per compilation, sometimes by several agents.
// This header separates the three parts so that the pass is written once and
// runs against any model:
//
//  * Environment -- the pass's side: its state, what an agent observes, how
//    an action changes the state, when the episode is done and which agent
//    acts next. Written once, knows nothing about models.
//  * Agent -- a ModelRunner plus the rule that turns the model's output into
//    a discrete action (argmax over scores, or the integer the model sent),
//    or any policy of your own over the raw output.
//  * Driver -- runs episodes: reset, then observe / act / step until done,
//    asking the agent the environment names (a map name -> agent).
//
// Because an Agent only needs a ModelRunner, the same environment runs
// against a Python agent over pipes (PipeModelRunner; the Python side picks
// the action) while training and against an in-process ONNX model
// (OnnxModelRunner; the agent takes the argmax) when deployed -- swap the
// runner, keep the pass (examples/rl/).
//
//   class MyEnv : public rl::Environment { ... };
//   MyEnv Env(Function);
//   rl::Driver D(Env);
//   D.addAgent("pass", *Runner);                 // any ModelRunner
//   Expected<rl::EpisodeResult> R = D.runEpisode();
//
// Nothing throws; every failure is a Status naming the step and the agent.
// A driver, its environment and its agents are used by one thread at a time
// (run independent episodes in parallel with one driver per thread).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_RL_H
#define MLBRIDGE_RL_H

#include "mlbridge/model_runner.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_value.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace mlbridge::rl {

/// How an agent turns its model's output into a discrete action: the rule
/// of every decision among actions (mlbridge/model_runner.h), named here
/// too for the RL API's users.
using ::mlbridge::ActionRule;
using ::mlbridge::decodeAction;

/// A policy of your own over the model's raw output (sampling, masking
/// illegal actions, thresholds, ...).
using Policy = std::function<Expected<int64_t>(const TensorValue &Output)>;

/// One decision, as the environment's step() sees it.
struct Action {
  std::string_view Agent;              ///< who decided
  int64_t Index = 0;                   ///< the action
  const TensorValue *Output = nullptr; ///< the model's raw output (nullptr
                                       ///< for a fallback); valid in step()
  bool FromFallback = false;           ///< the model failed; this is the
                                       ///< environment's fallbackAction()
  size_t Step = 0;                     ///< 0-based, within the episode
};

/// The pass's side of an episode. Subclass it; the driver calls reset()
/// once, then observe() / step() for each decision until isDone().
class Environment {
public:
  virtual ~Environment();

  /// Starts an episode: set up the state and, with several agents, choose
  /// the first one (setNextAgent). The driver has cleared the done flag and
  /// the next agent before calling. Calling setDone() here makes an empty
  /// episode.
  virtual Status reset() = 0;
  /// Writes the observation for the agent about to act (nextAgent()) into
  /// the features of its runner: Runner.setFeature(...) or getTensor<T>().
  virtual Status observe(ModelRunner &Runner) = 0;
  /// Applies the action; may call setDone() and setNextAgent().
  virtual Status step(const Action &A) = 0;
  /// The action to take when the acting agent's model fails (a dead peer,
  /// a broken model): e.g. what the compiler's heuristic would do. The
  /// default, std::nullopt, ends the episode with the model's error.
  virtual std::optional<int64_t> fallbackAction() { return std::nullopt; }

  bool isDone() const { return Done; }
  /// The agent that acts next; empty means "the only agent".
  const std::string &nextAgent() const { return Next; }

protected:
  Environment() = default;
  void setDone(bool D = true) { Done = D; }
  void setNextAgent(std::string Name) { Next = std::move(Name); }

private:
  friend class Driver;
  bool Done = false;
  std::string Next;
};

/// A model that acts: a runner (borrowed or owned) and a way to read an
/// action from its output.
class Agent {
public:
  /// Borrows Runner (it must outlive the agent).
  explicit Agent(ModelRunner &Runner, ActionRule Rule = ActionRule::Auto);
  /// Owns Runner.
  explicit Agent(std::unique_ptr<ModelRunner> Runner,
                 ActionRule Rule = ActionRule::Auto);
  /// Borrows Runner and decides with a policy of your own.
  Agent(ModelRunner &Runner, Policy P);
  Agent(std::unique_ptr<ModelRunner> Runner, Policy P);

  Agent(Agent &&) = default;
  Agent &operator=(Agent &&) = default;

  ModelRunner &runner() { return *R; }
  const ModelRunner &runner() const { return *R; }

  /// Evaluates the runner on its current features and returns the action.
  /// A runner without an advice spec is given one first: int64 "action" [1]
  /// for Value/Auto, float "scores" [-1] for Argmax (a Python agent over
  /// pipes then knows what to answer).
  Expected<int64_t> act();
  /// The model's raw output of the last act() (the runner's advice).
  const TensorValue &output() const { return R->advice(); }

private:
  std::unique_ptr<ModelRunner> Owned;
  ModelRunner *R;
  ActionRule Rule;
  Policy Custom;
};

/// Settings of one episode.
struct EpisodeOptions {
  /// An episode still running after this many steps fails with Timeout.
  size_t MaxSteps = 100000;
  /// If not empty, every agent's runner gets switchContext(Context) before
  /// the first step (a pipe peer then sees which program this is).
  std::string Context;
  /// Called after each decision, before step() (tracing, logging).
  std::function<void(const Action &)> OnDecision;
};

struct EpisodeResult {
  size_t Steps = 0;         ///< decisions taken
  size_t FallbackSteps = 0; ///< of which by fallbackAction()
};

/// Runs episodes of one environment with a set of named agents.
class Driver {
public:
  explicit Driver(Environment &Env) : Env(&Env) {}

  /// Adds an agent under Name (error if the name is taken). Several names
  /// may share one runner.
  Status addAgent(std::string Name, Agent A);
  Status addAgent(std::string Name, ModelRunner &Runner,
                  ActionRule Rule = ActionRule::Auto) {
    return addAgent(std::move(Name), Agent(Runner, Rule));
  }
  Status addAgent(std::string Name, std::unique_ptr<ModelRunner> Runner,
                  ActionRule Rule = ActionRule::Auto) {
    return addAgent(std::move(Name), Agent(std::move(Runner), Rule));
  }
  /// The agent called Name, or nullptr.
  Agent *agent(std::string_view Name);
  size_t agentCount() const { return Agents.size(); }

  /// One episode: reset, then observe / act / step until the environment
  /// is done. Errors name the step and the agent; an unknown agent name
  /// from the environment is InvalidArgument.
  Expected<EpisodeResult> runEpisode(const EpisodeOptions &Options = {});

private:
  Expected<Agent *> pick(const std::string &Name);

  Environment *Env;
  std::map<std::string, Agent, std::less<>> Agents;
};

} // namespace mlbridge::rl

#endif // MLBRIDGE_RL_H
