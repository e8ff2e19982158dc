/*===- mlbridge/c/rl.h - C API: RL episodes with callbacks ---------*- C -*-===
 *
 * Runs an episode of a C environment against agents that are mlb_runner
 * handles (ONNX in-process, or a pipe to a Python agent): the environment
 * is three callbacks. Valid C99 and C11.
 *
 *   static mlb_status my_observe(void *u, const char *agent, mlb_runner *r) {
 *     return mlb_set_float_array(r, "obs", state_of(u), 8);
 *   }
 *   ...
 *   mlb_rl_env env = {&state, my_reset, my_observe, my_step};
 *   const char *names[] = {"pass"};
 *   mlb_runner *runners[] = {runner};
 *   size_t steps;
 *   mlb_rl_run_episode(&env, names, runners, 1, 1000, &steps);
 *
 * Each agent's action is the argmax of its model's output, or the integer
 * the model sent (a single integer output). A callback's non-MLB_OK return
 * ends the episode with that status.
 *
 *===----------------------------------------------------------------------===*/
#ifndef MLBRIDGE_C_RL_H
#define MLBRIDGE_C_RL_H

#include "mlbridge/c/mlbridge.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mlb_rl_env {
  void *user_data;
  /** Starts an episode. May set *first_agent (NULL: the first agent given);
   *  may set *done to make an empty episode. */
  mlb_status (*reset)(void *user_data, const char **first_agent, int *done);
  /** Writes the observation of `agent` into its runner (mlb_set_* calls). */
  mlb_status (*observe)(void *user_data, const char *agent, mlb_runner *runner);
  /** Applies `action` chosen by `agent`. Set *done non-zero to end the
   *  episode; set *next_agent to hand over (left NULL: the same agent). The
   *  name is copied at once. */
  mlb_status (*step)(void *user_data, const char *agent, int64_t action,
                     int *done, const char **next_agent);
} mlb_rl_env;

/** One decision: evaluates the runner and decodes its advice as an action
 *  in [0, action_count): the value of an integer (or bool) advice of one
 *  element, else the index of the largest element of a numeric advice (one
 *  score per action; the first on ties). The advice's dtype is checked: a
 *  string, or a NaN score, is MLB_ERR_TYPE_MISMATCH / MLB_ERR_MALFORMED;
 *  an action outside the range is MLB_ERR_MALFORMED. A runner without an
 *  advice spec (mlb_set_advice_spec, mlb_runner_settings.advice) declares
 *  int64 "action" [1]. The C++ API's ModelRunner::evaluateAction is the
 *  same rule. */
mlb_status mlb_evaluate_action(mlb_runner *runner, int64_t action_count,
                               int64_t *action);

/** Runs one episode. agent_names[i] acts through agent_runners[i] (borrowed;
 *  two names may share a runner). More than max_steps decisions is
 *  MLB_ERR_TIMEOUT. *steps (may be NULL) receives the decisions taken, also
 *  on error. */
mlb_status mlb_rl_run_episode(const mlb_rl_env *env,
                              const char *const *agent_names,
                              mlb_runner *const *agent_runners,
                              size_t agent_count, size_t max_steps,
                              size_t *steps);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MLBRIDGE_C_RL_H */
