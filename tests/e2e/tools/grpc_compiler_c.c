/* mlbridge-grpc-e2e-compiler-c: a C "compiler" using the C API of the gRPC
 * runner against a Python model (tests/e2e/test_grpc_e2e.py). Prints one
 * JSON object per result. Usage: mlbridge-grpc-e2e-compiler-c ADDRESS */
#include "mlbridge/c/grpc.h"
#include "mlbridge/c/mlbridge.h"

#include <stdio.h>

int main(int argc, char **argv) {
  mlb_grpc_options o;
  mlb_runner *r = NULL;
  int64_t l = 0;
  float fa[3] = {1.5f, 2.5f, -4.0f};
  float out[4];
  size_t n = 0;
  double d = 0;
  int port = -1;
  mlb_status st;
  if (argc != 2)
    return 2;
  mlb_grpc_options_init(&o);
  o.connect_timeout_ms = 5000;
  o.call_timeout_ms = 10000;
  if (mlb_grpc_runner_create(argv[1], &o, &r) != MLB_OK) {
    printf("{\"event\":\"error\",\"where\":\"create\",\"message\":\"%s\"}\n",
           mlb_last_error());
    return 1;
  }
  mlb_grpc_runner_port(r, &port);
  printf("{\"event\":\"port\",\"port\":%d}\n", port);
  mlb_switch_context(r, "c-main");
  mlb_set_int64(r, "l", -9000000000LL);
  mlb_set_float_array(r, "fa", fa, 3);
  mlb_set_string(r, "s", "h\xC3\xA9llo");
  mlb_set_bool(r, "b", true);
  st = mlb_evaluate_int64(r, &l);
  printf("{\"event\":\"int64\",\"status\":\"%s\",\"value\":%lld}\n",
         mlb_status_name(st), (long long)l);
  st = mlb_evaluate_float_array(r, out, 4, &n);
  printf("{\"event\":\"float_array\",\"status\":\"%s\",\"n\":%zu,\"v0\":%g}\n",
         mlb_status_name(st), n, n ? out[0] : 0.0);
  /* The model answers double requests with an error: the runner reports
   * it and stays usable. */
  st = mlb_evaluate_double(r, &d);
  printf("{\"event\":\"model_error\",\"status\":\"%s\"}\n", mlb_status_name(st));
  st = mlb_evaluate_int64(r, &l);
  printf("{\"event\":\"after_error\",\"status\":\"%s\",\"value\":%lld}\n",
         mlb_status_name(st), (long long)l);
  st = mlb_grpc_runner_end_session(r);
  printf("{\"event\":\"end\",\"status\":\"%s\"}\n", mlb_status_name(st));
  mlb_runner_destroy(r);
  return 0;
}
