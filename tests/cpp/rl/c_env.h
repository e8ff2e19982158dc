/* A C environment for the C API episode tests (compiled as C11): a
 * scripted multi-agent schedule, recording what the driver did. */
#ifndef MLBRIDGE_TESTS_RL_C_ENV_H
#define MLBRIDGE_TESTS_RL_C_ENV_H

#include "mlbridge/c/rl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define C_ENV_MAX 64

typedef struct c_env_state {
  /* configuration */
  int steps;                      /* episode length */
  const char *schedule[C_ENV_MAX]; /* agent acting at step i (NULL: keep) */
  int obs_size;                   /* floats written to feature "obs" */
  mlb_status fail_reset, fail_observe, fail_step; /* injected failures */
  /* record */
  int resets, step;
  char observed_by[C_ENV_MAX][16];
  char acted_by[C_ENV_MAX][16];
  int64_t actions[C_ENV_MAX];
  float last_obs[16];
} c_env_state;

/* The callbacks, bound to a c_env_state through user_data. */
mlb_rl_env c_env_make(c_env_state *state);

#ifdef __cplusplus
}
#endif

#endif
