/* Compiled as C99 and C11 with -Wall -Wextra -Wpedantic -Werror by ctest. */
#include "mlbridge/c/grpc.h"

int use_grpc_c_api(void) {
  mlb_grpc_options o;
  mlb_runner *r = 0;
  int port = 0;
  mlb_grpc_options_init(&o);
  o.mode = MLB_GRPC_TRAINING;
  if (mlb_grpc_runner_create("127.0.0.1:0", &o, &r) != MLB_OK)
    return -1;
  mlb_grpc_runner_port(r, &port);
  mlb_grpc_runner_end_session(r);
  mlb_runner_destroy(r);
  return port;
}

int use_protobuf_serdes(void) {
  mlb_pipe_options o;
  mlb_runner *r = 0;
  mlb_pipe_options_init(&o);
  o.protobuf_serdes = mlb_protobuf_serdes();
  if (mlb_pipe_runner_create("/tmp/mlb", MLB_SERDES_PROTOBUF, &o, &r) != MLB_OK)
    return -1;
  mlb_runner_destroy(r);
  return 0;
}
