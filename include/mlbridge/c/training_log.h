/*===- mlbridge/c/training_log.h - Training logs from C ------------*- C -*-===
 *
 * The C interface to mlbridge::TrainingLogWriter (mlbridge/training_log.h):
 * LLVM's training-log format (docs/protocol.md, "Training logs") written
 * from a C compiler. The log's features are a runner's features, in their
 * current order and shapes (set them before creating the log), optionally
 * followed by the runner's advice. Valid C99 and C11; every call returns an
 * mlb_status and leaves a message in mlb_last_error() on failure; nothing
 * prints.
 *
 *   mlb_training_log *log;
 *   mlb_training_log_create_for_runner("inline.log", r, true, "reward",
 *                                      MLB_FLOAT, &log);
 *   mlb_training_log_switch_context(log, "main");
 *   ... mlb_set_int64(r, ...); mlb_evaluate_int64(r, &decision);
 *   mlb_training_log_observe(log, r);            // features + decision
 *   mlb_training_log_score_float(log, 1.0f);     // one per observation
 *   mlb_training_log_close(log);                 // check the status
 *   mlb_training_log_destroy(log);
 *
 *===----------------------------------------------------------------------===*/
#ifndef MLBRIDGE_C_TRAINING_LOG_H
#define MLBRIDGE_C_TRAINING_LOG_H

#include "mlbridge/c/mlbridge.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mlb_training_log mlb_training_log;

/** A log at `path` (created or truncated) whose features are `runner`'s,
 *  then its advice spec when `log_advice`. `score_name`: NULL for no
 *  scores, else the name of a scalar score of type `score_type`. */
mlb_status mlb_training_log_create_for_runner(const char *path,
                                              const mlb_runner *runner,
                                              bool log_advice,
                                              const char *score_name,
                                              mlb_dtype score_type,
                                              mlb_training_log **out);

mlb_status mlb_training_log_switch_context(mlb_training_log *log,
                                           const char *name);
/** One observation: `runner`'s current features (and last advice). */
mlb_status mlb_training_log_observe(mlb_training_log *log,
                                    const mlb_runner *runner);
/** The score of the last observation (the score's type exactly). */
mlb_status mlb_training_log_score_float(mlb_training_log *log, float score);
mlb_status mlb_training_log_score_double(mlb_training_log *log, double score);
mlb_status mlb_training_log_score_int64(mlb_training_log *log, int64_t score);
/** Writes the complete records and closes the file. */
mlb_status mlb_training_log_close(mlb_training_log *log);
/** Closes (if needed, ignoring errors) and frees. NULL is ignored. */
void mlb_training_log_destroy(mlb_training_log *log);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MLBRIDGE_C_TRAINING_LOG_H */
