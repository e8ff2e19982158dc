//===- mlbridge/onnx_model_runner.h - A model inside the compiler -*- C++ -*-===//
//
// OnnxModelRunner evaluates an ONNX model in-process with ONNX Runtime: no
// Python, no server, no second process, no serialization. It is the
// deployment runner: the pass that trained against a Python model over pipes
// keeps its code and swaps the runner.
//
//   auto Runner = OnnxModelRunner::create("inliner.onnx");
//   if (!Runner) errs() << Runner.status().toString();  // not-found, malformed
//   (*Runner)->setFeature("x", Features);             // a model input, by name
//   float Score = (*Runner)->evaluateOr<float>(0.f);  // the advice output
//
// Features are the model's inputs, taken from the model itself (names,
// element types float/double/int8..int64/uint8..uint64/bool, shapes with
// variable dimensions as -1); setting a name the model does not have, or a
// value of the wrong type or size, is an error before anything runs. The
// advice is one named model output (OnnxOptions::AdviceOutput, else the
// model's "mlbridge.advice" metadata entry, else its first output);
// evaluate<T>() checks T against that output's type and size. Every output
// of the last evaluation is readable through output().
//
// Buffers: inputs are ONNX Runtime tensors over the runner's own feature
// buffers (setFeature / getTensor<T>(i) write where the model reads) and
// outputs are bound to the runner's buffers, so after the first evaluation
// with a given set of shapes the runner allocates nothing per call.
//
// Threads -- the rule: an OnnxModel (the loaded session) is immutable and
// may be shared by any number of threads; a runner holds one thread's
// buffers and is used by one thread at a time. So: load the model once,
// give each compiler thread its own runner over it:
//
//   auto Model = OnnxModel::load("policy.onnx");              // once
//   auto Runner = OnnxModelRunner::create(*Model);            // per thread
//
// ONNX Runtime is kept out of this header (it builds with -fno-exceptions
// -fno-rtti); nothing thrown inside ONNX Runtime crosses this API. One ONNX
// Runtime environment serves the whole process; it is silent (see
// setOnnxRuntimeLogSink to see its messages).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_ONNX_MODEL_RUNNER_H
#define MLBRIDGE_ONNX_MODEL_RUNNER_H

#include "mlbridge/in_process_model_runner.h"
#include "mlbridge/runner_settings.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mlbridge {

/// ONNX Runtime's graph optimization levels.
enum class OnnxOptimization { None, Basic, Extended, All };

/// Settings of a loaded model (an ONNX Runtime session).
struct OnnxModelOptions {
  /// Threads ONNX Runtime may use inside one evaluation. The default, 1,
  /// runs everything on the calling thread: no thread pool, no spinning --
  /// right for a compiler, which has its own threads and small models.
  int IntraOpThreads = 1;
  OnnxOptimization Optimization = OnnxOptimization::All;
  /// Values for named symbolic dimensions, e.g. {{"batch", 1}}. The inputs
  /// then have fixed shapes, so features can be written in place through
  /// getTensor<T>(i) before any setFeature. A model input may have at most
  /// one variable dimension left after these are applied.
  std::vector<std::pair<std::string, int64_t>> DimValues;
};

/// A loaded ONNX model: an ONNX Runtime session plus its input and output
/// specs. Immutable after load; share it between threads and runners.
class OnnxModel {
public:
  /// Loads the model at Path. Errors: NotFound (no such file),
  /// Malformed (not a loadable ONNX model), InvalidArgument (bad options, or
  /// an input ONNX Runtime tensors of this library cannot feed, e.g. string).
  static Expected<std::shared_ptr<const OnnxModel>>
  load(const std::string &Path, const OnnxModelOptions &Options = {});
  /// Same, from the bytes of a .onnx file (copied as needed by ONNX
  /// Runtime; Data may be freed afterwards).
  static Expected<std::shared_ptr<const OnnxModel>>
  loadFromBytes(const void *Data, size_t Size,
                const OnnxModelOptions &Options = {});

  ~OnnxModel();
  OnnxModel(const OnnxModel &) = delete;
  OnnxModel &operator=(const OnnxModel &) = delete;

  /// The inputs in model order, variable dimensions as kDynamicDim.
  const std::vector<TensorSpec> &inputs() const;
  /// The tensor outputs this library can read (numeric and bool), in model
  /// order. Outputs of other kinds (sequences, maps, strings, float16) are
  /// not listed and never computed.
  const std::vector<TensorSpec> &outputs() const;
  std::optional<size_t> outputIndex(std::string_view Name) const;
  /// A value of the model's custom metadata (metadata_props), if present.
  std::optional<std::string> metadata(std::string_view Key) const;
  /// The file it came from, or "<memory>".
  const std::string &source() const;

  struct Impl; // internal
  const Impl &impl() const { return *I; }

private:
  explicit OnnxModel(std::unique_ptr<Impl> I);
  std::unique_ptr<Impl> I;
};

/// Options of an OnnxModelRunner.
struct OnnxOptions : RunnerOptions {
  /// The output used as advice. Empty: the model's "mlbridge.advice"
  /// metadata entry if it has one, else its first output.
  std::string AdviceOutput;
  /// Session settings, used when the runner loads the model itself.
  OnnxModelOptions Model;
};

class OnnxModelRunner final : public InProcessModelRunner {
public:
  /// Loads the model at ModelPath and makes a runner for it.
  static Expected<std::unique_ptr<OnnxModelRunner>>
  create(const std::string &ModelPath, OnnxOptions Options = OnnxOptions());
  /// A runner over an already loaded (possibly shared) model; cheap.
  static Expected<std::unique_ptr<OnnxModelRunner>>
  create(std::shared_ptr<const OnnxModel> Model,
         OnnxOptions Options = OnnxOptions());
  /// Loads the model from the bytes of a .onnx file.
  static Expected<std::unique_ptr<OnnxModelRunner>>
  createFromBytes(const void *Data, size_t Size,
                  OnnxOptions Options = OnnxOptions());
  ~OnnxModelRunner() override;

  /// The model.
  const std::shared_ptr<const OnnxModel> &model() const { return Model; }

  // outputCount, outputSpec, outputIndex, selectAdvice, output:
  // InProcessModelRunner (the outputs are model()->outputs()).

  /// Another runner over the same loaded model (shared, not reloaded) with
  /// the same advice output and options, for another thread.
  Expected<std::unique_ptr<OnnxModelRunner>> clone() const;

private:
  struct Prepared;
  struct State;
  static Prepared prepare(std::shared_ptr<const OnnxModel> M,
                          const OnnxOptions &Options);
  explicit OnnxModelRunner(Prepared &&P);

  Status doEvaluate(const std::vector<const TensorValue *> &Features,
                    bool FeaturesChanged, const TensorSpec &Spec,
                    TensorValue &Out) override;
  const TensorValue *evaluatedOutput(size_t I) const override;

  std::shared_ptr<const OnnxModel> Model;
  std::unique_ptr<State> S;
};

/// Receives ONNX Runtime's own log messages (warnings and errors) for the
/// whole process; empty (the default) drops them. Not needed to learn about
/// failures: those come back as Status values.
void setOnnxRuntimeLogSink(DiagnosticSink Sink);

/// The ONNX runner for makeRunner (mlbridge/runner_settings.h): the file
/// RunnerSettings::Model, loaded once per process and path and shared by
/// every runner over it (an LLVM inline advisor is made per inliner run,
/// the model is loaded once); its output named like the advice, if any, is
/// the advice (adviceNamedLike).
RunnerFactory onnxRunnerFactory();

} // namespace mlbridge

#endif // MLBRIDGE_ONNX_MODEL_RUNNER_H
