//===- mlbridge/runner_settings.h - A runner chosen by settings -*- C++ -*-===//
//
// What every integration (a compiler plugin, a tool) would otherwise write
// itself: which runner answers and how to reach it, read from the
// integration's options and/or environment variables under a prefix it
// chooses, and the runner made from that in one call:
//
//   mlbridge::RunnerSettings S;                  // pipe and shm linked
//   S.Runners.push_back(mlbridge::onnxRunnerFactory()); // links ONNX Runtime
//   auto Read = mlbridge::readRunnerSettings("MLBRIDGE_UNROLL", S);
//   // MLBRIDGE_UNROLL_RUNNER, _MODEL, _CHANNEL, _SOCKET, _SERVER, _FORMAT,
//   // _TIMEOUT_MS (RunnerOptionTable); errors name the setting
//   auto Runner = mlbridge::makeRunner(*Read, Features, Advice);
//   if (!Runner) ... Runner.status() ...   // the pass's own decision
//   else if (!*Runner) ...                 // runner "default": no model
//
// Which runners a program links is its own choice, not the library's: the
// pipe and shared-memory runners are part of the core library and in
// RunnerSettings::Runners from the start; every other runner lives in its
// optional library (or in the program, for a compiled-in model) and is
// added as a RunnerFactory by the program that links it:
//   onnxRunnerFactory()                 mlbridge/onnx_model_runner.h, MLBridge::onnx
//   grpcRunnerFactory()                 mlbridge/grpc_model_runner.h, MLBridge::grpc
//   compiledRunnerFactory<Model>()      mlbridge/compiled_model_runner.h (core)
//   tfRunnerFactory(Info(), "Name")     mlbridge/tf_model_runner.h, MLBridge::tf
// The list is a value in the settings, not a process-wide registry: a
// plugin links and starts only the runners it names, and two plugins in
// one process (or one plugin on many threads) share no state.
//
// The "auto" rule: pipe if a channel is set, else shm if a socket is set,
// else grpc if a server is set, else onnx if a model file is set, else the
// compiled-in model (compiled, then tf) if the program added one, else
// "default" (no model).
//
// No model side: a pipe channel whose FIFOs do not exist, or a shm socket
// nobody listens on, is ErrorCode::NotFound at once (nothing waits for a
// model nobody started). This is the C API's rule too
// (mlb_runner_create_from_settings, mlbridge/c/settings.h). Once the FIFOs
// exist, opening waits for the model at most Timeout.
//
// Names beside `using namespace llvm;`: see mlbridge/tensor_spec.h.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_RUNNER_SETTINGS_H
#define MLBRIDGE_RUNNER_SETTINGS_H

#include "mlbridge/diagnostics.h"
#include "mlbridge/model_runner.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mlbridge {

/// Which runner answers. Auto picks from the settings given
/// (resolveRunnerKind); Default means no model (the integration's own
/// decision).
enum class RunnerKind { Auto, Onnx, Compiled, Pipe, Grpc, Default, Shm, Tf };

/// "auto", "onnx", "compiled", "pipe", "grpc", "default", "shm", "tf".
const char *runnerKindName(RunnerKind K);
/// Parses those names (case insensitive; "none" is "default").
std::optional<RunnerKind> parseRunnerKind(std::string_view S);

/// The runner settings, in the order of their option table. Key: the
/// option's name after the integration's prefix (LLVM plugins:
/// -mlbridge-inline-<Key>; MLIR: <Key>=; C: mlb_runner_settings_set);
/// EnvSuffix: the environment variable after the integration's prefix
/// (MLBRIDGE_INLINE_<EnvSuffix>).
enum class RunnerSetting { Runner, Model, Channel, Socket, Server, Format, TimeoutMs };
struct RunnerOptionInfo {
  RunnerSetting Setting;
  const char *Key;
  const char *EnvSuffix;
  const char *Default;
  const char *Help;
};
constexpr size_t NumRunnerOptions = 7;
extern const RunnerOptionInfo RunnerOptionTable[NumRunnerOptions];

struct RunnerSettings;

/// One runner a program links: its kind, a name for messages (the model's,
/// for a compiled-in one) and how to make it. Make gets the settings (with
/// Diagnostics) and the integration's features and advice; the pipe, shm
/// and gRPC runners declare exactly those, in-process runners take the
/// model's own inputs (bind them with mlbridge/feature_binding.h). A
/// factory without Make stands for a runner this build does not have.
struct RunnerFactory {
  using MakeFn = std::function<Expected<std::unique_ptr<ModelRunner>>(
      const RunnerSettings &, const std::vector<TensorSpec> &Features,
      const TensorSpec &Advice)>;
  RunnerKind Kind = RunnerKind::Default;
  std::string Name;
  MakeFn Make;
};

/// The runners of the core library: pipe and shm.
std::vector<RunnerFactory> coreRunnerFactories();

/// The settings of one integration's runner.
struct RunnerSettings {
  RunnerKind Kind = RunnerKind::Auto;
  std::string Model;   ///< ONNX file (onnx)
  std::string Channel; ///< FIFO base path (pipe)
  std::string Socket;  ///< Unix socket of the model side (shm)
  std::string Server;  ///< host:port of the model server (grpc)
  std::string Format = "bitstream"; ///< pipe / shm SerDes: bitstream | json
  /// Opening the channel and each decision (pipe, shm, grpc).
  std::chrono::milliseconds Timeout{30000};

  /// Not read from options: set by the program. Where the runner's
  /// messages go (none: silent).
  DiagnosticSink Diagnostics;
  /// The runners the program links (the header comment says why a list).
  std::vector<RunnerFactory> Runners = coreRunnerFactories();

  /// The factory of kind K in Runners, or null.
  const RunnerFactory *factory(RunnerKind K) const;
};

/// Sets one setting from its text: Key is RunnerOptionInfo::Key ("runner",
/// "model", "channel", "socket", "server", "format", "timeout-ms"). Errors:
/// NotFound for an unknown key, InvalidArgument for a bad value, each naming
/// the setting ("unknown runner 'x' (auto, onnx, ...)").
Status setRunnerSetting(RunnerSettings &S, std::string_view Key,
                        std::string_view Value);

/// The environment variable of option O under Prefix: Prefix + "_" +
/// O.EnvSuffix ("MLBRIDGE_UNROLL" -> "MLBRIDGE_UNROLL_MODEL"); a Prefix
/// ending in '_' is not given a second one.
std::string runnerEnvName(std::string_view Prefix, const RunnerOptionInfo &O);

/// The value of a setting: Given (the option was on the command line) wins,
/// then the environment variable Env if set and non-empty, then Value (the
/// option's default).
std::string settingValue(bool Given, std::string Value, const std::string &Env);
/// "0", "false", "off", "no" (any case) are false; anything else true.
bool parseBool(std::string_view S);

/// How an integration's options are looked up: the option's value and
/// whether it was given (its value is the option's default otherwise).
using OptionLookup =
    std::function<std::pair<std::string, bool>(const RunnerOptionInfo &)>;

/// Base with every setting read: from Lookup's option when given, else from
/// the environment variable runnerEnvName(EnvPrefix, O) when set and
/// non-empty, else the option's default.
Expected<RunnerSettings> readRunnerSettings(const OptionLookup &Lookup,
                                            std::string_view EnvPrefix,
                                            RunnerSettings Base = RunnerSettings());
/// The same without options: environment variables and defaults only.
Expected<RunnerSettings> readRunnerSettings(std::string_view EnvPrefix,
                                            RunnerSettings Base = RunnerSettings());

/// The runner S chooses: S.Kind, or for Auto the rule in the header
/// comment. Never Auto.
RunnerKind resolveRunnerKind(const RunnerSettings &S);

/// The runners S can make ("pipe shm onnx compiled").
std::string availableRunners(const RunnerSettings &S);

/// Makes the runner S chooses for the integration's Features and Advice.
/// RunnerKind::Default: a null runner (no error; the integration decides).
/// Errors name the runner and the reason, e.g. "pipe: no FIFO pair
/// '/tmp/ch.in'/'/tmp/ch.out'", "onnx: loading 'x.onnx': not-found: ...",
/// "the 'grpc' runner is not built into this plugin or program
/// (available: pipe shm)". Nothing is printed.
Expected<std::unique_ptr<ModelRunner>> makeRunner(const RunnerSettings &S,
                                                  const std::vector<TensorSpec> &Features,
                                                  const TensorSpec &Advice);

/// The remark an integration gives when asked to be verbose: "<What> by
/// the <kind> runner".
std::string runnerRemark(RunnerKind K, std::string_view What);

} // namespace mlbridge

#endif // MLBRIDGE_RUNNER_SETTINGS_H
