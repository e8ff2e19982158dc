// C API: a runner from settings (mlbridge/c/settings.h). The same settings
// and "auto" rule as the compiler plugins (integrations/common); the ONNX
// and gRPC runners come from the caller's factories (their own libraries).
#include "capi/capi_internal.h"

#include "mlbridge/c/settings.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <strings.h>
#include <sys/stat.h>

using namespace mlbridge;
using capi::fail;

namespace {

bool isFifo(const std::string &Path) {
  struct stat St;
  return ::stat(Path.c_str(), &St) == 0 && S_ISFIFO(St.st_mode);
}

bool given(const char *S) { return S && *S; }

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
  switch (K) {
  case MLB_RUNNER_AUTO:
    return "auto";
  case MLB_RUNNER_DEFAULT:
    return "default";
  case MLB_RUNNER_PIPE:
    return "pipe";
  case MLB_RUNNER_GRPC:
    return "grpc";
  case MLB_RUNNER_ONNX:
    return "onnx";
  }
  return "?";
}

mlb_status mlb_runner_settings_set(mlb_runner_settings *S, const char *Key,
                                   const char *Value) {
  MLB_CHECK_ARG(S, "settings");
  MLB_CHECK_ARG(Key, "key");
  MLB_CHECK_ARG(Value, "value");
  const std::string K = Key;
  if (K == "runner") {
    if (::strcasecmp(Value, "none") == 0) {
      S->kind = MLB_RUNNER_DEFAULT;
      return MLB_OK;
    }
    for (mlb_runner_kind C : {MLB_RUNNER_AUTO, MLB_RUNNER_DEFAULT,
                              MLB_RUNNER_PIPE, MLB_RUNNER_GRPC, MLB_RUNNER_ONNX})
      if (::strcasecmp(Value, mlb_runner_kind_name(C)) == 0) {
        S->kind = C;
        return MLB_OK;
      }
    return fail(Status(ErrorCode::InvalidArgument,
                       std::string("unknown runner '") + Value +
                           "' (auto, pipe, grpc, onnx, default, none)"));
  }
  if (K == "channel")
    S->channel = Value;
  else if (K == "server")
    S->server = Value;
  else if (K == "model")
    S->model = Value;
  else if (K == "format") {
    if (std::strcmp(Value, "bitstream") == 0)
      S->serdes = MLB_SERDES_BITSTREAM;
    else if (std::strcmp(Value, "json") == 0)
      S->serdes = MLB_SERDES_JSON;
    else
      return fail(Status(ErrorCode::InvalidArgument,
                         std::string("unknown format '") + Value +
                             "' (bitstream or json)"));
  } else if (K == "timeout-ms") {
    char *End = nullptr;
    errno = 0;
    const long Ms = std::strtol(Value, &End, 10);
    if (!*Value || *End || errno || Ms <= 0 || Ms > 3600000)
      return fail(Status(ErrorCode::InvalidArgument,
                         std::string("timeout-ms '") + Value +
                             "' is not a positive number of ms (at most 3600000)"));
    S->timeout_ms = static_cast<int>(Ms);
  } else {
    return fail(Status(ErrorCode::NotFound,
                       "unknown setting '" + K +
                           "' (runner, channel, server, model, format, "
                           "timeout-ms)"));
  }
  return MLB_OK;
}

mlb_runner_kind mlb_runner_settings_resolve(const mlb_runner_settings *S) {
  if (!S)
    return MLB_RUNNER_DEFAULT;
  if (S->kind != MLB_RUNNER_AUTO)
    return S->kind;
  if (given(S->channel))
    return MLB_RUNNER_PIPE;
  if (given(S->server))
    return MLB_RUNNER_GRPC;
  if (given(S->model))
    return MLB_RUNNER_ONNX;
  return MLB_RUNNER_DEFAULT;
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
  case MLB_RUNNER_PIPE: {
    if (!given(S->channel))
      return fail(ErrorCode::InvalidArgument,
                  "pipe: no channel given (the FIFO base path)");
    const std::string Base = S->channel;
    if (!isFifo(Base + ".in") || !isFifo(Base + ".out"))
      return fail(Status(ErrorCode::NotFound, "pipe: no FIFO pair '" + Base +
                                                  ".in'/'" + Base + ".out'"));
    mlb_pipe_options O;
    mlb_pipe_options_init(&O);
    O.open_timeout_ms = S->timeout_ms;
    O.reply_timeout_ms = S->timeout_ms;
    St = mlb_pipe_runner_create(S->channel, S->serdes, &O, Out);
    break;
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
