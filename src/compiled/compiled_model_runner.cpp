//===- compiled/compiled_model_runner.cpp - Models compiled to C++ --------===//
//
// All of the running is EmbeddedModelRunner's (core/in_process_model_runner
// .cpp); a compiled model adds only how a runner is created.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/compiled_model_runner.h"

namespace mlbridge {

Expected<std::unique_ptr<CompiledModelRunner>>
CompiledModelRunner::create(const EmbeddedModel &Model,
                            CompiledModelOptions Options) {
  return created(std::unique_ptr<CompiledModelRunner>(
      new CompiledModelRunner(CreateTag(), Model, std::move(Options))));
}

CompiledModelRunner::CompiledModelRunner(CreateTag, const EmbeddedModel &M,
                                         CompiledModelOptions Options)
    : EmbeddedModelRunner(M, "compiled model", Options.AdviceOutput,
                          Options) {}

CompiledModelRunner::~CompiledModelRunner() = default;

Expected<std::unique_ptr<CompiledModelRunner>>
CompiledModelRunner::clone() const {
  return create(model(), cloneOptions<CompiledModelOptions>());
}

RunnerFactory compiledRunnerFactory(const EmbeddedModel &Model) {
  return {RunnerKind::Compiled, Model.Name,
          [&Model](const RunnerSettings &S, const std::vector<TensorSpec> &,
                   const TensorSpec &Advice)
              -> Expected<std::unique_ptr<ModelRunner>> {
            CompiledModelOptions O;
            O.Diagnostics = S.Diagnostics;
            auto R = CompiledModelRunner::create(Model, O);
            if (!R)
              return R.takeStatus().addContext(std::string("compiled: ") +
                                               Model.Name);
            return adviceNamedLike(std::move(*R), Advice);
          }};
}

} // namespace mlbridge
