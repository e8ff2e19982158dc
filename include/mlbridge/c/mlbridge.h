/*===- mlbridge/c/mlbridge.h - C API -------------------------------*- C -*-===
 *
 * The C interface to ML-Compiler-Bridge, for compilers written in C. Valid
 * C99 and C11. A runner is an opaque handle; every call returns an
 * mlb_status (MLB_OK == 0 on success) and, on failure, leaves a message for
 * this thread in mlb_last_error(). Nothing here prints or exits.
 *
 *   mlb_runner *r;
 *   if (mlb_pipe_runner_create("/tmp/ch", MLB_SERDES_BITSTREAM, NULL, &r))
 *     fprintf(stderr, "%s\n", mlb_last_error());
 *   mlb_set_int64(r, "callee_users", 3);
 *   int64_t advice;
 *   if (mlb_evaluate_int64(r, &advice) != MLB_OK) advice = 0; // fallback
 *   mlb_runner_destroy(r);
 *
 *===----------------------------------------------------------------------===*/
#ifndef MLBRIDGE_C_MLBRIDGE_H
#define MLBRIDGE_C_MLBRIDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Same values and meaning as mlbridge::ErrorCode. */
typedef enum mlb_status {
  MLB_OK = 0,
  MLB_ERR_INVALID_ARGUMENT = 1,
  MLB_ERR_TYPE_MISMATCH = 2,
  MLB_ERR_MALFORMED = 3,
  MLB_ERR_TOO_LARGE = 4,
  MLB_ERR_TIMEOUT = 5,
  MLB_ERR_PEER_CLOSED = 6,
  MLB_ERR_NOT_FOUND = 7,
  MLB_ERR_IO = 8,
  MLB_ERR_UNAVAILABLE = 9,
  MLB_ERR_INTERNAL = 10
} mlb_status;

typedef enum mlb_serdes {
  MLB_SERDES_BITSTREAM = 0,
  MLB_SERDES_JSON = 1,
  /** Length-delimited protobuf messages (docs/protocol.md). Needs the gRPC
   *  component: link MLBridge::grpc and set the options' protobuf_serdes to
   *  mlb_protobuf_serdes() (mlbridge/c/grpc.h); otherwise creating a
   *  runner with it fails with MLB_ERR_INVALID_ARGUMENT. */
  MLB_SERDES_PROTOBUF = 2
} mlb_serdes;

/** Element types; same order as mlbridge::DType. */
typedef enum mlb_dtype {
  MLB_FLOAT = 0,
  MLB_DOUBLE = 1,
  MLB_INT8 = 2,
  MLB_INT16 = 3,
  MLB_INT32 = 4,
  MLB_INT64 = 5,
  MLB_UINT8 = 6,
  MLB_UINT16 = 7,
  MLB_UINT32 = 8,
  MLB_UINT64 = 9,
  MLB_BOOL = 10,
  MLB_STRING = 11
} mlb_dtype;

typedef struct mlb_runner mlb_runner;

/** Makes a SerDes the core library does not build in; given by the
 *  component that has it (mlb_protobuf_serdes() in mlbridge/c/grpc.h). */
typedef struct mlb_serdes_factory mlb_serdes_factory;

/** Options of a pipe runner; initialise with mlb_pipe_options_init. */
typedef struct mlb_pipe_options {
  int open_timeout_ms;       /**< wait for FIFOs and peer (default 30000) */
  int reply_timeout_ms;      /**< one request, send + reply (default 30000) */
  int create_fifos;          /**< non-zero: create missing FIFOs (default 0) */
  int diagnostics_to_stderr; /**< non-zero: warnings to stderr (default 0) */
  /** MLB_SERDES_PROTOBUF: mlb_protobuf_serdes() (default NULL) */
  const mlb_serdes_factory *protobuf_serdes;
} mlb_pipe_options;

/** Fills *opts with the defaults. */
void mlb_pipe_options_init(mlb_pipe_options *opts);

/** The message of the last failed call on this thread ("" if none). Valid
 *  until the next failing call on the same thread. */
const char *mlb_last_error(void);
/** "ok", "timeout", ... */
const char *mlb_status_name(mlb_status status);

/** Creates a runner talking to a model over "<base>.in"/"<base>.out".
 *  opts may be NULL for defaults. Features are declared by the first set
 *  call of each name; the advice type by the first evaluate call (or
 *  mlb_set_advice_spec). On failure *out is NULL. */
mlb_status mlb_pipe_runner_create(const char *base, mlb_serdes serdes,
                                  const mlb_pipe_options *opts,
                                  mlb_runner **out);
/** Options of a shared-memory runner; initialise with mlb_shm_options_init. */
typedef struct mlb_shm_options {
  int open_timeout_ms;       /**< wait for the model to accept (default 30000) */
  int reply_timeout_ms;      /**< one request, send + reply (default 30000) */
  int spin_us;               /**< poll for a reply before sleeping (default 50) */
  int diagnostics_to_stderr; /**< non-zero: warnings to stderr (default 0) */
  /** MLB_SERDES_PROTOBUF: mlb_protobuf_serdes() (default NULL) */
  const mlb_serdes_factory *protobuf_serdes;
} mlb_shm_options;

/** Fills *opts with the defaults. */
void mlb_shm_options_init(mlb_shm_options *opts);

/** Creates a runner talking to a model through shared memory: the model
 *  listens on the Unix socket socket_path (docs/shm.md). Otherwise like
 *  mlb_pipe_runner_create. */
mlb_status mlb_shm_runner_create(const char *socket_path, mlb_serdes serdes,
                                 const mlb_shm_options *opts,
                                 mlb_runner **out);

/** Whether a pipe runner offers a session id in its header and expects
 *  framed replies (docs/reliability.md, "How an answer stays with its
 *  request"); on by default, as PipeOptions::SessionIds in C++. Turn it off
 *  (offer = 0) only for a model host that does not frame replies, such as
 *  LLVM's interactive_host.py. Takes effect from the next session the
 *  runner opens: call it before the first evaluation. Not a pipe runner:
 *  MLB_ERR_INVALID_ARGUMENT. (A setter, not a field of mlb_pipe_options,
 *  so programs built against the older, smaller struct keep working.) */
mlb_status mlb_pipe_runner_set_session_ids(mlb_runner *runner, int offer);

/** Closes the channel and frees the runner. NULL is a no-op. */
void mlb_runner_destroy(mlb_runner *runner);

/* Introspection, for every kind of runner. */

/** LLVM's name of a dtype ("float", "int64_t", ..., "bool", "string"), or
 *  "<invalid dtype>". */
const char *mlb_dtype_name(mlb_dtype type);
/** The runner's features (for an ONNX runner: the model's inputs). */
size_t mlb_runner_input_count(const mlb_runner *runner);
/** Input i: its name, type and current shape (rank dims; -1 = variable and
 *  not set yet). The name stays valid while the runner lives; the shape
 *  until the next call that sets a feature. Any out pointer may be NULL. */
mlb_status mlb_runner_input_info(const mlb_runner *runner, size_t i,
                                 const char **name, mlb_dtype *type,
                                 const int64_t **shape, size_t *rank);

/** Declares the advice: name, type and shape (rank dims; -1 = variable). */
mlb_status mlb_set_advice_spec(mlb_runner *runner, const char *name,
                               mlb_dtype type, const int64_t *shape,
                               size_t rank);

/* Scalar features. */
mlb_status mlb_set_int(mlb_runner *runner, const char *name, int value);
mlb_status mlb_set_int64(mlb_runner *runner, const char *name, int64_t value);
mlb_status mlb_set_float(mlb_runner *runner, const char *name, float value);
mlb_status mlb_set_double(mlb_runner *runner, const char *name, double value);
mlb_status mlb_set_bool(mlb_runner *runner, const char *name, bool value);
/** A NUL-terminated UTF-8 string. */
mlb_status mlb_set_string(mlb_runner *runner, const char *name,
                          const char *value);

/* Vector features (count may be 0 for variable-length features). */
mlb_status mlb_set_int_array(mlb_runner *runner, const char *name,
                             const int *values, size_t count);
mlb_status mlb_set_int64_array(mlb_runner *runner, const char *name,
                               const int64_t *values, size_t count);
mlb_status mlb_set_float_array(mlb_runner *runner, const char *name,
                               const float *values, size_t count);
mlb_status mlb_set_double_array(mlb_runner *runner, const char *name,
                                const double *values, size_t count);
mlb_status mlb_set_bool_array(mlb_runner *runner, const char *name,
                              const bool *values, size_t count);

/** Starts a new context (e.g. the function being compiled). */
mlb_status mlb_switch_context(mlb_runner *runner, const char *name);

/* Evaluation: send the features, receive one advice value of this type. A
 * type that differs from the advice spec is MLB_ERR_TYPE_MISMATCH. */
mlb_status mlb_evaluate_int(mlb_runner *runner, int *out);
mlb_status mlb_evaluate_int64(mlb_runner *runner, int64_t *out);
mlb_status mlb_evaluate_float(mlb_runner *runner, float *out);
mlb_status mlb_evaluate_double(mlb_runner *runner, double *out);
mlb_status mlb_evaluate_bool(mlb_runner *runner, bool *out);

/* Vector advice: up to capacity elements go to out; *count receives the
 * number the model sent. More than capacity is MLB_ERR_TOO_LARGE (and
 * *count still tells how many were needed). */
mlb_status mlb_evaluate_int64_array(mlb_runner *runner, int64_t *out,
                                    size_t capacity, size_t *count);
mlb_status mlb_evaluate_float_array(mlb_runner *runner, float *out,
                                    size_t capacity, size_t *count);
mlb_status mlb_evaluate_double_array(mlb_runner *runner, double *out,
                                     size_t capacity, size_t *count);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MLBRIDGE_C_MLBRIDGE_H */
