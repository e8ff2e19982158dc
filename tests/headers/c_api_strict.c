/* Compiled with -std=c99/-std=c11 -Wall -Wextra -Wpedantic -Werror by ctest:
 * the C API header must be valid, warning-free C. */
#include "mlbridge/c/mlbridge.h"

int mlb_header_check(void);
int mlb_header_check(void) {
  mlb_pipe_options opts;
  mlb_pipe_options_init(&opts);
  return (int)MLB_OK + (int)MLB_SERDES_JSON + (int)MLB_STRING;
}
