/* Compiled with -std=c99/-std=c11 -Wall -Wextra -Wpedantic -Werror by ctest:
 * the C API header must be valid, warning-free C. */
#include "mlbridge/c/mlbridge.h"
#include "mlbridge/c/rl.h"
#include "mlbridge/c/settings.h"
#include "mlbridge/c/training_log.h"

int mlb_header_check(void);
int mlb_header_check(void) {
  mlb_pipe_options opts;
  mlb_runner_settings settings;
  mlb_pipe_options_init(&opts);
  opts.protobuf_serdes = NULL;
  mlb_runner_settings_init(&settings);
  (void)mlb_runner_kind_name(mlb_runner_settings_resolve(&settings));
  mlb_training_log_destroy(NULL);
  (void)mlb_pipe_runner_set_session_ids(NULL, 0);
  (void)mlb_runner_input_count(NULL);
  (void)mlb_dtype_name(MLB_FLOAT);
  return (int)MLB_OK + (int)MLB_SERDES_JSON + (int)MLB_SERDES_PROTOBUF +
         (int)MLB_STRING;
}
