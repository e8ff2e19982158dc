//===- mlbridge/tf_model_runner.h - A model compiled by XLA AOT -*- C++ -*-===//
//
// TfModelRunner runs a TensorFlow model that XLA compiled ahead of time into
// the program (the paper's fastest runner; LLVM's release-mode ML advisors
// ship their models this way). No TensorFlow, Python or file is needed at
// run time: the model is machine code and constants linked into the binary.
//
// The build compiles the model (cmake/MLBridgeTFAOT.cmake, docs/tf-aot.md):
//
//   mlbridge_add_tf_aot_model(inliner_model SAVED_MODEL ${DIR}
//                             NAME my::InlinerPolicy)
//   target_link_libraries(my_pass PRIVATE inliner_model)
//
// and generates "inliner_model.h", declaring the model's description
// `const mlbridge::TfAotModel &my::InlinerPolicyModel();`. Then:
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
// Threads: a runner owns the compiled function's argument, result and
// scratch buffers, so one runner is used by one thread at a time. Give each
// thread its own runner -- clone() or another create() call over the
// same TfAotModel -- which shares the code and constants (read-only) and
// costs a few buffers of the model's size. Runners over one model on
// different threads run fully in parallel, without locks.
//
// This header needs neither TensorFlow's headers nor exceptions or RTTI.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_TF_MODEL_RUNNER_H
#define MLBRIDGE_TF_MODEL_RUNNER_H

#include "mlbridge/in_process_model_runner.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge {

/// One input or output of a compiled signature.
struct TfAotTensorInfo {
  const char *Name;    ///< the signature key: feature or output name
  const char *XlaName; ///< tfcompile's name ("feed_<key>", "fetch_<key>")
  DType Type;
  const int64_t *Shape; ///< Rank dims (Rank 0: a scalar)
  size_t Rank;
};

/// A model compiled by mlbridge_add_tf_aot_model: its signature and a
/// type-erased handle on the class XLA generated. The build generates one
/// per model (`<Class>Model()`); there is no need to fill one by hand.
/// The function pointers never throw.
struct TfAotModel {
  const char *Name;
  const TfAotTensorInfo *Inputs;
  size_t NumInputs;
  const TfAotTensorInfo *Outputs;
  size_t NumOutputs;
  /// A new instance with its own buffers; nullptr if allocation failed.
  void *(*Create)();
  void (*Destroy)(void *Instance);
  /// Runs the computation on the argument buffers; false on failure.
  bool (*Run)(void *Instance);
  void *(*ArgData)(void *Instance, int Index);
  const void *(*ResultData)(const void *Instance, int Index);
  int64_t (*ArgBytes)(const void *Instance, int Index);
  /// Positional index of tfcompile's feed/fetch name, or -1.
  int (*ArgIndex)(const void *Instance, const char *XlaName);
  int (*ResultIndex)(const void *Instance, const char *XlaName);
};

/// Options of a TfModelRunner.
struct TfOptions : RunnerOptions {
  /// The output used as advice. Empty: the first output (in name order).
  std::string AdviceOutput;
};

class TfModelRunner final : public InProcessModelRunner {
public:
  /// A runner over Model. Errors: an unknown Options.AdviceOutput, or a
  /// model description that does not match its compiled code.
  static Expected<std::unique_ptr<TfModelRunner>>
  create(const TfAotModel &Model, TfOptions Options = TfOptions());
  /// The 0.1 form, with the advice output as an argument; removed in the
  /// release after 0.2.
  [[deprecated("use create(Model, TfOptions)")]] static Expected<
      std::unique_ptr<TfModelRunner>>
  create(const TfAotModel &Model, std::string_view AdviceOutput,
         RunnerOptions Options = RunnerOptions()) {
    return create(Model, withAdvice(AdviceOutput, std::move(Options)));
  }

  /// Same as create(), for code that prefers a plain object: an error is
  /// reported by every later call instead.
  explicit TfModelRunner(const TfAotModel &Model,
                         TfOptions Options = TfOptions());
  [[deprecated("use TfModelRunner(Model, TfOptions)")]] TfModelRunner(
      const TfAotModel &Model, std::string_view AdviceOutput,
      RunnerOptions Options = RunnerOptions())
      : TfModelRunner(Model, withAdvice(AdviceOutput, std::move(Options))) {}
  ~TfModelRunner() override;

  const TfAotModel &model() const { return *Model; }

  // outputCount, outputSpec, outputIndex, selectAdvice, output:
  // InProcessModelRunner (specs as in the signature; scalars are [1]).

  /// The 0.1 name of selectAdvice (the ONNX and compiled runners' name);
  /// removed in the release after 0.2.
  [[deprecated("use selectAdvice")]] Status selectOutput(std::string_view Name) {
    return selectAdvice(Name);
  }

  /// Another runner over the same compiled model with the same advice
  /// output and options, for another thread.
  Expected<std::unique_ptr<TfModelRunner>> clone() const;

private:
  struct Instance;

  static TfOptions withAdvice(std::string_view AdviceOutput,
                              RunnerOptions Options) {
    TfOptions O;
    static_cast<RunnerOptions &>(O) = std::move(Options);
    O.AdviceOutput = std::string(AdviceOutput);
    return O;
  }
  Status doEvaluate(const std::vector<const TensorValue *> &Features,
                    bool FeaturesChanged, const TensorSpec &Spec,
                    TensorValue &Out) override;
  const TensorValue *evaluatedOutput(size_t I) const override;

  const TfAotModel *Model;
  std::unique_ptr<Instance> Inst;
  /// The outputs of the last evaluation: views of the compiled function's
  /// result buffers (no copy).
  std::vector<TensorValue> OutputViews;
  bool HaveResults = false;
};

/// Deprecated names from 0.1 (acronyms are written Tf, Aot, Onnx, Json since
/// then); they will be removed in the release after 0.2. Model headers made
/// by an older build use TFAOTModel and keep compiling, with a warning.
using TFModelRunner [[deprecated("renamed TfModelRunner")]] = TfModelRunner;
using TFAOTModel [[deprecated("renamed TfAotModel")]] = TfAotModel;
using TFAOTTensorInfo [[deprecated("renamed TfAotTensorInfo")]] =
    TfAotTensorInfo;

} // namespace mlbridge

#endif // MLBRIDGE_TF_MODEL_RUNNER_H
