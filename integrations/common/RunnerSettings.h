//===- RunnerSettings.h - The runners of an in-tree integration -*- C++ -*-===//
//
// The LLVM plugins and the MLIR plugin take their runner settings, runner
// creation, feature binding and log line from the public library
// (mlbridge/runner_settings.h, mlbridge/feature_binding.h,
// mlbridge/log_line.h), under the names they have always used
// (mlbridge::integrations::X is mlbridge::X). What is theirs alone is which
// runners the in-tree build gives them: MLBRIDGE_INTEGRATION_HAVE_{ONNX,
// GRPC,COMPILED} say which optional runners the integration was built with
// (integrations/common/MLBridgeIntegration.cmake), and a plugin with a
// compiled-in model names it with MLBRIDGE_EMBEDDED_MODEL.
//
// Compiled into each integration from source. It uses the mlbridge library
// only, never LLVM or MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_COMMON_RUNNERSETTINGS_H
#define MLBRIDGE_INTEGRATIONS_COMMON_RUNNERSETTINGS_H

#include "mlbridge/feature_binding.h"
#include "mlbridge/log_line.h"
#include "mlbridge/runner_settings.h"
#if MLBRIDGE_INTEGRATION_HAVE_COMPILED
#include "mlbridge/compiled_model_runner.h"
#endif

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge::integrations {

using namespace ::mlbridge;

/// The runner settings of an integration whose options are looked up by
/// Lookup, with its environment variables under EnvPrefix
/// ("MLBRIDGE_INLINE_"), and the runners of this build; EmbeddedModel names
/// the model compiled into the integration ("" if none), made by
/// RunnerRequest::MakeEmbedded.
Expected<RunnerSettings> readRunnerSettings(const OptionLookup &Lookup,
                                            const std::string &EnvPrefix,
                                            std::string EmbeddedModel);

/// What an integration asks of a runner: its features and advice, where
/// the runner's messages go, and how its compiled-in model is made (set
/// only when it embeds one).
struct RunnerRequest {
  std::vector<TensorSpec> Features;
  TensorSpec Advice;
  DiagnosticSink Diagnostics;
  std::function<Expected<std::unique_ptr<ModelRunner>>()> MakeEmbedded;
};

/// The model compiled into an integration, or none: its class name (named
/// in the settings' remark) and RunnerRequest::MakeEmbedded.
struct EmbeddedModelRef {
  const char *Name = "";
  Expected<std::unique_ptr<ModelRunner>> (*Make)() = nullptr;
};

#if MLBRIDGE_INTEGRATION_HAVE_COMPILED
/// RunnerRequest::MakeEmbedded of an integration that embeds the compiled
/// model Model.
template <typename Model>
Expected<std::unique_ptr<ModelRunner>> makeCompiledRunner() {
  return CompiledModelRunner::create<Model>();
}
#endif

/// The EmbeddedModelRef of the generated class mlbridge_plugins::Class when
/// the build compiled the integration's model in, else the empty one (the
/// class does not exist then, hence a macro).
#if MLBRIDGE_INTEGRATION_HAVE_COMPILED
#define MLBRIDGE_EMBEDDED_MODEL(Class)                                         \
  ::mlbridge::integrations::EmbeddedModelRef {                                 \
    #Class,                                                                    \
        &::mlbridge::integrations::makeCompiledRunner<::mlbridge_plugins::Class> \
  }
#else
#define MLBRIDGE_EMBEDDED_MODEL(Class) ::mlbridge::integrations::EmbeddedModelRef{}
#endif

/// mlbridge::makeBoundRunner for the runner K (resolveRunnerKind of S) and
/// the request R.
Expected<BoundRunner> makeBoundRunner(RunnerKind K, const RunnerSettings &S,
                                      const RunnerRequest &R,
                                      std::string_view Model,
                                      std::string_view Pass);

} // namespace mlbridge::integrations

#endif // MLBRIDGE_INTEGRATIONS_COMMON_RUNNERSETTINGS_H
