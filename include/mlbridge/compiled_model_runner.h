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
// Features are declared from the model's inputs (dtype and fixed shape, in
// model order), so setFeature checks both; unknown names are errors. Their
// buffers are the model instance's input buffers (EmbeddedModelRunner), so
// features are written in place. Every evaluation runs the whole model;
// all outputs stay readable through output().
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
#include "mlbridge/runner_settings.h"

#include <memory>
#include <string>

namespace mlbridge {

struct CompiledModelOptions : RunnerOptions {
  /// The output returned as advice. Empty: the model's "mlbridge.advice"
  /// metadata entry if it had one, else its first output (as for
  /// OnnxModelRunner).
  std::string AdviceOutput;
};

class CompiledModelRunner final : public EmbeddedModelRunner {
public:
  /// Creates a runner for a generated model (Model::info()). Fails on an
  /// unknown AdviceOutput, an unsupported input type (the C++ side has no
  /// dtype for it) or a model generated for another ABI version.
  static Expected<std::unique_ptr<CompiledModelRunner>>
  create(const EmbeddedModel &Model,
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
  ~CompiledModelRunner() override;

  // model(), outputCount, outputSpec, outputIndex, selectAdvice, output:
  // EmbeddedModelRunner and InProcessModelRunner.

  /// Another runner over the same generated model with the same advice
  /// output and options, for another thread (its own buffers).
  Expected<std::unique_ptr<CompiledModelRunner>> clone() const;

private:
  CompiledModelRunner(CreateTag, const EmbeddedModel &Model,
                      CompiledModelOptions Options);
};

/// The runner of the compiled model Model for makeRunner
/// (mlbridge/runner_settings.h), named by the model; its output named like
/// the advice, if any, is the advice (adviceNamedLike). The model is part
/// of the program: auto chooses it when no other runner is configured.
RunnerFactory compiledRunnerFactory(const EmbeddedModel &Model);
/// compiledRunnerFactory(Model::info()) for a generated class.
template <typename Model> RunnerFactory compiledRunnerFactory() {
  return compiledRunnerFactory(Model::info());
}

} // namespace mlbridge

#endif // MLBRIDGE_COMPILED_MODEL_RUNNER_H
