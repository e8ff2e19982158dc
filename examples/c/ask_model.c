/* The shortest C compiler-side program: ask a model over named pipes.
 * Start the model first:  python examples/python/serve_model.py /tmp/mlb
 * then:                   ./ask_model_c /tmp/mlb */
#include "mlbridge/c/mlbridge.h"

#include <stdio.h>

int main(int argc, char **argv) {
  mlb_runner *runner;
  int decision = 0; /* the fallback */
  if (argc != 2) {
    fprintf(stderr, "usage: %s <pipe base path>\n", argv[0]);
    return 2;
  }
  if (mlb_pipe_runner_create(argv[1], MLB_SERDES_BITSTREAM, NULL, &runner)) {
    fprintf(stderr, "%s\n", mlb_last_error());
    return 1;
  }
  mlb_set_int(runner, "callee_size", 42);
  mlb_set_float(runner, "hotness", 0.75f);
  if (mlb_evaluate_int(runner, &decision) != MLB_OK)
    fprintf(stderr, "model failed, using fallback: %s\n", mlb_last_error());
  printf("decision: %d\n", decision);
  mlb_runner_destroy(runner);
  return 0;
}
