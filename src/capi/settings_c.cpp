// C API: a runner from settings (mlbridge/c/settings.h), on the C++ one
// (mlbridge/runner_settings.h): the same parser, "auto" rule and pipe and
// shm runners; the ONNX and gRPC runners come from the caller's factories
// (their own libraries).
#include "capi/capi_internal.h"

#include "mlbridge/c/settings.h"
#include "mlbridge/runner_settings.h"

#include <cstring>

using namespace mlbridge;
using capi::fail;

namespace {

bool given(const char *S) { return S && *S; }

struct KindPair {
  mlb_runner_kind C;
  RunnerKind Cxx;
};
constexpr KindPair Kinds[] = {
    {MLB_RUNNER_AUTO, RunnerKind::Auto}, {MLB_RUNNER_DEFAULT, RunnerKind::Default},
    {MLB_RUNNER_PIPE, RunnerKind::Pipe}, {MLB_RUNNER_GRPC, RunnerKind::Grpc},
    {MLB_RUNNER_ONNX, RunnerKind::Onnx}, {MLB_RUNNER_SHM, RunnerKind::Shm}};

std::optional<mlb_runner_kind> toC(RunnerKind K) {
  for (const KindPair &P : Kinds)
    if (P.Cxx == K)
      return P.C;
  return std::nullopt;
}

RunnerKind toCxx(mlb_runner_kind K) {
  for (const KindPair &P : Kinds)
    if (P.C == K)
      return P.Cxx;
  return RunnerKind::Default;
}

/// The C++ settings of a C program: the core runners only (its ONNX and
/// gRPC runners are made by its factories).
RunnerSettings toCxx(const mlb_runner_settings &S) {
  RunnerSettings R;
  R.Kind = toCxx(S.kind);
  R.Channel = given(S.channel) ? S.channel : "";
  R.Socket = given(S.socket) ? S.socket : "";
  R.Server = given(S.server) ? S.server : "";
  R.Model = given(S.model) ? S.model : "";
  R.Format = S.serdes == MLB_SERDES_JSON        ? "json"
             : S.serdes == MLB_SERDES_BITSTREAM ? "bitstream"
                                                : "protobuf";
  R.Timeout = std::chrono::milliseconds(S.timeout_ms);
  return R;
}

mlb_status fromFactory(mlb_runner_factory Factory, const char *Component,
                       const mlb_runner_settings *S, mlb_runner **Out) {
  if (!Factory)
    return fail(Status(ErrorCode::NotFound,
                       std::string("the '") + Component +
                           "' runner is not linked into this program (set "
                           "mlb_runner_settings." +
                           Component + " = mlb_" + Component +
                           "_runner_from_settings)"));
  return Factory(S, Out);
}

} // namespace

extern "C" {

void mlb_runner_settings_init(mlb_runner_settings *S) {
  if (!S)
    return;
  std::memset(S, 0, sizeof *S);
  S->kind = MLB_RUNNER_AUTO;
  S->serdes = MLB_SERDES_BITSTREAM;
  S->timeout_ms = 30000;
}

const char *mlb_runner_kind_name(mlb_runner_kind K) {
  for (const KindPair &P : Kinds)
    if (P.C == K)
      return runnerKindName(P.Cxx);
  return "?";
}

mlb_status mlb_runner_settings_set(mlb_runner_settings *S, const char *Key,
                                   const char *Value) {
  MLB_CHECK_ARG(S, "settings");
  MLB_CHECK_ARG(Key, "key");
  MLB_CHECK_ARG(Value, "value");
  // Parsed by the C++ rule into a copy: a bad value changes nothing.
  RunnerSettings R = toCxx(*S);
  if (Status St = setRunnerSetting(R, Key, Value); !St.isOk())
    return fail(St);
  const std::string K = Key;
  if (K == "runner") {
    std::optional<mlb_runner_kind> C = toC(R.Kind);
    if (!C)
      return fail(Status(ErrorCode::InvalidArgument,
                         std::string("runner '") + Value +
                             "' has no C settings (auto, pipe, shm, grpc, "
                             "onnx, default, none)"));
    S->kind = *C;
  } else if (K == "channel")
    S->channel = Value;
  else if (K == "socket")
    S->socket = Value;
  else if (K == "server")
    S->server = Value;
  else if (K == "model")
    S->model = Value;
  else if (K == "format") {
    if (R.Format != "bitstream" && R.Format != "json")
      return fail(Status(ErrorCode::InvalidArgument,
                         std::string("unknown format '") + Value +
                             "' (bitstream or json)"));
    S->serdes = R.Format == "json" ? MLB_SERDES_JSON : MLB_SERDES_BITSTREAM;
  } else if (K == "timeout-ms")
    S->timeout_ms = static_cast<int>(R.Timeout.count());
  return MLB_OK;
}

mlb_runner_kind mlb_runner_settings_resolve(const mlb_runner_settings *S) {
  if (!S)
    return MLB_RUNNER_DEFAULT;
  // The core runners' settings make no compiled-in kind: always a C kind.
  return toC(resolveRunnerKind(toCxx(*S))).value_or(MLB_RUNNER_DEFAULT);
}

mlb_status mlb_runner_create_from_settings(const mlb_runner_settings *S,
                                           mlb_runner_kind *Kind,
                                           mlb_runner **Out) {
  MLB_CHECK_ARG(Out, "output handle");
  *Out = nullptr;
  MLB_CHECK_ARG(S, "settings");
  const mlb_runner_kind K = mlb_runner_settings_resolve(S);
  if (Kind)
    *Kind = K;
  mlb_status St = MLB_OK;
  switch (K) {
  case MLB_RUNNER_AUTO:
  case MLB_RUNNER_DEFAULT:
    return MLB_OK;
  case MLB_RUNNER_PIPE:
  case MLB_RUNNER_SHM: {
    RunnerSettings R = toCxx(*S);
    R.Kind = toCxx(K);
    return capi::giveRunner(
        makeRunner(R, {},
                   TensorSpec::create<int64_t>(S->advice ? S->advice : "action")),
        Out);
  }
  case MLB_RUNNER_GRPC:
    if (!given(S->server))
      return fail(ErrorCode::InvalidArgument,
                  "grpc: no server address given (host:port)");
    St = fromFactory(S->grpc, "grpc", S, Out);
    break;
  case MLB_RUNNER_ONNX:
    if (!given(S->model))
      return fail(ErrorCode::InvalidArgument, "onnx: no model file given");
    // An ONNX runner's advice is the model's output.
    return fromFactory(S->onnx, "onnx", S, Out);
  }
  if (St != MLB_OK)
    return St;
  const int64_t Shape[1] = {1};
  St = mlb_set_advice_spec(*Out, S->advice ? S->advice : "action", MLB_INT64,
                           Shape, 1);
  if (St != MLB_OK) {
    mlb_runner_destroy(*Out);
    *Out = nullptr;
  }
  return St;
}

} // extern "C"
