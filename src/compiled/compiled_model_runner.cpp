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

} // namespace mlbridge
