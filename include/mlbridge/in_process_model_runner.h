//===- mlbridge/in_process_model_runner.h - Models run in process -*- C++ -*-===//
//
// What the runners that execute a model inside the compiler share
// (OnnxModelRunner, CompiledModelRunner, TfModelRunner): the model's table
// of outputs, the choice of which output is the advice, and reading every
// output of the last evaluation (output()). Their options derive from
// RunnerOptions and name the advice output the same way (OnnxOptions,
// CompiledModelOptions, TfOptions: AdviceOutput; empty: the output the
// model names as advice, else its first output).
//
// EmbeddedModelRunner is the whole runner for a model linked into the
// program (mlbridge/embedded_model.h): CompiledModelRunner and
// TfModelRunner only add how they are created.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_IN_PROCESS_MODEL_RUNNER_H
#define MLBRIDGE_IN_PROCESS_MODEL_RUNNER_H

#include "mlbridge/embedded_model.h"
#include "mlbridge/model_runner.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge {

class InProcessModelRunner : public ModelRunner {
public:
  /// The model's outputs, in model order, with their specs (scalars are
  /// [1]); none when the model could not be loaded.
  size_t outputCount() const { return Outputs.size(); }
  const TensorSpec &outputSpec(size_t I) const { return Outputs[I]; }
  /// Index of the output called Name.
  std::optional<size_t> outputIndex(std::string_view Name) const;

  /// Makes the output called Name the advice (setAdviceSpec with its spec;
  /// declaring an advice spec directly works too: its name selects the
  /// output, and its dtype and element count must match).
  Status selectAdvice(std::string_view Name);

  /// Output I (as in outputSpec(I)), or the output called Name, as computed
  /// by the last successful evaluation: nullptr before the first one or for
  /// an unknown index or name. The value is valid until the next
  /// evaluation. For policies that need more than the advice (e.g.
  /// probabilities).
  const TensorValue *output(size_t I) const {
    return I < Outputs.size() ? evaluatedOutput(I) : nullptr;
  }
  const TensorValue *output(std::string_view Name) const;

protected:
  using ModelRunner::ModelRunner;

  /// Installs the model's outputs; ModelName names the model in messages
  /// ("compiled model ns::Policy", "ONNX model 'policy.onnx'").
  void setOutputs(std::vector<TensorSpec> Specs, std::string ModelName);
  /// InvalidArgument: "<model> has no output 'Name' (outputs: 'a', 'b')".
  Status unknownOutput(std::string_view Name) const;
  /// The model as messages name it.
  const std::string &modelName() const { return ModelName; }
  /// The options a clone() is created with: this runner's RunnerOptions
  /// and its current advice output.
  template <typename Options> Options cloneOptions() const {
    Options O;
    static_cast<RunnerOptions &>(O) = options();
    if (adviceSpec() && outputIndex(adviceSpec()->name()))
      O.AdviceOutput = adviceSpec()->name();
    return O;
  }
  /// Output I < outputCount() of the last successful evaluation, or nullptr
  /// if there is none.
  virtual const TensorValue *evaluatedOutput(size_t I) const = 0;

private:
  std::vector<TensorSpec> Outputs;
  std::string ModelName;
};

/// A runner over an EmbeddedModel. Features are the model's inputs,
/// declared up front in model order (scalars as [1]); their buffers are
/// the input buffers of the runner's own model instance, so setFeature and
/// getTensor write where the model reads and evaluation copies nothing in.
/// Outputs are read where the model's Run left them (output() points
/// there); the advice is copied out. A runner is used by one thread at a
/// time; runners over one model on different threads run in parallel.
class EmbeddedModelRunner : public InProcessModelRunner {
public:
  ~EmbeddedModelRunner() override;

  /// The model's description.
  const EmbeddedModel &model() const { return Model; }

protected:
  /// Kind names the kind of model in messages ("compiled model"). Errors
  /// (an unknown AdviceOutput, a model generated for another ABI version
  /// or an incomplete one, no memory for an instance) are reported by
  /// constructionStatus() and every later call.
  EmbeddedModelRunner(const EmbeddedModel &Model, std::string_view Kind,
                      const std::string &AdviceOutput, RunnerOptions Options);

private:
  Status doEvaluate(const std::vector<const TensorValue *> &Features,
                    bool FeaturesChanged, const TensorSpec &Spec,
                    TensorValue &Out) override;
  const TensorValue *evaluatedOutput(size_t I) const override;
  Status checkAndInstantiate(const std::string &AdviceOutput);

  const EmbeddedModel &Model;
  void *Instance = nullptr;
  std::vector<void *> InputBuffers;
  std::vector<TensorValue> OutputViews; // of the instance's output buffers
  bool HaveResults = false;
};

/// The advice rule of makeRunner (mlbridge/runner_settings.h) for an
/// in-process runner: the model's output named like the integration's
/// Advice, when it has one, is the advice; otherwise the runner's own
/// choice (its AdviceOutput default) stands.
Expected<std::unique_ptr<ModelRunner>>
adviceNamedLike(std::unique_ptr<InProcessModelRunner> R, const TensorSpec &Advice);

} // namespace mlbridge

#endif // MLBRIDGE_IN_PROCESS_MODEL_RUNNER_H
