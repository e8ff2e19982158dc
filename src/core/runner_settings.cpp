//===- core/runner_settings.cpp - A runner chosen by settings -------------===//

#include "mlbridge/runner_settings.h"

#include "mlbridge/pipe_model_runner.h"
#include "mlbridge/shm_model_runner.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <sys/stat.h>

namespace mlbridge {

namespace {

bool equalsIgnoringCase(std::string_view A, std::string_view B) {
  if (A.size() != B.size())
    return false;
  for (size_t I = 0; I < A.size(); ++I)
    if (std::tolower(static_cast<unsigned char>(A[I])) !=
        std::tolower(static_cast<unsigned char>(B[I])))
      return false;
  return true;
}

struct KindName {
  RunnerKind Kind;
  const char *Name;
};
constexpr KindName KindNames[] = {
    {RunnerKind::Auto, "auto"},         {RunnerKind::Onnx, "onnx"},
    {RunnerKind::Compiled, "compiled"}, {RunnerKind::Pipe, "pipe"},
    {RunnerKind::Shm, "shm"},           {RunnerKind::Grpc, "grpc"},
    {RunnerKind::Tf, "tf"},             {RunnerKind::Default, "default"}};

/// The settings that are taken as they are written.
struct TextSetting {
  RunnerSetting Setting;
  std::string RunnerSettings::*Field;
};
const TextSetting TextSettings[] = {
    {RunnerSetting::Model, &RunnerSettings::Model},
    {RunnerSetting::Channel, &RunnerSettings::Channel},
    {RunnerSetting::Socket, &RunnerSettings::Socket},
    {RunnerSetting::Server, &RunnerSettings::Server},
    {RunnerSetting::Format, &RunnerSettings::Format}};

std::string kindList() {
  std::string L;
  for (const KindName &N : KindNames)
    L += (L.empty() ? "" : ", ") + std::string(N.Name);
  return L;
}

Status applySetting(RunnerSettings &S, const RunnerOptionInfo &O,
                    const std::string &V) {
  switch (O.Setting) {
  case RunnerSetting::Runner: {
    std::optional<RunnerKind> K = parseRunnerKind(V);
    if (!K)
      return Status(ErrorCode::InvalidArgument,
                    "unknown runner '" + V + "' (" + kindList() + ")");
    S.Kind = *K;
    return Status::ok();
  }
  case RunnerSetting::TimeoutMs: {
    char *End = nullptr;
    errno = 0;
    const unsigned long Ms = std::strtoul(V.c_str(), &End, 10);
    if (V.empty() || *End || errno || V[0] == '-' || Ms == 0 ||
        Ms > 24ul * 3600 * 1000)
      return Status(ErrorCode::InvalidArgument,
                    "timeout-ms '" + V +
                        "' is not a number of milliseconds (1 to 86400000)");
    S.Timeout = std::chrono::milliseconds(Ms);
    return Status::ok();
  }
  default:
    for (const TextSetting &T : TextSettings)
      if (T.Setting == O.Setting)
        S.*T.Field = V;
    return Status::ok();
  }
}

Expected<SerDesKind> streamFormat(const char *Runner, const std::string &F) {
  if (F == "bitstream")
    return SerDesKind::Bitstream;
  if (F == "json")
    return SerDesKind::Json;
  return Status(ErrorCode::InvalidArgument, std::string(Runner) +
                                                ": unknown format '" + F +
                                                "' (bitstream or json)");
}

/// Creates the pipe or shm runner (Name in errors) at Where, with the
/// format, timeout and diagnostics of S.
template <typename Runner, typename Options>
Expected<std::unique_ptr<ModelRunner>>
openStream(const char *Name, const std::string &Where, const RunnerSettings &S,
           const std::vector<TensorSpec> &Features, const TensorSpec &Advice) {
  Expected<SerDesKind> F = streamFormat(Name, S.Format);
  if (!F)
    return F.takeStatus();
  Options O;
  O.Diagnostics = S.Diagnostics;
  O.Format = *F;
  O.OpenTimeout = S.Timeout;
  O.ReplyTimeout = S.Timeout;
  auto R = Runner::create(Where, Features, Advice, std::move(O));
  if (!R)
    return R.takeStatus().addContext(Name);
  return R;
}

bool isFifo(const std::string &Path) {
  struct stat St;
  return ::stat(Path.c_str(), &St) == 0 && S_ISFIFO(St.st_mode);
}

Expected<std::unique_ptr<ModelRunner>>
makePipe(const RunnerSettings &S, const std::vector<TensorSpec> &Features,
         const TensorSpec &Advice) {
  if (S.Channel.empty())
    return Status(ErrorCode::InvalidArgument,
                  "pipe: no channel given (the FIFO base path)");
  // Nobody would ever open FIFOs nobody made: no model side, no wait.
  if (!isFifo(S.Channel + ".in") || !isFifo(S.Channel + ".out"))
    return Status(ErrorCode::NotFound, "pipe: no FIFO pair '" + S.Channel +
                                           ".in'/'" + S.Channel + ".out'");
  return openStream<PipeModelRunner, PipeOptions>("pipe", S.Channel, S,
                                                 Features, Advice);
}

Expected<std::unique_ptr<ModelRunner>>
makeShm(const RunnerSettings &S, const std::vector<TensorSpec> &Features,
        const TensorSpec &Advice) {
  if (S.Socket.empty())
    return Status(ErrorCode::InvalidArgument,
                  "shm: no socket given (the model side's Unix socket)");
  struct stat St;
  if (::stat(S.Socket.c_str(), &St) != 0 || !S_ISSOCK(St.st_mode))
    return Status(ErrorCode::NotFound,
                  "shm: no model listening at '" + S.Socket + "' (no such socket)");
  return openStream<ShmModelRunner, ShmOptions>("shm", S.Socket, S, Features,
                                               Advice);
}

} // namespace

const RunnerOptionInfo RunnerOptionTable[NumRunnerOptions] = {
    {RunnerSetting::Runner, "runner", "RUNNER", "auto",
     "Who decides: auto | onnx | compiled | pipe | shm | grpc | default (no "
     "model: the compiler's own decision). auto: pipe if a channel is set, "
     "shm if a socket is set, grpc if a server is set, onnx if a model is "
     "set, else the compiled-in model if any."},
    {RunnerSetting::Model, "model", "MODEL", "", "ONNX model file (runner onnx)."},
    {RunnerSetting::Channel, "channel", "CHANNEL", "",
     "FIFO base path B (runner pipe): B.out carries features, B.in decisions."},
    {RunnerSetting::Socket, "socket", "SOCKET", "",
     "Unix socket of a shared-memory model side (runner shm)."},
    {RunnerSetting::Server, "server", "SERVER", "",
     "host:port of the model server (runner grpc)."},
    {RunnerSetting::Format, "format", "FORMAT", "bitstream",
     "Pipe and shm format: bitstream (LLVM's) | json."},
    {RunnerSetting::TimeoutMs, "timeout-ms", "TIMEOUT_MS", "30000",
     "Deadline for opening the channel and for each decision (pipe, shm, "
     "grpc), in ms."},
};

const char *runnerKindName(RunnerKind K) {
  for (const KindName &N : KindNames)
    if (N.Kind == K)
      return N.Name;
  return "?";
}

std::optional<RunnerKind> parseRunnerKind(std::string_view S) {
  if (equalsIgnoringCase(S, "none"))
    return RunnerKind::Default;
  for (const KindName &N : KindNames)
    if (equalsIgnoringCase(S, N.Name))
      return N.Kind;
  return std::nullopt;
}

std::vector<RunnerFactory> coreRunnerFactories() {
  return {{RunnerKind::Pipe, "", makePipe}, {RunnerKind::Shm, "", makeShm}};
}

const RunnerFactory *RunnerSettings::factory(RunnerKind K) const {
  for (const RunnerFactory &F : Runners)
    if (F.Kind == K)
      return &F;
  return nullptr;
}

Status setRunnerSetting(RunnerSettings &S, std::string_view Key,
                        std::string_view Value) {
  for (const RunnerOptionInfo &O : RunnerOptionTable)
    if (Key == O.Key)
      return applySetting(S, O, std::string(Value));
  std::string Keys;
  for (const RunnerOptionInfo &O : RunnerOptionTable)
    Keys += (Keys.empty() ? "" : ", ") + std::string(O.Key);
  return Status(ErrorCode::NotFound,
                "unknown setting '" + std::string(Key) + "' (" + Keys + ")");
}

std::string runnerEnvName(std::string_view Prefix, const RunnerOptionInfo &O) {
  std::string N(Prefix);
  if (!N.empty() && N.back() != '_')
    N += '_';
  return N + O.EnvSuffix;
}

std::string settingValue(bool Given, std::string Value, const std::string &Env) {
  if (!Given)
    if (const char *V = std::getenv(Env.c_str()); V && *V)
      return V;
  return Value;
}

bool parseBool(std::string_view S) {
  return !(S == "0" || equalsIgnoringCase(S, "false") ||
           equalsIgnoringCase(S, "off") || equalsIgnoringCase(S, "no"));
}

Expected<RunnerSettings> readRunnerSettings(const OptionLookup &Lookup,
                                            std::string_view EnvPrefix,
                                            RunnerSettings Base) {
  for (const RunnerOptionInfo &O : RunnerOptionTable) {
    auto [Value, Given] =
        Lookup ? Lookup(O) : std::make_pair(std::string(O.Default), false);
    const std::string V = settingValue(Given, std::move(Value),
                                       runnerEnvName(EnvPrefix, O));
    if (Status S = applySetting(Base, O, V); !S.isOk())
      return S;
  }
  return Base;
}

Expected<RunnerSettings> readRunnerSettings(std::string_view EnvPrefix,
                                            RunnerSettings Base) {
  return readRunnerSettings(OptionLookup(), EnvPrefix, std::move(Base));
}

RunnerKind resolveRunnerKind(const RunnerSettings &S) {
  if (S.Kind != RunnerKind::Auto)
    return S.Kind;
  if (!S.Channel.empty())
    return RunnerKind::Pipe;
  if (!S.Socket.empty())
    return RunnerKind::Shm;
  if (!S.Server.empty())
    return RunnerKind::Grpc;
  if (!S.Model.empty())
    return RunnerKind::Onnx;
  for (RunnerKind K : {RunnerKind::Compiled, RunnerKind::Tf})
    if (S.factory(K))
      return K;
  return RunnerKind::Default;
}

std::string availableRunners(const RunnerSettings &S) {
  std::string L;
  for (const RunnerFactory &F : S.Runners)
    if (F.Make)
      L += (L.empty() ? "" : " ") + std::string(runnerKindName(F.Kind));
  return L;
}

Expected<std::unique_ptr<ModelRunner>>
makeRunner(const RunnerSettings &S, const std::vector<TensorSpec> &Features,
           const TensorSpec &Advice) {
  const RunnerKind K = resolveRunnerKind(S);
  if (K == RunnerKind::Default)
    return std::unique_ptr<ModelRunner>();
  const RunnerFactory *F = S.factory(K);
  if (!F || !F->Make)
    return Status(ErrorCode::NotFound,
                  std::string("the '") + runnerKindName(K) +
                      "' runner is not built into this plugin or program "
                      "(available: " +
                      availableRunners(S) + ")");
  return F->Make(S, Features, Advice);
}

std::string runnerRemark(RunnerKind K, std::string_view What) {
  return std::string(What) + " by the " + runnerKindName(K) + " runner";
}

} // namespace mlbridge
