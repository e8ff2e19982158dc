//===- RunnerSettings.h - What every compiler integration shares -*- C++ -*-===//
//
// The LLVM plugins, the MLIR plugin (and, through the C API, the C tool)
// choose and make their model runner the same way: the same six runner
// settings (RunnerOptionTable), each taken from the integration's option
// or, when that is not given, from an environment variable; the same "auto"
// rule; the same check of a pipe channel before waiting on it; the same
// runner creation; and the same one-line JSON log (LogLine).
//
// Compiled into each integration from source. It uses the mlbridge library
// only, never LLVM or MLIR: every integration, whatever compiler hosts it,
// links it. MLBRIDGE_INTEGRATION_HAVE_{ONNX,GRPC,COMPILED} say which
// optional runners the integration was built with.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_COMMON_RUNNERSETTINGS_H
#define MLBRIDGE_INTEGRATIONS_COMMON_RUNNERSETTINGS_H

#include "mlbridge/model_runner.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"
#if MLBRIDGE_INTEGRATION_HAVE_COMPILED
#include "mlbridge/compiled_model_runner.h"
#endif

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace mlbridge::integrations {

/// Which runner answers. Auto picks from the settings given (see
/// resolveRunnerKind); Default means no model (the integration's own
/// decision).
enum class RunnerKind { Auto, Onnx, Compiled, Pipe, Grpc, Default };

const char *runnerKindName(RunnerKind K);
/// Parses "auto", "onnx", "compiled", "pipe", "grpc", "default" (case
/// insensitive; "none" is "default").
std::optional<RunnerKind> parseRunnerKind(std::string_view S);

/// The runner settings every integration has, in the order of its option
/// table. Key: the option's name after the integration's prefix (LLVM:
/// -mlbridge-inline-<Key>; MLIR: <Key>=; C tool: --<Key>); EnvSuffix: the
/// environment variable after the integration's prefix (MLBRIDGE_INLINE_
/// <EnvSuffix>).
enum class RunnerSetting { Runner, Model, Channel, Server, Format, TimeoutMs };
struct RunnerOptionInfo {
  RunnerSetting Setting;
  const char *Key;
  const char *EnvSuffix;
  const char *Default;
  const char *Help;
};
constexpr size_t NumRunnerOptions = 6;
extern const RunnerOptionInfo RunnerOptionTable[NumRunnerOptions];

/// The runner-related settings of one integration, after options and
/// environment variables were merged.
struct RunnerSettings {
  RunnerKind Kind = RunnerKind::Auto;
  std::string Model;   ///< ONNX file (onnx)
  std::string Channel; ///< FIFO base path (pipe)
  std::string Server;  ///< host:port of the model server (grpc)
  std::string Format = "bitstream"; ///< pipe SerDes: bitstream | json
  std::chrono::milliseconds Timeout{30000};
  /// Name of the model compiled into the integration (compiled); empty if
  /// none.
  std::string EmbeddedModel;
};

/// The value of a setting: Given (the option was on the command line) wins,
/// then the environment variable Env if set and non-empty, then Value (the
/// option's default).
std::string settingValue(bool Given, std::string Value, const std::string &Env);
/// "0", "false", "off", "no" (any case) are false; anything else true.
bool parseBool(std::string_view S);

/// The runner settings of an integration whose options are looked up by
/// Lookup (its value, and whether it was given) and whose environment
/// variables start with EnvPrefix ("MLBRIDGE_INLINE_"). Errors name the
/// setting ("unknown runner 'x' (auto, onnx, compiled, pipe, grpc,
/// default)").
using OptionLookup =
    std::function<std::pair<std::string, bool>(const RunnerOptionInfo &)>;
Expected<RunnerSettings> readRunnerSettings(const OptionLookup &Lookup,
                                            const std::string &EnvPrefix,
                                            std::string EmbeddedModel);

/// The runners this integration was built with ("pipe onnx grpc compiled").
std::string availableRunners();
bool runnerAvailable(RunnerKind K);

/// Auto: pipe if a channel is set, else grpc if a server is set, else onnx
/// if a model file is set, else compiled if the integration embeds a model,
/// else Default (no model configured).
RunnerKind resolveRunnerKind(const RunnerSettings &S);

/// What can be checked before waiting on a runner: a pipe channel's two
/// FIFOs must exist (nobody would ever open FIFOs nobody made).
Status checkChannel(RunnerKind K, const RunnerSettings &S);

/// What an integration asks of a runner: its features and advice (the pipe
/// and gRPC runners declare them; in-process runners take the model's own
/// inputs and check them against these), and where the runner's messages
/// go.
struct RunnerRequest {
  std::vector<TensorSpec> Features;
  TensorSpec Advice;
  DiagnosticSink Diagnostics;
  /// Makes the runner of the model compiled into the integration (set only
  /// when it embeds one).
  std::function<Expected<std::unique_ptr<ModelRunner>>()> MakeEmbedded;
};

#if MLBRIDGE_INTEGRATION_HAVE_COMPILED
/// RunnerRequest::MakeEmbedded of an integration that embeds the compiled
/// model Model.
template <typename Model>
Expected<std::unique_ptr<ModelRunner>> makeCompiledRunner() {
  auto R = CompiledModelRunner::create<Model>();
  if (!R)
    return R.takeStatus();
  return std::unique_ptr<ModelRunner>(std::move(*R));
}
#endif

/// The model compiled into an integration, or none: its class name (named
/// in the settings' remark) and RunnerRequest::MakeEmbedded.
struct EmbeddedModelRef {
  const char *Name = "";
  Expected<std::unique_ptr<ModelRunner>> (*Make)() = nullptr;
};

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

/// Checks the channel, then makes the runner K. Errors name the runner and
/// the reason (e.g. "onnx: not-found: no such file 'x.onnx'"). K must not
/// be Auto or Default.
Expected<std::unique_ptr<ModelRunner>> makeRunner(RunnerKind K,
                                                  const RunnerSettings &S,
                                                  const RunnerRequest &R);

/// The remark an integration gives when asked to be verbose.
std::string runnerRemark(RunnerKind K, std::string_view What);

/// Binds an integration's features to those of a runner. The pipe and gRPC
/// runners are created with exactly the integration's features; an
/// in-process model has its own inputs, each of which must be one of the
/// integration's features (same name, same element count). Its dtype may
/// differ: values are converted (e.g. int64 features into a float model
/// input). Features the model does not take are simply not sent.
class FeatureBinding {
public:
  Status bind(const ModelRunner &R, const std::vector<TensorSpec> &Ours);
  /// True if the runner takes our feature I.
  bool has(size_t I) const { return I < Slot.size() && Slot[I] >= 0; }
  /// Writes our feature I (its element count of values) into the runner's
  /// buffer, converting to the runner's dtype.
  template <typename T> void write(ModelRunner &R, size_t I, const T *V) const;

private:
  template <typename U, typename T>
  static void convert(ModelRunner &R, size_t J, const T *V, size_t N) {
    U *Dst = R.getTensor<U>(J);
    if (!Dst)
      return;
    if constexpr (std::is_same_v<U, T>) {
      if (N) // (memcpy from an empty vector's null data() is undefined)
        std::memcpy(Dst, V, N * sizeof(T)); // the common case, per decision
    } else
      for (size_t K = 0; K < N; ++K)
        Dst[K] = static_cast<U>(V[K]);
  }
  std::vector<int> Slot;      // our index -> runner index, -1 if absent
  std::vector<size_t> Counts; // our index -> element count
};

template <typename T>
void FeatureBinding::write(ModelRunner &R, size_t I, const T *V) const {
  if (!has(I))
    return;
  const size_t J = static_cast<size_t>(Slot[I]);
  const size_t N = Counts[I];
  switch (R.featureSpec(J).type()) {
#define MLBRIDGE_CASE(E, Ty, Name)                                              \
  case DType::E:                                                               \
    return convert<Ty>(R, J, V, N);
    MLBRIDGE_NUMERIC_DTYPES(MLBRIDGE_CASE)
#undef MLBRIDGE_CASE
  case DType::Bool:
    if (auto *Dst = R.getTensor<bool>(J))
      for (size_t K = 0; K < N; ++K)
        Dst[K] = V[K] != T(0);
    return;
  case DType::String:
    return; // refused by bind()
  }
}

/// A runner and the binding of the integration's features to it.
struct BoundRunner {
  std::unique_ptr<ModelRunner> Runner;
  FeatureBinding Binding;
};

/// makeRunner, then binds R.Features. The error says which step failed, in
/// the integration's words: "cannot use the <Model>: ..." or "the <Model>
/// does not fit <Pass>: ..." (Model: "model", "agent"; Pass: "the inliner").
Expected<BoundRunner> makeBoundRunner(RunnerKind K, const RunnerSettings &S,
                                      const RunnerRequest &R,
                                      std::string_view Model,
                                      std::string_view Pass);

/// The one log line of every integration: a JSON object on one line,
///   {"integration":"<name>","module":"<input>","runner":"<kind>",
///    "asked":N,"fallbacks":N, <the integration's own fields>}
/// (docs/llvm-plugins.md, docs/mlir.md, docs/c-tool.md).
class LogLine {
public:
  LogLine(std::string_view Integration, std::string_view Module,
          std::string_view Runner, uint64_t Asked, uint64_t Fallbacks);
  LogLine &add(std::string_view Key, int64_t V);
  LogLine &add(std::string_view Key, std::string_view V);
  LogLine &add(std::string_view Key, const std::vector<int64_t> &V);
  /// The line, without the newline.
  std::string str() const { return Text + "}"; }

private:
  void key(std::string_view Key);
  std::string Text;
};

/// Appends Line and a newline to the file at Path with one write call
/// (O_APPEND), so lines of concurrent compiler processes do not interleave.
Status appendLine(const std::string &Path, const std::string &Line);

} // namespace mlbridge::integrations

#endif // MLBRIDGE_INTEGRATIONS_COMMON_RUNNERSETTINGS_H
