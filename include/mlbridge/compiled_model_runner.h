//===- mlbridge/compiled_model_runner.h - A model built into the compiler -===//
//
// CompiledModelRunner puts a model compiled to C++ by mlbridge-model-compiler
// (or CMake's mlbridge_add_compiled_model) behind the ModelRunner feature
// API: features are the model's inputs, by name; the advice is one of its
// outputs, by name (the first one unless chosen). Nothing is loaded at run
// time and there is no runtime library: the model is code and constant
// weights inside the compiler.
//
//   #include "InlinePolicy.h"   // generated
//   auto R = CompiledModelRunner::create<InlinePolicy>("action");
//   if (!R) ... R.status() ...
//   (*R)->setFeature("obs", Features);           // std::vector<float>
//   int64_t Action = (*R)->evaluateOr<int64_t>(Default);
//
// Features are declared from the model's inputs (dtype and fixed shape), so
// setFeature checks both; unknown names are errors. Every evaluation runs
// the whole model; all outputs stay readable through output().
//
// Threads: the generated model is a pure function, so any number of runners
// (one per compiler thread) may evaluate at the same time; creating one is
// cheap (no weights are copied). A single runner is used by one thread at a
// time, like every ModelRunner (its feature buffers are its state).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_COMPILED_MODEL_RUNNER_H
#define MLBRIDGE_COMPILED_MODEL_RUNNER_H

#include "mlbridge/compiled_model.h"
#include "mlbridge/in_process_model_runner.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge {

struct CompiledModelOptions : RunnerOptions {
  /// The output returned as advice. Empty: the model's "mlbridge.advice"
  /// metadata entry if it had one, else its first output (as for
  /// OnnxModelRunner).
  std::string AdviceOutput;
};

class CompiledModelRunner final : public InProcessModelRunner {
public:
  /// Creates a runner for a generated model (Model::info()). Fails on an
  /// unknown AdviceOutput, an unsupported input type (the C++ side has no
  /// dtype for it) or a model generated for another ABI version.
  static Expected<std::unique_ptr<CompiledModelRunner>>
  create(const CompiledModelInfo &Model,
         CompiledModelOptions Options = CompiledModelOptions());

  /// create(Model::info(), ...) for a generated class.
  template <typename Model>
  static Expected<std::unique_ptr<CompiledModelRunner>>
  create(CompiledModelOptions Options = CompiledModelOptions()) {
    return create(Model::info(), std::move(Options));
  }
  template <typename Model>
  static Expected<std::unique_ptr<CompiledModelRunner>>
  create(std::string AdviceOutput) {
    CompiledModelOptions O;
    O.AdviceOutput = std::move(AdviceOutput);
    return create(Model::info(), std::move(O));
  }

  /// For code that prefers a plain object: errors from the arguments are
  /// reported by every later call instead.
  explicit CompiledModelRunner(
      const CompiledModelInfo &Model,
      CompiledModelOptions Options = CompiledModelOptions());
  ~CompiledModelRunner() override;

  /// The generated model's description.
  const CompiledModelInfo &model() const { return Model; }

  // outputCount, outputSpec, outputIndex, selectAdvice, output:
  // InProcessModelRunner.

  /// Another runner over the same generated model with the same advice
  /// output and options, for another thread (its own workspace).
  Expected<std::unique_ptr<CompiledModelRunner>> clone() const;

private:
  Status doEvaluate(const std::vector<const TensorValue *> &Features,
                    bool FeaturesChanged, const TensorSpec &Spec,
                    TensorValue &Out) override;
  const TensorValue *evaluatedOutput(size_t I) const override;
  Status bindInputs(const std::vector<const TensorValue *> &Features);

  const CompiledModelInfo &Model;
  std::vector<TensorValue> Outputs;       // every output, after evaluation
  std::vector<const void *> InputPtrs;    // per model input
  std::vector<size_t> InputFeature;       // feature index per model input
  std::vector<void *> OutputPtrs;         // per model output
  void *Workspace = nullptr;
  bool Evaluated = false;
};

} // namespace mlbridge

#endif // MLBRIDGE_COMPILED_MODEL_RUNNER_H
