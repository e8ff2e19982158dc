/*===- mlbridge/c/onnx.h - C API: in-process ONNX models -----------*- C -*-===
 *
 * Runs an ONNX model inside the C program with ONNX Runtime (link
 * MLBridge::onnx). Valid C99 and C11. The runner is an ordinary mlb_runner:
 * features are the model's inputs, set by name with the mlb_set_*_array
 * calls of mlbridge.h; the advice is one model output, read with
 * mlb_evaluate_*.
 *
 *   mlb_runner *r;
 *   if (mlb_onnx_runner_create("policy.onnx", NULL, &r) != MLB_OK)
 *     fprintf(stderr, "%s\n", mlb_last_error());
 *   mlb_set_float_array(r, "x", features, 300);
 *   float scores[15]; size_t n;
 *   if (mlb_evaluate_float_array(r, scores, 15, &n) != MLB_OK) ... fallback
 *   mlb_runner_destroy(r);
 *
 * Threads: one runner per thread (each runner loads its own copy of the
 * model here; the C++ API can share one loaded model between runners).
 *
 *===----------------------------------------------------------------------===*/
#ifndef MLBRIDGE_C_ONNX_H
#define MLBRIDGE_C_ONNX_H

#include "mlbridge/c/mlbridge.h"
#include "mlbridge/c/settings.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Options of an ONNX runner; initialise with mlb_onnx_options_init. */
typedef struct mlb_onnx_options {
  /** Output used as advice; NULL: the model's "mlbridge.advice" metadata
   *  entry, else its first output. */
  const char *advice_output;
  /** Threads ONNX Runtime may use per evaluation (default 1: the caller's). */
  int intra_op_threads;
  /** Values for named symbolic dimensions ("batch" = 1): dim_count pairs. */
  const char *const *dim_names;
  const int64_t *dim_values;
  size_t dim_count;
  /** Non-zero: warnings to stderr (default 0: silent). */
  int diagnostics_to_stderr;
} mlb_onnx_options;

/** Fills *opts with the defaults. */
void mlb_onnx_options_init(mlb_onnx_options *opts);

/** Loads the model at model_path. opts may be NULL. On failure *out is NULL
 *  and the status says why: MLB_ERR_NOT_FOUND (no file), MLB_ERR_MALFORMED
 *  (not a loadable ONNX model), MLB_ERR_INVALID_ARGUMENT (bad options). */
mlb_status mlb_onnx_runner_create(const char *model_path,
                                  const mlb_onnx_options *opts,
                                  mlb_runner **out);
/** Same, from the bytes of a .onnx file (which may be freed afterwards). */
mlb_status mlb_onnx_runner_create_from_bytes(const void *data, size_t size,
                                             const mlb_onnx_options *opts,
                                             mlb_runner **out);

/* mlb_runner_input_count / mlb_runner_input_info, declared here before
 * 0.2, work for every runner and live in mlbridge/c/mlbridge.h (included
 * above), so code that includes this header keeps compiling. */

/** One call: loads model_path, sets input input_name (NULL: the model's only
 *  input) to count floats, evaluates and copies the float advice to out (up
 *  to capacity elements; *out_count gets the number produced). Loads the
 *  model every time: for a few evaluations; keep a runner for many. */
mlb_status mlb_onnx_run_float(const char *model_path, const char *input_name,
                              const float *features, size_t count, float *out,
                              size_t capacity, size_t *out_count);

/** The onnx runner of mlb_runner_create_from_settings (mlbridge/c/settings.h):
 *  set settings.onnx to this function to make it available there. Uses
 *  the model file settings->model. */
mlb_status mlb_onnx_runner_from_settings(const mlb_runner_settings *settings,
                                         mlb_runner **out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MLBRIDGE_C_ONNX_H */
