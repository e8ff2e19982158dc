//===- tf/tf_model_runner.cpp - Models compiled by XLA ahead of time ------===//
//
// All of the running is EmbeddedModelRunner's (core/in_process_model_runner
// .cpp); the generated adapter (tools/tf-aot/tfaot_compile.py) makes the
// class XLA generated an EmbeddedModel instance. This file adds only how a
// runner is created.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/tf_model_runner.h"

namespace mlbridge {

Expected<std::unique_ptr<TfModelRunner>>
TfModelRunner::create(const EmbeddedModel &Model, TfOptions Options) {
  return created(std::unique_ptr<TfModelRunner>(
      new TfModelRunner(CreateTag(), Model, std::move(Options))));
}

TfModelRunner::TfModelRunner(CreateTag, const EmbeddedModel &M,
                             TfOptions Options)
    : EmbeddedModelRunner(M, "TF-AOT model", Options.AdviceOutput, Options) {}

TfModelRunner::~TfModelRunner() = default;

Expected<std::unique_ptr<TfModelRunner>> TfModelRunner::clone() const {
  return create(model(), cloneOptions<TfOptions>());
}

RunnerFactory tfRunnerFactory(const EmbeddedModel &Model) {
  return {RunnerKind::Tf, Model.Name,
          [&Model](const RunnerSettings &S, const std::vector<TensorSpec> &,
                   const TensorSpec &Advice)
              -> Expected<std::unique_ptr<ModelRunner>> {
            TfOptions O;
            O.Diagnostics = S.Diagnostics;
            auto R = TfModelRunner::create(Model, O);
            if (!R)
              return R.takeStatus().addContext(std::string("tf: ") + Model.Name);
            return adviceNamedLike(std::move(*R), Advice);
          }};
}

} // namespace mlbridge
