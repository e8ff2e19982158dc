/* The C API of the installed gRPC component. */
#include "mlbridge/c/grpc.h"

#include <stdio.h>

int main(void) {
  mlb_grpc_options o;
  mlb_runner *r = NULL;
  int port = 0;
  mlb_grpc_options_init(&o);
  o.mode = MLB_GRPC_TRAINING;
  if (mlb_grpc_runner_create("127.0.0.1:0", &o, &r) != MLB_OK) {
    fprintf(stderr, "%s\n", mlb_last_error());
    return 1;
  }
  mlb_grpc_runner_port(r, &port);
  mlb_runner_destroy(r);
  printf("grpc c consumer ok\n");
  return port > 0 ? 0 : 2;
}
