/* See c_env.h. Observation: obs[k] = step + k / 10. */
#include "c_env.h"

#include <string.h>

static void copy_name(char *dst, const char *src) {
  strncpy(dst, src ? src : "(null)", 15);
  dst[15] = '\0';
}

static mlb_status c_reset(void *user, const char **first_agent, int *done) {
  c_env_state *s = (c_env_state *)user;
  if (s->fail_reset != MLB_OK)
    return s->fail_reset;
  s->resets++;
  s->step = 0;
  *first_agent = s->schedule[0];
  *done = s->steps == 0;
  return MLB_OK;
}

static mlb_status c_observe(void *user, const char *agent, mlb_runner *runner) {
  c_env_state *s = (c_env_state *)user;
  int k;
  if (s->fail_observe != MLB_OK)
    return s->fail_observe;
  copy_name(s->observed_by[s->step], agent);
  for (k = 0; k < s->obs_size && k < 16; ++k)
    s->last_obs[k] = (float)s->step + (float)k / 10.0f;
  return mlb_set_float_array(runner, "obs", s->last_obs, (size_t)s->obs_size);
}

static mlb_status c_step(void *user, const char *agent, int64_t action,
                         int *done, const char **next_agent) {
  c_env_state *s = (c_env_state *)user;
  if (s->fail_step != MLB_OK)
    return s->fail_step;
  copy_name(s->acted_by[s->step], agent);
  s->actions[s->step] = action;
  s->step++;
  *done = s->step >= s->steps;
  if (!*done && s->step < C_ENV_MAX)
    *next_agent = s->schedule[s->step];
  return MLB_OK;
}

mlb_rl_env c_env_make(c_env_state *state) {
  mlb_rl_env env;
  env.user_data = state;
  env.reset = c_reset;
  env.observe = c_observe;
  env.step = c_step;
  return env;
}
