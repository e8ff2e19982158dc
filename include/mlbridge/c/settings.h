/*===- mlbridge/c/settings.h - C API: a runner from settings -------*- C -*-===
 *
 * What every C program that consults a model would otherwise write itself:
 * the runner chosen and made from a handful of settings (which runner, the
 * channel / server / model file, the pipe format, one timeout), with the
 * same names and the same "auto" rule as the compiler plugins
 * (docs/c-tool.md). Valid C99 and C11.
 *
 *   mlb_runner_settings s;
 *   mlb_runner_settings_init(&s);
 *   s.advice = "pragma_action";
 *   mlb_runner_settings_set(&s, "channel", "/tmp/ch");  // as from --channel
 *   mlb_runner *r;
 *   mlb_runner_kind used;
 *   if (mlb_runner_create_from_settings(&s, &used, &r) != MLB_OK)
 *     fprintf(stderr, "%s\n", mlb_last_error());   // r is NULL: fall back
 *   else if (r) { ... mlb_evaluate_action(r, 7, &action) ... }
 *
 * The ONNX and gRPC runners live in their own libraries: a program that
 * links them says so by setting s.onnx = mlb_onnx_runner_from_settings
 * (mlbridge/c/onnx.h) and s.grpc = mlb_grpc_runner_from_settings
 * (mlbridge/c/grpc.h).
 *
 *===----------------------------------------------------------------------===*/
#ifndef MLBRIDGE_C_SETTINGS_H
#define MLBRIDGE_C_SETTINGS_H

#include "mlbridge/c/mlbridge.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Which runner answers. */
typedef enum mlb_runner_kind {
  /** pipe if a channel is set, else shm if a socket is set, else grpc if a
   *  server is set, else onnx if a model is set, else default (the C++
   *  rule, mlbridge/runner_settings.h, without compiled-in models). */
  MLB_RUNNER_AUTO = 0,
  /** No model: the program's own decision ("none" is accepted too). */
  MLB_RUNNER_DEFAULT = 1,
  MLB_RUNNER_PIPE = 2,
  MLB_RUNNER_GRPC = 3,
  MLB_RUNNER_ONNX = 4,
  MLB_RUNNER_SHM = 5
} mlb_runner_kind;

typedef struct mlb_runner_settings mlb_runner_settings;

/** Makes the runner of one optional component from the settings. */
typedef mlb_status (*mlb_runner_factory)(const mlb_runner_settings *settings,
                                         mlb_runner **out);

/** Initialise with mlb_runner_settings_init. Strings are borrowed: they
 *  must live until the runner is made. */
struct mlb_runner_settings {
  mlb_runner_kind kind;  /**< MLB_RUNNER_AUTO */
  const char *channel;   /**< pipe: FIFO base path ("<channel>.in/.out") */
  const char *server;    /**< grpc: host:port of the model server */
  const char *model;     /**< onnx: model file */
  mlb_serdes serdes;     /**< pipe: MLB_SERDES_BITSTREAM */
  int timeout_ms;        /**< open/connect and each decision: 30000 */
  /** The advice a pipe or gRPC model sends: an int64 [1] action of this
   *  name (NULL: "action"). An ONNX model's advice is its output. */
  const char *advice;
  mlb_runner_factory onnx; /**< NULL: the ONNX runner is not linked in */
  mlb_runner_factory grpc; /**< NULL: the gRPC runner is not linked in */
  const char *socket;    /**< shm: the model side's Unix socket */
};

/** Fills *settings with the defaults. */
void mlb_runner_settings_init(mlb_runner_settings *settings);

/** Sets one setting from its text, with the names of the plugins' options
 *  and their C++ parser (mlbridge::setRunnerSetting): "runner" (auto | pipe
 *  | shm | grpc | onnx | default | none), "channel", "socket", "server",
 *  "model", "format" (bitstream | json), "timeout-ms" (1 to 86400000).
 *  value is borrowed. An unknown key is MLB_ERR_NOT_FOUND; a bad
 *  value MLB_ERR_INVALID_ARGUMENT (mlb_last_error() says why). */
mlb_status mlb_runner_settings_set(mlb_runner_settings *settings,
                                   const char *key, const char *value);

/** "auto", "default", "pipe", "grpc", "onnx", "shm" (or "?"). */
const char *mlb_runner_kind_name(mlb_runner_kind kind);

/** The runner the settings choose (never MLB_RUNNER_AUTO). */
mlb_runner_kind mlb_runner_settings_resolve(const mlb_runner_settings *settings);

/** Makes the runner the settings choose; *kind (may be NULL) receives it.
 *  MLB_RUNNER_DEFAULT: MLB_OK with *out NULL. The pipe and shm runners are
 *  made by the C++ mlbridge::makeRunner, so no model side behaves the same
 *  in C and C++: a pipe channel whose FIFOs do not exist, or a socket
 *  nobody listens on, is MLB_ERR_NOT_FOUND at once (nothing waits for a
 *  model nobody started); once they exist, opening waits at most
 *  timeout_ms for the model. A runner whose component is not linked in is
 *  MLB_ERR_NOT_FOUND. On failure *out is NULL. */
mlb_status mlb_runner_create_from_settings(const mlb_runner_settings *settings,
                                           mlb_runner_kind *kind,
                                           mlb_runner **out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MLBRIDGE_C_SETTINGS_H */
