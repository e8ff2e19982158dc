//===- mlbridge/tf_model_runner.h - A model compiled by XLA AOT -*- C++ -*-===//
//
// TfModelRunner runs a TensorFlow model that XLA compiled ahead of time into
// the program (the paper's fastest runner; LLVM's release-mode ML advisors
// ship their models this way). No TensorFlow, Python or file is needed at
// run time: the model is machine code and constants linked into the binary.
//
// The build compiles the model (cmake/MLBridgeTfAot.cmake, docs/tf-aot.md):
//
//   mlbridge_add_tf_model(inliner_model SAVED_MODEL ${DIR}
//                         NAME my::InlinerPolicy)
//   target_link_libraries(my_pass PRIVATE inliner_model)
//
// and generates "inliner_model.h", declaring the model's description
// `const mlbridge::EmbeddedModel &my::InlinerPolicyModel();` (the one
// description of a model linked into the program, mlbridge/embedded_model.h;
// its instances are instances of the class XLA generated). Then:
//
//   #include "inliner_model.h"
//   mlbridge::TfOptions O;
//   O.AdviceOutput = "decision";
//   auto R = mlbridge::TfModelRunner::create(my::InlinerPolicyModel(), O);
//   if (!R) ... R.status() ...
//   (*R)->setFeature("callee_size", std::vector<float>{...});
//   int64_t D = (*R)->evaluateOr<int64_t>(0);
//
// Features are the signature's inputs, declared up front with their names,
// dtypes and shapes (a scalar input is shape [1]); a wrong name, dtype or
// element count is an error value, as for every runner. The advice is one
// output chosen by name (TfOptions::AdviceOutput; default: the first in
// name order); every output of the last evaluation can be read with
// output(), which points into the compiled function's result buffers.
//
// Features are written in place into the compiled function's argument
// buffers (EmbeddedModelRunner). Threads: a runner owns the compiled
// function's argument, result and scratch buffers, so one runner is used by
// one thread at a time. Give each thread its own runner -- clone() or
// another create() call over the same model -- which shares the code and
// constants (read-only) and
// costs a few buffers of the model's size. Runners over one model on
// different threads run fully in parallel, without locks.
//
// This header needs neither TensorFlow's headers nor exceptions or RTTI.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_TF_MODEL_RUNNER_H
#define MLBRIDGE_TF_MODEL_RUNNER_H

#include "mlbridge/in_process_model_runner.h"
#include "mlbridge/runner_settings.h"

#include <memory>
#include <string>
#include <string_view>

namespace mlbridge {

/// Options of a TfModelRunner.
struct TfOptions : RunnerOptions {
  /// The output used as advice. Empty: the first output (in name order; a
  /// SavedModel signature names no advice output).
  std::string AdviceOutput;
};

class TfModelRunner final : public EmbeddedModelRunner {
public:
  /// A runner over Model. Errors: an unknown Options.AdviceOutput, or a
  /// model description that does not match its compiled code.
  static Expected<std::unique_ptr<TfModelRunner>>
  create(const EmbeddedModel &Model, TfOptions Options = TfOptions());
  ~TfModelRunner() override;

  // model(), outputCount, outputSpec, outputIndex, selectAdvice, output:
  // EmbeddedModelRunner and InProcessModelRunner (specs as in the
  // signature; scalars are [1]).

  /// Another runner over the same compiled model with the same advice
  /// output and options, for another thread.
  Expected<std::unique_ptr<TfModelRunner>> clone() const;

private:
  TfModelRunner(CreateTag, const EmbeddedModel &Model, TfOptions Options);
};

/// The runner of the XLA-compiled model Model (e.g.
/// my::InlinerPolicyModel()) for makeRunner (mlbridge/runner_settings.h),
/// named by the model; its output named like the advice, if any, is the
/// advice (adviceNamedLike).
RunnerFactory tfRunnerFactory(const EmbeddedModel &Model);

} // namespace mlbridge

#endif // MLBRIDGE_TF_MODEL_RUNNER_H
