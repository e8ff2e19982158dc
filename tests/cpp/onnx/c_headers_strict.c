/* Compiled with -std=c99/-std=c11 -Wall -Wextra -Wpedantic -Werror by ctest:
 * the ONNX and RL C API headers are valid, warning-free C. */
#include "mlbridge/c/onnx.h"
#include "mlbridge/c/rl.h"

int mlb_onnx_header_check(void);
int mlb_onnx_header_check(void) {
  mlb_onnx_options opts;
  mlb_rl_env env = {0, 0, 0, 0};
  mlb_onnx_options_init(&opts);
  (void)env;
  return opts.intra_op_threads + (int)MLB_OK;
}
