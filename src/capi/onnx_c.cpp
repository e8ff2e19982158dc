// C API of the ONNX runner (mlbridge/c/onnx.h): a thin shell over
// OnnxModelRunner, sharing the handle and error reporting of the core C API.
#include "capi/capi_internal.h"

#include "mlbridge/c/onnx.h"
#include "mlbridge/onnx_model_runner.h"

using namespace mlbridge;
using capi::fail;
using capi::finish;

namespace {

Expected<OnnxOptions> convert(const mlb_onnx_options *In) {
  const mlb_onnx_options C = capi::optionsOrDefaults(In, mlb_onnx_options_init);
  OnnxOptions O;
  if (C.advice_output)
    O.AdviceOutput = C.advice_output;
  O.Model.IntraOpThreads = C.intra_op_threads;
  if (C.dim_count && (!C.dim_names || !C.dim_values))
    return Status(ErrorCode::InvalidArgument,
                  "dim_count > 0 with null dim_names or dim_values");
  for (size_t K = 0; K < C.dim_count; ++K) {
    if (!C.dim_names[K])
      return Status(ErrorCode::InvalidArgument, "null name in dim_names");
    O.Model.DimValues.emplace_back(C.dim_names[K], C.dim_values[K]);
  }
  if (C.diagnostics_to_stderr)
    O.Diagnostics = stderrDiagnostics();
  return O;
}

/// Makes a runner with Make(options converted from Opts) and hands it over.
template <typename MakeFn>
mlb_status createWith(const mlb_onnx_options *Opts, mlb_runner **Out,
                      MakeFn Make) {
  Expected<OnnxOptions> O = convert(Opts);
  if (!O)
    return fail(O.status());
  return capi::giveRunner(Make(std::move(*O)), Out);
}

} // namespace

extern "C" {

void mlb_onnx_options_init(mlb_onnx_options *Opts) {
  if (!Opts)
    return;
  OnnxModelOptions Defaults;
  Opts->advice_output = nullptr;
  Opts->intra_op_threads = Defaults.IntraOpThreads;
  Opts->dim_names = nullptr;
  Opts->dim_values = nullptr;
  Opts->dim_count = 0;
  Opts->diagnostics_to_stderr = 0;
}

mlb_status mlb_onnx_runner_create(const char *Path,
                                  const mlb_onnx_options *Opts,
                                  mlb_runner **Out) {
  MLB_CHECK_ARG(Out, "output handle");
  *Out = nullptr;
  MLB_CHECK_ARG(Path, "model path");
  return createWith(Opts, Out, [Path](OnnxOptions O) {
    return OnnxModelRunner::create(std::string(Path), std::move(O));
  });
}

mlb_status mlb_onnx_runner_create_from_bytes(const void *Data, size_t Size,
                                             const mlb_onnx_options *Opts,
                                             mlb_runner **Out) {
  MLB_CHECK_ARG(Out, "output handle");
  *Out = nullptr;
  MLB_CHECK_ARG(Data, "model bytes");
  return createWith(Opts, Out, [Data, Size](OnnxOptions O) {
    return OnnxModelRunner::createFromBytes(Data, Size, std::move(O));
  });
}

mlb_status mlb_onnx_run_float(const char *Path, const char *InputName,
                              const float *Features, size_t Count, float *Out,
                              size_t Capacity, size_t *OutCount) {
  MLB_CHECK_ARG(Path, "model path");
  MLB_CHECK_ARG(OutCount, "count pointer");
  *OutCount = 0;
  if (Count && !Features)
    return fail(ErrorCode::InvalidArgument, "null features with count > 0");
  if (Capacity && !Out)
    return fail(ErrorCode::InvalidArgument, "null output with capacity > 0");
  Expected<std::unique_ptr<OnnxModelRunner>> R =
      OnnxModelRunner::create(std::string(Path));
  if (!R)
    return fail(R.status());
  OnnxModelRunner &Runner = **R;
  std::string Name;
  if (InputName) {
    Name = InputName;
  } else if (Runner.featureCount() == 1) {
    Name = Runner.featureSpec(0).name();
  } else {
    return fail(Status(ErrorCode::InvalidArgument,
                       "the model has " +
                           std::to_string(Runner.featureCount()) +
                           " inputs; name the one to set"));
  }
  if (Status S = Runner.setFeatureBytes(Name, DType::Float,
                                        {static_cast<int64_t>(Count)},
                                        Features, Count * sizeof(float));
      !S.isOk())
    return fail(S);
  Expected<std::vector<float>> V = Runner.evaluate<std::vector<float>>();
  if (!V)
    return fail(V.status());
  return capi::copyAdvice(*V, Out, Capacity, OutCount);
}

mlb_status mlb_onnx_runner_from_settings(const mlb_runner_settings *S,
                                         mlb_runner **Out) {
  MLB_CHECK_ARG(S, "settings");
  return mlb_onnx_runner_create(S->model, nullptr, Out);
}

} // extern "C"
