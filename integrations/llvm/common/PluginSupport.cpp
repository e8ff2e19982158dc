//===- PluginSupport.cpp - What both LLVM plugins share -------------------===//

#include "PluginSupport.h"

#include "mlbridge/json_escape.h"
#include "mlbridge/pipe_model_runner.h"
#if MLBRIDGE_PLUGINS_HAVE_ONNX
#include "mlbridge/onnx_model_runner.h"
#endif
#if MLBRIDGE_PLUGINS_HAVE_GRPC
#include "mlbridge/grpc_model_runner.h"
#endif

#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <unistd.h>

using namespace llvm;

namespace mlbridge::plugins {

const char *runnerKindName(RunnerKind K) {
  switch (K) {
  case RunnerKind::Auto:
    return "auto";
  case RunnerKind::Onnx:
    return "onnx";
  case RunnerKind::Compiled:
    return "compiled";
  case RunnerKind::Pipe:
    return "pipe";
  case RunnerKind::Grpc:
    return "grpc";
  case RunnerKind::Default:
    return "default";
  }
  return "?";
}

std::optional<RunnerKind> parseRunnerKind(StringRef S) {
  for (RunnerKind K : {RunnerKind::Auto, RunnerKind::Onnx, RunnerKind::Compiled,
                       RunnerKind::Pipe, RunnerKind::Grpc, RunnerKind::Default})
    if (S.equals_insensitive(runnerKindName(K)))
      return K;
  return std::nullopt;
}

bool runnerAvailable(RunnerKind K) {
  switch (K) {
  case RunnerKind::Onnx:
    return MLBRIDGE_PLUGINS_HAVE_ONNX;
  case RunnerKind::Grpc:
    return MLBRIDGE_PLUGINS_HAVE_GRPC;
  case RunnerKind::Compiled:
    return MLBRIDGE_PLUGINS_HAVE_COMPILED;
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

RunnerKind resolveRunnerKind(const RunnerConfig &C) {
  if (C.Kind != RunnerKind::Auto)
    return C.Kind;
  if (!C.Channel.empty())
    return RunnerKind::Pipe;
  if (!C.Server.empty())
    return RunnerKind::Grpc;
  if (!C.Model.empty())
    return RunnerKind::Onnx;
  if (!C.EmbeddedModel.empty())
    return RunnerKind::Compiled;
  return RunnerKind::Default;
}

namespace {

Status notBuilt(RunnerKind K) {
  return Status(ErrorCode::NotFound,
                std::string("the '") + runnerKindName(K) +
                    "' runner is not built into this plugin (available: " +
                    availableRunners() + ")");
}

#if MLBRIDGE_PLUGINS_HAVE_ONNX
/// One loaded session per model file and process: an advisor is created
/// for every inliner run and the phase-ordering pass for every module, but
/// the model is loaded once (an OnnxModel is immutable and shareable).
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

Expected<std::unique_ptr<ModelRunner>> makeRunner(RunnerKind Kind,
                                                  const RunnerConfig &C,
                                                  const RunnerRequest &R) {
  switch (Kind) {
  case RunnerKind::Pipe: {
    if (C.Channel.empty())
      return Status(ErrorCode::InvalidArgument,
                    "pipe: no channel given (the FIFO base path)");
    PipeOptions O;
    O.Diagnostics = R.Diagnostics;
    if (C.Format == "json")
      O.Format = SerDesKind::Json;
    else if (C.Format == "bitstream")
      O.Format = SerDesKind::Bitstream;
    else
      return Status(ErrorCode::InvalidArgument,
                    "pipe: unknown format '" + C.Format +
                        "' (bitstream or json)");
    O.OpenTimeout = C.Timeout;
    O.ReplyTimeout = C.Timeout;
    auto P = PipeModelRunner::create(C.Channel, R.Features, R.Advice, O);
    if (!P)
      return P.takeStatus().addContext("pipe");
    return std::unique_ptr<ModelRunner>(std::move(*P));
  }
  case RunnerKind::Onnx: {
#if MLBRIDGE_PLUGINS_HAVE_ONNX
    if (C.Model.empty())
      return Status(ErrorCode::NotFound, "onnx: no model file given");
    auto M = loadOnnxModel(C.Model);
    if (!M)
      return M.takeStatus().addContext("onnx: loading '" + C.Model + "'");
    OnnxOptions O;
    O.Diagnostics = R.Diagnostics;
    if ((*M)->outputIndex(R.Advice.name()))
      O.AdviceOutput = R.Advice.name();
    auto Runner = OnnxModelRunner::create(*M, O);
    if (!Runner)
      return Runner.takeStatus().addContext("onnx: '" + C.Model + "'");
    return std::unique_ptr<ModelRunner>(std::move(*Runner));
#else
    return notBuilt(Kind);
#endif
  }
  case RunnerKind::Grpc: {
#if MLBRIDGE_PLUGINS_HAVE_GRPC
    if (C.Server.empty())
      return Status(ErrorCode::InvalidArgument,
                    "grpc: no server address given (host:port)");
    GrpcOptions O;
    O.Diagnostics = R.Diagnostics;
    O.CallTimeout = C.Timeout;
    O.ConnectTimeout = C.Timeout;
    auto G = GrpcModelRunner::create(C.Server, R.Features, R.Advice, O);
    if (!G)
      return G.takeStatus().addContext("grpc: " + C.Server);
    return std::unique_ptr<ModelRunner>(std::move(*G));
#else
    return notBuilt(Kind);
#endif
  }
  case RunnerKind::Compiled:
    // Each plugin makes its own embedded model's runner (it knows the
    // generated class).
    if (!R.MakeEmbedded)
      return notBuilt(Kind);
    return R.MakeEmbedded();
  case RunnerKind::Auto:
  case RunnerKind::Default:
    break;
  }
  return Status(ErrorCode::InvalidArgument,
                std::string("makeRunner: no runner for kind '") +
                    runnerKindName(Kind) + "'");
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

// ---- diagnostics ------------------------------------------------------------

BridgeDiagnostic::BridgeDiagnostic(StringRef Prefix, const Twine &Msg,
                                   DiagnosticSeverity Severity)
    : DiagnosticInfo(getNextAvailablePluginDiagnosticKind(), Severity),
      Text((Prefix + ": " + Msg).str()) {}

void BridgeDiagnostic::print(DiagnosticPrinter &DP) const { DP << Text; }

void diagnose(LLVMContext &Ctx, StringRef Prefix, DiagnosticSeverity Severity,
              const Twine &Msg) {
  Ctx.diagnose(BridgeDiagnostic(Prefix, Msg, Severity));
}

DiagnosticSink llvmDiagnosticSink(LLVMContext &Ctx, std::string Prefix,
                                  bool Verbose) {
  return [&Ctx, Prefix = std::move(Prefix), Verbose](Severity S,
                                                      std::string_view M) {
    if (S == Severity::Note && !Verbose)
      return;
    // A model failure is never a compile error: the plugins fall back.
    diagnose(Ctx, Prefix, S == Severity::Note ? DS_Remark : DS_Warning,
             StringRef(M.data(), M.size()));
  };
}

// ---- settings ---------------------------------------------------------------

static const char *envValue(const char *Env) {
  const char *V = Env ? std::getenv(Env) : nullptr;
  return V && *V ? V : nullptr;
}

std::string stringSetting(const cl::opt<std::string> &Opt, const char *Env) {
  if (Opt.getNumOccurrences() == 0)
    if (const char *V = envValue(Env))
      return V;
  return Opt;
}

unsigned unsignedSetting(const cl::opt<unsigned> &Opt, const char *Env) {
  if (Opt.getNumOccurrences() == 0)
    if (const char *V = envValue(Env)) {
      unsigned N = 0;
      if (!StringRef(V).getAsInteger(10, N))
        return N;
    }
  return Opt;
}

bool boolSetting(const cl::opt<bool> &Opt, const char *Env) {
  if (Opt.getNumOccurrences() == 0)
    if (const char *V = envValue(Env)) {
      StringRef S(V);
      return !(S == "0" || S.equals_insensitive("false") ||
               S.equals_insensitive("off") || S.equals_insensitive("no"));
    }
  return Opt;
}

void appendLine(LLVMContext &Ctx, StringRef Prefix, const std::string &Path,
                const std::string &Line) {
  if (Path.empty())
    return;
  int Fd = ::open(Path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (Fd < 0) {
    diagnose(Ctx, Prefix, DS_Warning,
             "cannot open log file '" + Path + "': " + std::strerror(errno));
    return;
  }
  std::string Data = Line + "\n";
  const char *P = Data.data();
  size_t Left = Data.size();
  while (Left > 0) {
    ssize_t N = ::write(Fd, P, Left);
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0) {
      diagnose(Ctx, Prefix, DS_Warning,
               "cannot write log file '" + Path + "': " + std::strerror(errno));
      break;
    }
    P += N;
    Left -= static_cast<size_t>(N);
  }
  ::close(Fd);
}

std::string jsonEscape(StringRef S) {
  return mlbridge::jsonEscape(std::string_view(S.data(), S.size()));
}

} // namespace mlbridge::plugins
