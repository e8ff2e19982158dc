//===- mlbridge/in_process_model_runner.h - Models run in process -*- C++ -*-===//
//
// What the runners that execute a model inside the compiler share
// (OnnxModelRunner, CompiledModelRunner, TfModelRunner): the model's table
// of outputs, the choice of which output is the advice, and reading every
// output of the last evaluation (output()). Each runner adds how it runs its
// kind of model. Their options derive from RunnerOptions and name the
// advice output the same way (OnnxOptions, CompiledModelOptions, TfOptions:
// AdviceOutput).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_IN_PROCESS_MODEL_RUNNER_H
#define MLBRIDGE_IN_PROCESS_MODEL_RUNNER_H

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
  /// Output I < outputCount() of the last successful evaluation, or nullptr
  /// if there is none.
  virtual const TensorValue *evaluatedOutput(size_t I) const = 0;

private:
  std::vector<TensorSpec> Outputs;
  std::string ModelName;
};

} // namespace mlbridge

#endif // MLBRIDGE_IN_PROCESS_MODEL_RUNNER_H
