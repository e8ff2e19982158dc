//===- RunnerSettings.cpp - The runners of an in-tree integration ---------===//

#include "RunnerSettings.h"

#if MLBRIDGE_INTEGRATION_HAVE_ONNX
#include "mlbridge/onnx_model_runner.h"
#endif
#if MLBRIDGE_INTEGRATION_HAVE_GRPC
#include "mlbridge/grpc_model_runner.h"
#endif

namespace mlbridge::integrations {

Expected<RunnerSettings> readRunnerSettings(const OptionLookup &Lookup,
                                            const std::string &EnvPrefix,
                                            std::string EmbeddedModel) {
  RunnerSettings Base;
#if MLBRIDGE_INTEGRATION_HAVE_ONNX
  Base.Runners.push_back(onnxRunnerFactory());
#endif
#if MLBRIDGE_INTEGRATION_HAVE_GRPC
  Base.Runners.push_back(grpcRunnerFactory());
#endif
  // Made by RunnerRequest::MakeEmbedded (makeBoundRunner below).
  if (!EmbeddedModel.empty())
    Base.Runners.push_back({RunnerKind::Compiled, std::move(EmbeddedModel), nullptr});
  return mlbridge::readRunnerSettings(Lookup, EnvPrefix, std::move(Base));
}

Expected<BoundRunner> makeBoundRunner(RunnerKind K, const RunnerSettings &S,
                                      const RunnerRequest &R,
                                      std::string_view Model,
                                      std::string_view Pass) {
  RunnerSettings Chosen = S;
  Chosen.Kind = K;
  Chosen.Diagnostics = R.Diagnostics;
  for (RunnerFactory &F : Chosen.Runners)
    if (F.Kind == RunnerKind::Compiled && !F.Make && R.MakeEmbedded)
      F.Make = [Make = R.MakeEmbedded](const RunnerSettings &,
                                       const std::vector<TensorSpec> &,
                                       const TensorSpec &) { return Make(); };
  return mlbridge::makeBoundRunner(Chosen, R.Features, R.Advice, Model, Pass);
}

} // namespace mlbridge::integrations
