// C API of the RL driver (mlbridge/c/rl.h): a C environment (callbacks)
// wrapped in an rl::Environment, run by rl::Driver.
#include "capi/capi_internal.h"

#include "mlbridge/c/rl.h"
#include "mlbridge/rl.h"

using namespace mlbridge;
using capi::fail;

namespace {

Status callbackError(mlb_status S, const char *Which) {
  return Status(static_cast<ErrorCode>(S),
                std::string("environment callback '") + Which +
                    "' returned " + mlb_status_name(S));
}

bool validStatus(mlb_status S) {
  return static_cast<int>(S) >= 0 &&
         static_cast<int>(S) <= static_cast<int>(MLB_ERR_INTERNAL);
}

class CEnvironment final : public rl::Environment {
public:
  CEnvironment(const mlb_rl_env &Env, const std::vector<mlb_runner *> &Handles,
               const std::vector<ModelRunner *> &Runners)
      : Env(Env), Handles(Handles), Runners(Runners) {}

  Status reset() override {
    const char *First = nullptr;
    int IsDone = 0;
    if (mlb_status S = Env.reset(Env.user_data, &First, &IsDone))
      return check(S, "reset");
    setNextAgent(First ? First : DefaultAgent); // NULL: the first agent given
    if (IsDone)
      setDone();
    return Status::ok();
  }

  Status observe(ModelRunner &Runner) override {
    mlb_runner *Handle = nullptr;
    for (size_t K = 0; K < Runners.size(); ++K)
      if (Runners[K] == &Runner)
        Handle = Handles[K];
    if (mlb_status S = Env.observe(Env.user_data, nextAgent().c_str(), Handle))
      return check(S, "observe");
    return Status::ok();
  }

  Status step(const rl::Action &A) override {
    int IsDone = 0;
    const char *Next = nullptr;
    AgentName.assign(A.Agent.data(), A.Agent.size());
    if (mlb_status S =
            Env.step(Env.user_data, AgentName.c_str(), A.Index, &IsDone, &Next))
      return check(S, "step");
    if (Next)
      setNextAgent(Next);
    if (IsDone)
      setDone();
    return Status::ok();
  }

  const char *DefaultAgent = "";

private:
  static Status check(mlb_status S, const char *Which) {
    if (!validStatus(S))
      S = MLB_ERR_INTERNAL;
    return callbackError(S, Which);
  }

  const mlb_rl_env &Env;
  const std::vector<mlb_runner *> &Handles;
  const std::vector<ModelRunner *> &Runners;
  std::string AgentName;
};

} // namespace

extern "C" mlb_status mlb_rl_run_episode(const mlb_rl_env *Env,
                                         const char *const *Names,
                                         mlb_runner *const *Handles,
                                         size_t Count, size_t MaxSteps,
                                         size_t *Steps) {
  if (Steps)
    *Steps = 0;
  MLB_CHECK_ARG(Env, "environment");
  if (!Env->reset || !Env->observe || !Env->step)
    return fail(ErrorCode::InvalidArgument,
                "the environment needs reset, observe and step callbacks");
  if (Count == 0 || !Names || !Handles)
    return fail(ErrorCode::InvalidArgument, "no agents");
  std::vector<mlb_runner *> HandleList;
  std::vector<ModelRunner *> Runners;
  for (size_t K = 0; K < Count; ++K) {
    if (!Names[K] || !Handles[K] || !Handles[K]->Runner)
      return fail(Status(ErrorCode::InvalidArgument,
                         "agent " + std::to_string(K) +
                             ": null name or runner"));
    HandleList.push_back(Handles[K]);
    Runners.push_back(Handles[K]->Runner.get());
  }
  CEnvironment E(*Env, HandleList, Runners);
  E.DefaultAgent = Names[0];
  rl::Driver D(E);
  for (size_t K = 0; K < Count; ++K)
    if (Status S = D.addAgent(Names[K], *Runners[K]); !S.isOk())
      return fail(S);

  rl::EpisodeOptions O;
  O.MaxSteps = MaxSteps;
  size_t Taken = 0;
  O.OnDecision = [&](const rl::Action &) { ++Taken; };
  Expected<rl::EpisodeResult> R = D.runEpisode(O);
  if (Steps)
    *Steps = R ? R->Steps : Taken;
  if (!R)
    return fail(R.status());
  return MLB_OK;
}

extern "C" mlb_status mlb_evaluate_action(mlb_runner *R, int64_t ActionCount,
                                          int64_t *Action) {
  MLB_CHECK_RUNNER(R);
  MLB_CHECK_ARG(Action, "action pointer");
  Expected<int64_t> A = R->Runner->evaluateAction();
  if (!A)
    return fail(A.status());
  if (*A < 0 || *A >= ActionCount)
    return fail(Status(ErrorCode::Malformed,
                       "the model answered action " + std::to_string(*A) +
                           " (0.." + std::to_string(ActionCount - 1) + ")"));
  *Action = *A;
  return MLB_OK;
}
