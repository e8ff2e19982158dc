//===- RunnerSettings.cpp - What every compiler integration shares --------===//

#include "RunnerSettings.h"

#include "mlbridge/json_escape.h"
#include "mlbridge/pipe_model_runner.h"
#if MLBRIDGE_INTEGRATION_HAVE_ONNX
#include "mlbridge/onnx_model_runner.h"
#endif
#if MLBRIDGE_INTEGRATION_HAVE_GRPC
#include "mlbridge/grpc_model_runner.h"
#endif

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

namespace mlbridge::integrations {

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
    {RunnerKind::Auto, "auto"}, {RunnerKind::Onnx, "onnx"},
    {RunnerKind::Compiled, "compiled"}, {RunnerKind::Pipe, "pipe"},
    {RunnerKind::Grpc, "grpc"}, {RunnerKind::Default, "default"}};

/// The settings that are taken as they are written.
struct TextSetting {
  RunnerSetting Setting;
  std::string RunnerSettings::*Field;
};
const TextSetting TextSettings[] = {
    {RunnerSetting::Model, &RunnerSettings::Model},
    {RunnerSetting::Channel, &RunnerSettings::Channel},
    {RunnerSetting::Server, &RunnerSettings::Server},
    {RunnerSetting::Format, &RunnerSettings::Format}};

} // namespace

const RunnerOptionInfo RunnerOptionTable[NumRunnerOptions] = {
    {RunnerSetting::Runner, "runner", "RUNNER", "auto",
     "Who decides: auto | onnx | compiled | pipe | grpc | default (no model: "
     "the compiler's own decision). auto: pipe if a channel is set, grpc if a "
     "server is set, onnx if a model is set, else the compiled-in model if "
     "any."},
    {RunnerSetting::Model, "model", "MODEL", "", "ONNX model file (runner onnx)."},
    {RunnerSetting::Channel, "channel", "CHANNEL", "",
     "FIFO base path B (runner pipe): B.out carries features, B.in decisions."},
    {RunnerSetting::Server, "server", "SERVER", "",
     "host:port of the model server (runner grpc)."},
    {RunnerSetting::Format, "format", "FORMAT", "bitstream",
     "Pipe format: bitstream (LLVM's) | json."},
    {RunnerSetting::TimeoutMs, "timeout-ms", "TIMEOUT_MS", "30000",
     "Deadline for opening the channel and for each decision (pipe, grpc), "
     "in ms."},
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
                                            const std::string &EnvPrefix,
                                            std::string EmbeddedModel) {
  RunnerSettings S;
  S.EmbeddedModel = std::move(EmbeddedModel);
  for (const RunnerOptionInfo &O : RunnerOptionTable) {
    auto [Value, Given] = Lookup(O);
    const std::string V =
        settingValue(Given, std::move(Value), EnvPrefix + O.EnvSuffix);
    if (O.Setting == RunnerSetting::Runner) {
      std::optional<RunnerKind> K = parseRunnerKind(V);
      if (!K)
        return Status(ErrorCode::InvalidArgument,
                      "unknown runner '" + V +
                          "' (auto, onnx, compiled, pipe, grpc, default)");
      S.Kind = *K;
    } else if (O.Setting == RunnerSetting::TimeoutMs) {
      char *End = nullptr;
      errno = 0;
      const unsigned long Ms = std::strtoul(V.c_str(), &End, 10);
      if (V.empty() || *End || errno || Ms > 24ul * 3600 * 1000)
        return Status(ErrorCode::InvalidArgument,
                      "timeout-ms '" + V + "' is not a number of milliseconds");
      S.Timeout = std::chrono::milliseconds(Ms);
    } else {
      for (const TextSetting &T : TextSettings)
        if (T.Setting == O.Setting)
          S.*T.Field = V;
    }
  }
  return S;
}

bool runnerAvailable(RunnerKind K) {
  switch (K) {
  case RunnerKind::Onnx:
    return MLBRIDGE_INTEGRATION_HAVE_ONNX;
  case RunnerKind::Grpc:
    return MLBRIDGE_INTEGRATION_HAVE_GRPC;
  case RunnerKind::Compiled:
    return MLBRIDGE_INTEGRATION_HAVE_COMPILED;
  case RunnerKind::Auto:
  case RunnerKind::Pipe:
  case RunnerKind::Default:
    return true;
  }
  return false;
}

std::string availableRunners() {
  std::string S = "pipe";
  for (RunnerKind K : {RunnerKind::Onnx, RunnerKind::Compiled, RunnerKind::Grpc})
    if (runnerAvailable(K))
      S += std::string(" ") + runnerKindName(K);
  return S;
}

RunnerKind resolveRunnerKind(const RunnerSettings &S) {
  if (S.Kind != RunnerKind::Auto)
    return S.Kind;
  if (!S.Channel.empty())
    return RunnerKind::Pipe;
  if (!S.Server.empty())
    return RunnerKind::Grpc;
  if (!S.Model.empty())
    return RunnerKind::Onnx;
  if (!S.EmbeddedModel.empty())
    return RunnerKind::Compiled;
  return RunnerKind::Default;
}

Status checkChannel(RunnerKind K, const RunnerSettings &S) {
  if (K != RunnerKind::Pipe)
    return Status::ok();
  if (S.Channel.empty())
    return Status(ErrorCode::InvalidArgument,
                  "pipe: no channel given (the FIFO base path)");
  struct stat In, Out;
  if (::stat((S.Channel + ".in").c_str(), &In) != 0 ||
      ::stat((S.Channel + ".out").c_str(), &Out) != 0)
    return Status(ErrorCode::NotFound, "pipe: no FIFO pair '" + S.Channel +
                                           ".in'/'" + S.Channel + ".out'");
  return Status::ok();
}

namespace {

Status notBuilt(RunnerKind K) {
  return Status(ErrorCode::NotFound,
                std::string("the '") + runnerKindName(K) +
                    "' runner is not built into this plugin (available: " +
                    availableRunners() + ")");
}

#if MLBRIDGE_INTEGRATION_HAVE_ONNX
/// One loaded session per model file and process: an LLVM inline advisor is
/// created for every inliner run and a pass for every module, but the model
/// is loaded once (an OnnxModel is immutable and shareable).
Expected<std::shared_ptr<const OnnxModel>> loadOnnxModel(const std::string &Path) {
  static std::mutex Lock;
  static std::map<std::string, std::shared_ptr<const OnnxModel>> Cache;
  std::lock_guard<std::mutex> G(Lock);
  auto It = Cache.find(Path);
  if (It != Cache.end())
    return It->second;
  auto M = OnnxModel::load(Path);
  if (!M)
    return M.takeStatus();
  Cache.emplace(Path, *M);
  return std::move(*M);
}
#endif

} // namespace

Expected<std::unique_ptr<ModelRunner>> makeRunner(RunnerKind K,
                                                  const RunnerSettings &S,
                                                  const RunnerRequest &R) {
  if (Status C = checkChannel(K, S); !C.isOk())
    return C;
  switch (K) {
  case RunnerKind::Pipe: {
    PipeOptions O;
    O.Diagnostics = R.Diagnostics;
    if (S.Format == "json")
      O.Format = SerDesKind::Json;
    else if (S.Format == "bitstream")
      O.Format = SerDesKind::Bitstream;
    else
      return Status(ErrorCode::InvalidArgument,
                    "pipe: unknown format '" + S.Format +
                        "' (bitstream or json)");
    O.OpenTimeout = S.Timeout;
    O.ReplyTimeout = S.Timeout;
    auto P = PipeModelRunner::create(S.Channel, R.Features, R.Advice, O);
    if (!P)
      return P.takeStatus().addContext("pipe");
    return std::unique_ptr<ModelRunner>(std::move(*P));
  }
  case RunnerKind::Onnx: {
#if MLBRIDGE_INTEGRATION_HAVE_ONNX
    if (S.Model.empty())
      return Status(ErrorCode::NotFound, "onnx: no model file given");
    auto M = loadOnnxModel(S.Model);
    if (!M)
      return M.takeStatus().addContext("onnx: loading '" + S.Model + "'");
    OnnxOptions O;
    O.Diagnostics = R.Diagnostics;
    if ((*M)->outputIndex(R.Advice.name()))
      O.AdviceOutput = R.Advice.name();
    auto Runner = OnnxModelRunner::create(*M, O);
    if (!Runner)
      return Runner.takeStatus().addContext("onnx: '" + S.Model + "'");
    return std::unique_ptr<ModelRunner>(std::move(*Runner));
#else
    return notBuilt(K);
#endif
  }
  case RunnerKind::Grpc: {
#if MLBRIDGE_INTEGRATION_HAVE_GRPC
    if (S.Server.empty())
      return Status(ErrorCode::InvalidArgument,
                    "grpc: no server address given (host:port)");
    GrpcOptions O;
    O.Diagnostics = R.Diagnostics;
    O.CallTimeout = S.Timeout;
    O.ConnectTimeout = S.Timeout;
    auto G = GrpcModelRunner::create(S.Server, R.Features, R.Advice, O);
    if (!G)
      return G.takeStatus().addContext("grpc: " + S.Server);
    return std::unique_ptr<ModelRunner>(std::move(*G));
#else
    return notBuilt(K);
#endif
  }
  case RunnerKind::Compiled:
    // Each integration makes its own embedded model's runner (it knows the
    // generated class).
    if (!R.MakeEmbedded)
      return notBuilt(K);
    return R.MakeEmbedded();
  case RunnerKind::Auto:
  case RunnerKind::Default:
    break;
  }
  return Status(ErrorCode::InvalidArgument,
                std::string("makeRunner: no runner for kind '") +
                    runnerKindName(K) + "'");
}

std::string runnerRemark(RunnerKind K, std::string_view What) {
  return std::string(What) + " by the " + runnerKindName(K) + " runner";
}

// ---- feature binding ---------------------------------------------------------

Status FeatureBinding::bind(const ModelRunner &R,
                            const std::vector<TensorSpec> &Ours) {
  Slot.assign(Ours.size(), -1);
  Counts.resize(Ours.size());
  for (size_t I = 0; I < Ours.size(); ++I)
    Counts[I] = Ours[I].elementCount();
  for (size_t J = 0; J < R.featureCount(); ++J) {
    const TensorSpec &Theirs = R.featureSpec(J);
    size_t I = 0;
    while (I < Ours.size() && Ours[I].name() != Theirs.name())
      ++I;
    if (I == Ours.size()) {
      std::string Known;
      for (const TensorSpec &S : Ours)
        Known += (Known.empty() ? "" : ", ") + S.name();
      return Status(ErrorCode::InvalidArgument,
                    "model input '" + Theirs.name() +
                        "' is not a feature of this pass (features: " + Known +
                        ")");
    }
    if (Theirs.type() == DType::String)
      return Status(ErrorCode::TypeMismatch,
                    "model input " + Theirs.describe() +
                        " is a string; the pass's features are numbers");
    if (Theirs.isDynamic() || Theirs.elementCount() != Counts[I])
      return Status(ErrorCode::TypeMismatch,
                    "model input " + Theirs.describe() + " does not fit " +
                        Ours[I].describe() + " (element counts differ)");
    Slot[I] = static_cast<int>(J);
  }
  return Status::ok();
}

Expected<BoundRunner> makeBoundRunner(RunnerKind K, const RunnerSettings &S,
                                      const RunnerRequest &R,
                                      std::string_view Model,
                                      std::string_view Pass) {
  auto Runner = makeRunner(K, S, R);
  if (!Runner)
    return Status(Runner.status().code(), "cannot use the " + std::string(Model) +
                                              ": " + Runner.status().toString());
  BoundRunner B{std::move(*Runner), FeatureBinding()};
  if (Status Bad = B.Binding.bind(*B.Runner, R.Features); !Bad.isOk())
    return Status(Bad.code(), "the " + std::string(Model) + " does not fit " +
                                  std::string(Pass) + ": " + Bad.toString());
  return B;
}

// ---- the log line --------------------------------------------------------------

LogLine::LogLine(std::string_view Integration, std::string_view Module,
                 std::string_view Runner, uint64_t Asked, uint64_t Fallbacks)
    : Text("{") {
  add("integration", Integration);
  add("module", Module);
  add("runner", Runner);
  add("asked", static_cast<int64_t>(Asked));
  add("fallbacks", static_cast<int64_t>(Fallbacks));
}

void LogLine::key(std::string_view Key) {
  if (Text.size() > 1)
    Text += ',';
  Text += '"';
  Text += Key;
  Text += "\":";
}

LogLine &LogLine::add(std::string_view Key, int64_t V) {
  key(Key);
  Text += std::to_string(V);
  return *this;
}

LogLine &LogLine::add(std::string_view Key, std::string_view V) {
  key(Key);
  Text += '"' + jsonEscape(V) + '"';
  return *this;
}

LogLine &LogLine::add(std::string_view Key, const std::vector<int64_t> &V) {
  key(Key);
  Text += '[';
  for (size_t I = 0; I < V.size(); ++I)
    Text += (I ? "," : "") + std::to_string(V[I]);
  Text += ']';
  return *this;
}

Status appendLine(const std::string &Path, const std::string &Line) {
  int Fd = ::open(Path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (Fd < 0)
    return Status(ErrorCode::IOError, "cannot open log file '" + Path +
                                     "': " + std::strerror(errno));
  const std::string Data = Line + "\n";
  const char *P = Data.data();
  size_t Left = Data.size();
  Status Result = Status::ok();
  while (Left > 0) {
    ssize_t N = ::write(Fd, P, Left);
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0) {
      Result = Status(ErrorCode::IOError, "cannot write log file '" + Path +
                                         "': " + std::strerror(errno));
      break;
    }
    P += N;
    Left -= static_cast<size_t>(N);
  }
  ::close(Fd);
  return Result;
}

} // namespace mlbridge::integrations
