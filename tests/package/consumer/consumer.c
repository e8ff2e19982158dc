/* Built with `pkg-config --cflags --libs mlbridge` against the install. */
#include <mlbridge/c/mlbridge.h>

#include <stdio.h>

int main(int argc, char **argv) {
  mlb_pipe_options opts;
  mlb_runner *runner;
  int advice;
  if (argc != 2)
    return 2;
  mlb_pipe_options_init(&opts);
  opts.open_timeout_ms = 200;
  if (mlb_pipe_runner_create(argv[1], MLB_SERDES_JSON, &opts, &runner))
    return 3;
  mlb_set_int(runner, "x", 1);
  if (mlb_evaluate_int(runner, &advice) != MLB_ERR_NOT_FOUND)
    return 4;
  printf("c consumer ok: %s\n", mlb_last_error());
  mlb_runner_destroy(runner);
  return 0;
}
