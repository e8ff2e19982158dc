//===- mlbridge/training_log.h - LLVM training logs from any pass -*- C++ -*-===//
//
// TrainingLogWriter writes a dataset for offline or imitation learning in
// LLVM's training-log format: what LLVM's development mode writes
// (llvm/Analysis/Utils/TrainingLogger.h) and what LLVM's
// lib/Analysis/models/log_reader.py and mlbridge.read_training_log (Python,
// numpy) read. Byte for byte (docs/protocol.md, "Training logs"):
//
//   {"features":[SPEC,...],"score":SPEC,"advice":SPEC}\n   once; "score" and
//                                                          "advice" optional
//   {"context":"NAME"}\n                                   e.g. each function
//   {"observation":N}\n FEATURE BYTES... \n                N counts per context
//   {"outcome":N}\n SCORE BYTES \n                         with a score spec
//
// It needs no model: a pass can log its default heuristic's decisions
// (features and the decision as the last "feature", as LLVM does), or log
// what any ModelRunner saw and answered (createForRunner / logRunner).
//
//   auto Log = TrainingLogWriter::create("inline.log", Specs,
//                                        {TensorSpec::create<float>("reward")});
//   Log->switchContext("main");
//   *Features[0].dataAs<int64_t>() = CalleeSize; ...      // TensorValues
//   Log->logObservation({&Features[0], &Features[1], &Decision});
//   Log->logScore(1.0f);
//   Status S = Log->close();
//
// Contract:
//  * Nothing throws; every fallible call returns a Status. The first error
//    is sticky: later calls return it and log nothing more. The file always
//    holds complete records only (a valid log), also after an error.
//  * Feature, score and advice specs use LLVM's element types (float,
//    double, int8_t..uint64_t) with concrete shapes; bool and string
//    tensors are refused (LLVM's readers have no such type).
//  * Values are checked against the header before anything is written:
//    dtype, byte count, and (for logRunner) names.
//  * With a score spec, each observation is followed by exactly one
//    logScore() before the next observation, context switch or close()
//    (log_reader.py reads an outcome after every observation).
//  * Observation numbers restart at 0 for a new context name and continue
//    when an earlier name comes back (LLVM's Logger does the same).
//  * Never writes to stdout. One thread at a time per writer.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_TRAINING_LOG_H
#define MLBRIDGE_TRAINING_LOG_H

#include "mlbridge/model_runner.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"
#include "mlbridge/tensor_value.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mlbridge {

struct TrainingLogOptions {
  /// The reward spec ("score" in the header); each observation then gets an
  /// outcome record through logScore(). Usually a scalar, e.g. float [1].
  std::optional<TensorSpec> Score;
  /// The advice spec ("advice" in the header), for readers that want to
  /// know which output a model produced. Informational: LLVM logs the
  /// decision itself as the last feature.
  std::optional<TensorSpec> Advice;
};

class TrainingLogWriter {
public:
  /// Receives the log's bytes in order; an error Status stops the writer.
  using ByteSink = std::function<Status(std::string_view Bytes)>;

  /// Creates (or truncates) the file at Path and writes the header.
  static Expected<std::unique_ptr<TrainingLogWriter>>
  create(const std::string &Path, std::vector<TensorSpec> Features,
         TrainingLogOptions Options = {});

  /// Writes into Sink instead of a file (in memory, a socket, ...).
  static Expected<std::unique_ptr<TrainingLogWriter>>
  create(ByteSink Sink, std::vector<TensorSpec> Features,
         TrainingLogOptions Options = {});

  /// Features = Runner's features in their current shapes, followed by
  /// Runner's advice spec when LogAdvice (which must then be declared);
  /// use logRunner() for the records.
  static Expected<std::unique_ptr<TrainingLogWriter>>
  createForRunner(const std::string &Path, const ModelRunner &Runner,
                  bool LogAdvice, TrainingLogOptions Options = {});

  ~TrainingLogWriter(); ///< close(), its error ignored.
  TrainingLogWriter(const TrainingLogWriter &) = delete;
  TrainingLogWriter &operator=(const TrainingLogWriter &) = delete;

  const std::vector<TensorSpec> &featureSpecs() const { return Features; }

  /// Starts (or returns to) the context Name.
  Status switchContext(std::string_view Name);

  /// One observation: Values[I] holds feature I (same dtype and byte size).
  Status logObservation(const std::vector<const TensorValue *> &Values);

  /// One observation from Runner: its features, then its last advice if the
  /// log was made with LogAdvice (call after evaluating).
  Status logRunner(const ModelRunner &Runner);

  /// The outcome of the last observation: a value of the score spec's
  /// dtype (T must be that type exactly) filling its shape.
  template <typename T> Status logScore(T Value) {
    static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>,
                  "a score is a number");
    return logScoreValues(DTypeOf<T>::value, &Value, sizeof(T));
  }
  /// The outcome from raw bytes of the score spec's dtype and byte size.
  Status logScoreBytes(const void *Data, size_t ByteCount);

  /// Observations written in the current context so far.
  int64_t observationsInContext() const;

  /// Writes the complete records buffered so far to the file (or sink).
  Status flush();
  /// Writes the complete records and closes the file. An observation still
  /// waiting for its score is not written and makes close() fail. Later
  /// calls return the same Status.
  Status close();

private:
  struct Output;
  TrainingLogWriter(std::unique_ptr<Output> Out, std::vector<TensorSpec> Features,
                    TrainingLogOptions Options, bool LogsAdvice);
  static Expected<std::unique_ptr<TrainingLogWriter>>
  make(std::unique_ptr<Output> Out, std::vector<TensorSpec> Features,
       TrainingLogOptions Options, bool LogsAdvice);
  Status usable() const;
  Status startObservation(const std::vector<std::pair<DType, size_t>> &Values);
  Status endObservation();
  Status logScoreValues(DType Type, const void *Data, size_t ByteCount);
  Status maybeFlush();
  Status writeCommitted();
  Status fail(Status S);

  std::unique_ptr<Output> Out;
  std::vector<TensorSpec> Features;
  TrainingLogOptions Options;
  bool LogsAdvice = false;
  std::string Buffer;   // bytes not yet written
  size_t Committed = 0; // Buffer's prefix of complete records
  std::string Context;  // "" until the first switchContext (as in LLVM)
  std::unordered_map<std::string, int64_t> NextIndex; // per context name
  bool ScorePending = false;
  bool OutputFailed = false;
  bool Closed = false;
  Status Sticky;
};

} // namespace mlbridge

#endif // MLBRIDGE_TRAINING_LOG_H
