// The C API is a thin shell over ModelRunner: it converts arguments, maps
// Status to mlb_status, and keeps the last message per thread.
#include "capi/capi_internal.h"

#include "mlbridge/pipe_model_runner.h"
#include "mlbridge/shm_model_runner.h"

#include <string>

using namespace mlbridge;
using capi::fail;
using capi::finish;

namespace {
thread_local std::string LastError;
} // namespace

mlb_status mlbridge::capi::fail(const Status &S) {
  LastError = S.toString();
  return static_cast<mlb_status>(S.code());
}

mlb_status mlbridge::capi::fail(ErrorCode Code, const char *Message) {
  return fail(Status(Code, Message));
}

namespace {

template <typename T>
mlb_status setScalar(mlb_runner *R, const char *Name, T Value) {
  MLB_CHECK_RUNNER(R);
  MLB_CHECK_ARG(Name, "feature name");
  return finish(R->Runner->setFeatureBytes(Name, DTypeOf<T>::value, {1},
                                           &Value, sizeof(T)));
}

template <typename T>
mlb_status setArray(mlb_runner *R, const char *Name, const T *Values,
                    size_t Count) {
  MLB_CHECK_RUNNER(R);
  MLB_CHECK_ARG(Name, "feature name");
  if (Count && !Values)
    return fail(ErrorCode::InvalidArgument, "null values with count > 0");
  return finish(R->Runner->setFeatureBytes(
      Name, DTypeOf<T>::value, {static_cast<int64_t>(Count)}, Values,
      Count * sizeof(T)));
}

template <typename T> mlb_status evaluateScalar(mlb_runner *R, T *Out) {
  MLB_CHECK_RUNNER(R);
  MLB_CHECK_ARG(Out, "output pointer");
  Expected<T> V = R->Runner->evaluate<T>();
  if (!V)
    return fail(V.status());
  *Out = *V;
  return MLB_OK;
}

template <typename T>
mlb_status evaluateArray(mlb_runner *R, T *Out, size_t Capacity,
                         size_t *Count) {
  MLB_CHECK_RUNNER(R);
  MLB_CHECK_ARG(Count, "count pointer");
  if (Capacity && !Out)
    return fail(ErrorCode::InvalidArgument, "null output with capacity > 0");
  Expected<std::vector<T>> V = R->Runner->evaluate<std::vector<T>>();
  if (!V)
    return fail(V.status());
  return capi::copyAdvice(*V, Out, Capacity, Count);
}

// mlb_serdes numbers the formats as SerDesKind does.
static_assert(MLB_SERDES_BITSTREAM == static_cast<int>(SerDesKind::Bitstream) &&
              MLB_SERDES_JSON == static_cast<int>(SerDesKind::Json) &&
              MLB_SERDES_PROTOBUF == static_cast<int>(SerDesKind::Protobuf));

Expected<SerDesKind> serdesKind(mlb_serdes S) {
  const int V = static_cast<int>(S); // any int a C caller passed
  if (V < MLB_SERDES_BITSTREAM || V > MLB_SERDES_PROTOBUF)
    return Status(ErrorCode::InvalidArgument, "unknown serdes kind");
  return static_cast<SerDesKind>(V);
}

/// What the pipe and the shared-memory runner take alike from C.
template <typename Options, typename COptions>
Expected<Options> streamOptions(mlb_serdes Serdes, const COptions &C) {
  Expected<SerDesKind> Format = serdesKind(Serdes);
  if (!Format)
    return Format.status();
  if (*Format == SerDesKind::Protobuf && !C.protobuf_serdes)
    return Status(ErrorCode::InvalidArgument,
                  "SerDes \"protobuf\" needs the options' protobuf_serdes: "
                  "set it to mlb_protobuf_serdes() (mlbridge/c/grpc.h, link "
                  "MLBridge::grpc)");
  Options O;
  O.Format = *Format;
  if (C.protobuf_serdes)
    O.ProtobufSerDes = C.protobuf_serdes->Make;
  O.OpenTimeout = std::chrono::milliseconds(C.open_timeout_ms);
  O.ReplyTimeout = std::chrono::milliseconds(C.reply_timeout_ms);
  if (C.diagnostics_to_stderr)
    O.Diagnostics = stderrDiagnostics();
  return O;
}

/// mlb_pipe_runner_create and mlb_shm_runner_create: checks the arguments
/// (NullWhere is the error for a null Where), converts the options
/// (SetOwn(C, O) copies those only this runner has) and creates the runner.
template <typename Runner, typename Options, typename COptions,
          typename SetOwnFn>
mlb_status createStreamRunner(const char *Where, const char *NullWhere,
                              mlb_serdes Serdes, const COptions *Opts,
                              void (*Init)(COptions *), SetOwnFn SetOwn,
                              mlb_runner **Out) {
  MLB_CHECK_ARG(Out, "output handle");
  *Out = nullptr;
  if (!Where)
    return fail(ErrorCode::InvalidArgument, NullWhere);
  const COptions C = capi::optionsOrDefaults(Opts, Init);
  Expected<Options> O = streamOptions<Options>(Serdes, C);
  if (!O)
    return fail(O.status());
  SetOwn(C, *O);
  return capi::giveRunner(
      Runner::create(Where, {}, std::nullopt, std::move(*O)), Out);
}

/// The C defaults of what streamOptions reads, from the C++ ones (D).
template <typename COptions, typename Options>
void initStreamOptions(COptions &C, const Options &D) {
  C.open_timeout_ms = static_cast<int>(D.OpenTimeout.count());
  C.reply_timeout_ms = static_cast<int>(D.ReplyTimeout.count());
  C.diagnostics_to_stderr = 0;
  C.protobuf_serdes = nullptr;
}

} // namespace

extern "C" {

void mlb_pipe_options_init(mlb_pipe_options *Opts) {
  if (!Opts)
    return;
  PipeOptions Defaults;
  initStreamOptions(*Opts, Defaults);
  Opts->create_fifos = Defaults.CreateFifos ? 1 : 0;
}

const char *mlb_last_error(void) { return LastError.c_str(); }

const char *mlb_status_name(mlb_status S) {
  return errorCodeName(static_cast<ErrorCode>(S));
}

mlb_status mlb_pipe_runner_create(const char *Base, mlb_serdes Serdes,
                                  const mlb_pipe_options *Opts,
                                  mlb_runner **Out) {
  return createStreamRunner<PipeModelRunner, PipeOptions>(
      Base, "null pipe base path", Serdes, Opts, mlb_pipe_options_init,
      [](const mlb_pipe_options &C, PipeOptions &O) {
        O.CreateFifos = C.create_fifos != 0;
      },
      Out);
}

void mlb_shm_options_init(mlb_shm_options *Opts) {
  if (!Opts)
    return;
  ShmOptions Defaults;
  initStreamOptions(*Opts, Defaults);
  Opts->spin_us = static_cast<int>(Defaults.Spin.count());
}

mlb_status mlb_shm_runner_create(const char *SocketPath, mlb_serdes Serdes,
                                 const mlb_shm_options *Opts,
                                 mlb_runner **Out) {
  return createStreamRunner<ShmModelRunner, ShmOptions>(
      SocketPath, "null shared-memory socket path", Serdes, Opts,
      mlb_shm_options_init,
      [](const mlb_shm_options &C, ShmOptions &O) {
        O.Spin = std::chrono::microseconds(C.spin_us);
      },
      Out);
}

mlb_status mlb_pipe_runner_set_session_ids(mlb_runner *R, int Offer) {
  MLB_CHECK_RUNNER(R);
  auto *Pipe = dynamic_cast<PipeModelRunner *>(R->Runner.get());
  if (!Pipe)
    return fail(ErrorCode::InvalidArgument,
                "session ids are a setting of pipe runners only");
  Pipe->setSessionIds(Offer != 0);
  return MLB_OK;
}

void mlb_runner_destroy(mlb_runner *R) { delete R; }

const char *mlb_dtype_name(mlb_dtype T) {
  return dtypeName(static_cast<DType>(T)).data();
}

size_t mlb_runner_input_count(const mlb_runner *R) {
  return R && R->Runner ? R->Runner->featureCount() : 0;
}

mlb_status mlb_runner_input_info(const mlb_runner *R, size_t I,
                                 const char **Name, mlb_dtype *Type,
                                 const int64_t **Shape, size_t *Rank) {
  MLB_CHECK_RUNNER(R);
  if (I >= R->Runner->featureCount())
    return fail(Status(ErrorCode::InvalidArgument,
                       "input " + std::to_string(I) + " of " +
                           std::to_string(R->Runner->featureCount())));
  const TensorSpec &S = R->Runner->featureSpec(I);
  if (Name)
    *Name = S.name().c_str();
  if (Type)
    *Type = static_cast<mlb_dtype>(S.type());
  if (Shape)
    *Shape = S.shape().data();
  if (Rank)
    *Rank = S.shape().size();
  return MLB_OK;
}

mlb_status mlb_set_advice_spec(mlb_runner *R, const char *Name, mlb_dtype Type,
                               const int64_t *Shape, size_t Rank) {
  MLB_CHECK_RUNNER(R);
  MLB_CHECK_ARG(Name, "advice name");
  if (static_cast<int>(Type) < 0 || static_cast<int>(Type) >= kNumDTypes)
    return fail(ErrorCode::InvalidArgument, "unknown dtype");
  if (Rank && !Shape)
    return fail(ErrorCode::InvalidArgument, "null shape with rank > 0");
  std::vector<int64_t> Dims(Shape, Shape + Rank);
  return finish(R->Runner->setAdviceSpec(
      TensorSpec(Name, static_cast<DType>(Type), std::move(Dims))));
}

mlb_status mlb_set_string(mlb_runner *R, const char *N, const char *V) {
  MLB_CHECK_RUNNER(R);
  MLB_CHECK_ARG(N, "feature name");
  MLB_CHECK_ARG(V, "string value");
  return finish(R->Runner->setFeature(N, std::string_view(V)));
}

mlb_status mlb_switch_context(mlb_runner *R, const char *Name) {
  MLB_CHECK_RUNNER(R);
  MLB_CHECK_ARG(Name, "context name");
  return finish(R->Runner->switchContext(Name));
}

// The typed entry points, one line per C type: its name in the entry points
// and the C++ type. (Each is its own extern "C" symbol of the stable ABI.)
#define MLB_TYPED_ENTRY_POINTS(Name, T)                                        \
  mlb_status mlb_set_##Name(mlb_runner *R, const char *N, T V) {               \
    return setScalar(R, N, V);                                                 \
  }                                                                            \
  mlb_status mlb_set_##Name##_array(mlb_runner *R, const char *N, const T *V,  \
                                    size_t C) {                                \
    return setArray(R, N, V, C);                                               \
  }                                                                            \
  mlb_status mlb_evaluate_##Name(mlb_runner *R, T *Out) {                      \
    return evaluateScalar(R, Out);                                             \
  }
MLB_TYPED_ENTRY_POINTS(int, int)
MLB_TYPED_ENTRY_POINTS(int64, int64_t)
MLB_TYPED_ENTRY_POINTS(float, float)
MLB_TYPED_ENTRY_POINTS(double, double)
MLB_TYPED_ENTRY_POINTS(bool, bool)
#undef MLB_TYPED_ENTRY_POINTS

// Vector advice, for the types a model returns as an array.
#define MLB_ARRAY_ADVICE_ENTRY_POINT(Name, T)                                  \
  mlb_status mlb_evaluate_##Name##_array(mlb_runner *R, T *Out,                \
                                         size_t Capacity, size_t *Count) {     \
    return evaluateArray(R, Out, Capacity, Count);                             \
  }
MLB_ARRAY_ADVICE_ENTRY_POINT(int64, int64_t)
MLB_ARRAY_ADVICE_ENTRY_POINT(float, float)
MLB_ARRAY_ADVICE_ENTRY_POINT(double, double)
#undef MLB_ARRAY_ADVICE_ENTRY_POINT

} // extern "C"
