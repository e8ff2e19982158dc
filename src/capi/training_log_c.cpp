//===- capi/training_log_c.cpp - C API of TrainingLogWriter ---------------===//
#include "mlbridge/c/training_log.h"
#include "mlbridge/training_log.h"

#include "capi/capi_internal.h"

using namespace mlbridge;
using mlbridge::capi::fail;
using mlbridge::capi::finish;

struct mlb_training_log {
  std::unique_ptr<TrainingLogWriter> Writer;
};

#define MLB_CHECK_LOG(L)                                                       \
  do {                                                                         \
    if (!(L) || !(L)->Writer)                                                  \
      return fail(ErrorCode::InvalidArgument, "null training log");            \
  } while (0)

extern "C" {

mlb_status mlb_training_log_create_for_runner(const char *Path,
                                              const mlb_runner *R,
                                              bool LogAdvice,
                                              const char *ScoreName,
                                              mlb_dtype ScoreType,
                                              mlb_training_log **Out) {
  MLB_CHECK_ARG(Out, "output handle");
  *Out = nullptr;
  MLB_CHECK_ARG(Path, "path");
  MLB_CHECK_RUNNER(R);
  TrainingLogOptions Options;
  if (ScoreName) {
    if (static_cast<int>(ScoreType) < 0 ||
        static_cast<int>(ScoreType) >= kNumDTypes)
      return fail(ErrorCode::InvalidArgument, "unknown score dtype");
    Options.Score = TensorSpec(ScoreName, static_cast<DType>(ScoreType));
  }
  auto W = TrainingLogWriter::createForRunner(Path, *R->Runner, LogAdvice,
                                              std::move(Options));
  if (!W)
    return fail(W.status());
  *Out = new mlb_training_log{std::move(*W)};
  return MLB_OK;
}

mlb_status mlb_training_log_switch_context(mlb_training_log *L,
                                           const char *Name) {
  MLB_CHECK_LOG(L);
  MLB_CHECK_ARG(Name, "context name");
  return finish(L->Writer->switchContext(Name));
}

mlb_status mlb_training_log_observe(mlb_training_log *L, const mlb_runner *R) {
  MLB_CHECK_LOG(L);
  MLB_CHECK_RUNNER(R);
  return finish(L->Writer->logRunner(*R->Runner));
}

mlb_status mlb_training_log_score_float(mlb_training_log *L, float V) {
  MLB_CHECK_LOG(L);
  return finish(L->Writer->logScore(V));
}
mlb_status mlb_training_log_score_double(mlb_training_log *L, double V) {
  MLB_CHECK_LOG(L);
  return finish(L->Writer->logScore(V));
}
mlb_status mlb_training_log_score_int64(mlb_training_log *L, int64_t V) {
  MLB_CHECK_LOG(L);
  return finish(L->Writer->logScore(V));
}

mlb_status mlb_training_log_close(mlb_training_log *L) {
  MLB_CHECK_LOG(L);
  return finish(L->Writer->close());
}

void mlb_training_log_destroy(mlb_training_log *L) { delete L; }

} // extern "C"
