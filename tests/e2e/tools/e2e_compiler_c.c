/* mlbridge-e2e-compiler-c: a C program driving the C API against a Python
 * model (tests/e2e/test_pipe_e2e.py). Prints one JSON object per result.
 * usage: mlbridge-e2e-compiler-c <base> <bitstream|json> [shm]
 * (with "shm", <base> is the shared-memory model's socket path). */
#include "mlbridge/c/mlbridge.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

static void check(const char *what, mlb_status st) {
  if (st != MLB_OK) {
    printf("{\"event\":\"error\",\"where\":\"%s\",\"code\":\"%s\"}\n", what,
           mlb_status_name(st));
    ++failures;
  }
}

int main(int argc, char **argv) {
  mlb_runner *r;
  mlb_pipe_options opts;
  mlb_shm_options shm_opts;
  mlb_serdes serdes;
  int ia[3] = {1, 2, 3};
  int64_t la[2] = {4, 5};
  float fa[2] = {0.5f, 1.5f};
  double da[1] = {2.5};
  bool ba[2] = {true, false};
  int vi = 0;
  int64_t vl = 0;
  float vf = 0;
  double vd = 0;
  bool vb = true;
  float out_f[4];
  int64_t out_l[4];
  double out_d[4];
  size_t n = 0;
  mlb_status st;

  if (argc != 3 && !(argc == 4 && strcmp(argv[3], "shm") == 0))
    return 2;
  serdes = strcmp(argv[2], "json") == 0 ? MLB_SERDES_JSON : MLB_SERDES_BITSTREAM;
  if (argc == 4) {
    mlb_shm_options_init(&shm_opts);
    shm_opts.open_timeout_ms = 10000;
    shm_opts.reply_timeout_ms = 10000;
    check("create", mlb_shm_runner_create(argv[1], serdes, &shm_opts, &r));
  } else {
    mlb_pipe_options_init(&opts);
    opts.open_timeout_ms = 10000;
    opts.reply_timeout_ms = 10000;
    check("create", mlb_pipe_runner_create(argv[1], serdes, &opts, &r));
  }
  if (failures)
    return 1;

  check("set i", mlb_set_int(r, "i", 7));
  check("set l", mlb_set_int64(r, "l", INT64_C(-9000000000)));
  check("set f", mlb_set_float(r, "f", 0.5f));
  check("set d", mlb_set_double(r, "d", 0.25));
  check("set b", mlb_set_bool(r, "b", true));
  check("set s", mlb_set_string(r, "s", "h\xC3\xA9llo"));
  check("set ia", mlb_set_int_array(r, "ia", ia, 3));
  check("set la", mlb_set_int64_array(r, "la", la, 2));
  check("set fa", mlb_set_float_array(r, "fa", fa, 2));
  check("set da", mlb_set_double_array(r, "da", da, 1));
  check("set ba", mlb_set_bool_array(r, "ba", ba, 2));
  check("context", mlb_switch_context(r, "c-main"));

  check("eval int", mlb_evaluate_int(r, &vi));
  check("eval int64", mlb_evaluate_int64(r, &vl));
  check("eval float", mlb_evaluate_float(r, &vf));
  check("eval double", mlb_evaluate_double(r, &vd));
  check("eval bool", mlb_evaluate_bool(r, &vb));
  check("eval float[]", mlb_evaluate_float_array(r, out_f, 4, &n));
  printf("{\"event\":\"float_array\",\"n\":%zu,\"v0\":%g,\"v1\":%g}\n", n,
         n > 0 ? out_f[0] : -1.0, n > 1 ? out_f[1] : -1.0);
  check("eval int64[]", mlb_evaluate_int64_array(r, out_l, 4, &n));
  printf("{\"event\":\"int64_array\",\"n\":%zu,\"v\":[%" PRId64 ",%" PRId64
         ",%" PRId64 "]}\n",
         n, out_l[0], out_l[1], out_l[2]);
  check("eval double[]", mlb_evaluate_double_array(r, out_d, 4, &n));
  printf("{\"event\":\"double_array\",\"n\":%zu}\n", n);

  printf("{\"event\":\"scalars\",\"int\":%d,\"int64\":%" PRId64
         ",\"float\":%g,\"double\":%g,\"bool\":%s}\n",
         vi, vl, vf, vd, vb ? "true" : "false");

  /* Errors are values: a wrong type and a too-small output buffer. */
  st = mlb_evaluate_int64_array(r, out_l, 1, &n);
  printf("{\"event\":\"small_buffer\",\"code\":\"%s\",\"n\":%zu}\n",
         mlb_status_name(st), n);
  st = mlb_set_int(r, "f", 1);
  printf("{\"event\":\"wrong_type\",\"code\":\"%s\",\"has_message\":%s}\n",
         mlb_status_name(st), strstr(mlb_last_error(), "'f'") ? "true" : "false");

  mlb_runner_destroy(r);
  printf("{\"event\":\"done\",\"ok\":%s}\n", failures ? "false" : "true");
  return failures ? 1 : 0;
}
