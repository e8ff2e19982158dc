/*===- mlbridge/c/grpc.h - C API of the gRPC runner ----------------*- C -*-===
 *
 * Creates a gRPC runner (generic tensor messages, proto/mlbridge.proto);
 * it is then used exactly like a pipe runner through mlbridge/c/mlbridge.h
 * (mlb_set_*, mlb_evaluate_*, mlb_runner_destroy). Link MLBridge::grpc.
 * Valid C99 and C11.
 *
 *   mlb_grpc_options o;
 *   mlb_grpc_options_init(&o);
 *   o.connect_timeout_ms = 2000;
 *   mlb_runner *r;
 *   if (mlb_grpc_runner_create("127.0.0.1:50051", &o, &r) != MLB_OK)
 *     fprintf(stderr, "%s\n", mlb_last_error());
 *
 *===----------------------------------------------------------------------===*/
#ifndef MLBRIDGE_C_GRPC_H
#define MLBRIDGE_C_GRPC_H

#include "mlbridge/c/mlbridge.h"
#include "mlbridge/c/settings.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mlb_grpc_mode {
  MLB_GRPC_INFERENCE = 0, /**< the model serves; this runner calls it */
  MLB_GRPC_TRAINING = 1   /**< this runner serves; the trainer calls it */
} mlb_grpc_mode;

/** Options of a gRPC runner; initialise with mlb_grpc_options_init. */
typedef struct mlb_grpc_options {
  int mode;                  /**< an mlb_grpc_mode (default MLB_GRPC_INFERENCE) */
  int call_timeout_ms;       /**< per call / wait for an action (30000) */
  int connect_timeout_ms;    /**< budget to reach the server (5000) */
  size_t max_message_bytes;  /**< both directions (64 MiB) */
  int use_tls;               /**< non-zero: TLS with the files below */
  const char *root_cert_file; /**< PEM; client: verifies the server */
  const char *cert_file;      /**< PEM; server (or mutual-TLS client) */
  const char *key_file;       /**< PEM private key for cert_file */
  const char *server_name;    /**< client: name expected in the cert */
  int diagnostics_to_stderr;  /**< non-zero: warnings to stderr (0) */
} mlb_grpc_options;

/** Fills *opts with the defaults (all strings NULL). */
void mlb_grpc_options_init(mlb_grpc_options *opts);

/** Creates a gRPC runner. Inference mode: address of the model server
 *  ("host:port"). Training mode: where to listen ("127.0.0.1:0" picks a
 *  port; see mlb_grpc_runner_port); the server runs when this returns.
 *  opts may be NULL for defaults. On failure *out is NULL. */
mlb_status mlb_grpc_runner_create(const char *address,
                                  const mlb_grpc_options *opts,
                                  mlb_runner **out);

/** Training mode: the port the runner listens on (*port = 0 in inference
 *  mode). MLB_ERR_INVALID_ARGUMENT if runner is not a gRPC runner. */
mlb_status mlb_grpc_runner_port(const mlb_runner *runner, int *port);

/** Ends the session (the model, or the trainer, is told); later
 *  evaluations fail. Also done by mlb_runner_destroy. */
mlb_status mlb_grpc_runner_end_session(mlb_runner *runner);

/** The Protobuf SerDes, for the protobuf_serdes field of mlb_pipe_options
 *  and mlb_shm_options (MLB_SERDES_PROTOBUF); a constant, never NULL. As
 *  mlbridge::createProtobufSerDes for StreamOptions::ProtobufSerDes in C++. */
const mlb_serdes_factory *mlb_protobuf_serdes(void);

/** The grpc runner of mlb_runner_create_from_settings (mlbridge/c/settings.h):
 *  set settings.grpc to this function to make it available there. Uses
 *  the server settings->server with settings->timeout_ms as call and connect timeouts. */
mlb_status mlb_grpc_runner_from_settings(const mlb_runner_settings *settings,
                                         mlb_runner **out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MLBRIDGE_C_GRPC_H */
