//===- PluginSupport.h - What both LLVM plugins share -----------*- C++ -*-===//
//
// The two LLVM 19 pass plugins (the ML inline advisor and the phase-ordering
// environment) choose their model runner the same way, report through LLVM's
// diagnostic handler (never stdout), and read their settings from plugin
// options or, when an option is not on the command line, from environment
// variables (clang's driver cannot pass -mllvm options to a plugin loaded
// only with -fpass-plugin; see docs/llvm-plugins.md).
//
// Built into each plugin (a shared module): no LLVM library is linked, every
// LLVM symbol comes from the host tool (opt-19, clang-19).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_PLUGINSUPPORT_H
#define MLBRIDGE_INTEGRATIONS_LLVM_PLUGINSUPPORT_H

#include "mlbridge/model_runner.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/Support/CommandLine.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
} // namespace llvm

namespace mlbridge::plugins {

/// Which runner answers. Auto picks from the settings given (see
/// resolveRunnerKind).
enum class RunnerKind { Auto, Onnx, Compiled, Pipe, Grpc, Default };

const char *runnerKindName(RunnerKind K);
/// Parses "auto", "onnx", "compiled", "pipe", "grpc", "default".
std::optional<RunnerKind> parseRunnerKind(llvm::StringRef S);

/// The runner-related settings of one plugin, after options and environment
/// variables were merged.
struct RunnerConfig {
  RunnerKind Kind = RunnerKind::Auto;
  std::string Model;   ///< ONNX file (onnx)
  std::string Channel; ///< FIFO base path (pipe)
  std::string Server;  ///< host:port of the model server (grpc)
  std::string Format = "bitstream"; ///< pipe SerDes: bitstream | json
  std::chrono::milliseconds Timeout{30000};
  /// Name of the model compiled into the plugin (compiled); empty if none.
  std::string EmbeddedModel;
};

/// The components this plugin was built with ("pipe onnx grpc compiled").
std::string availableRunners();
bool runnerAvailable(RunnerKind K);

/// Auto: pipe if a channel is set, else grpc if a server is set, else onnx
/// if a model file is set, else compiled if the plugin embeds a model,
/// else Default (no model configured).
RunnerKind resolveRunnerKind(const RunnerConfig &C);

/// What a plugin asks of a runner: its features and advice (the pipe and
/// gRPC runners declare them; in-process runners take the model's own
/// inputs and check them against these), the model output to use as
/// advice, and where the runner's messages go.
struct RunnerRequest {
  std::vector<TensorSpec> Features;
  TensorSpec Advice;
  DiagnosticSink Diagnostics;
  /// Makes the runner of the model compiled into the plugin (set only when
  /// the plugin embeds one; see MLBRIDGE_PLUGINS_HAVE_COMPILED).
  std::function<Expected<std::unique_ptr<ModelRunner>>()> MakeEmbedded;
};

/// Makes the runner C describes. Errors name the runner and the reason
/// (e.g. "onnx: not-found: no such file 'x.onnx'"). Kind must not be Auto
/// or Default.
Expected<std::unique_ptr<ModelRunner>> makeRunner(RunnerKind Kind,
                                                  const RunnerConfig &C,
                                                  const RunnerRequest &R);

/// Binds a plugin's features to those of a runner. The pipe and gRPC
/// runners are created with exactly the plugin's features; an in-process
/// model has its own inputs, each of which must be one of the plugin's
/// features (same name, same element count). Its dtype may differ: values
/// are converted (e.g. LLVM's int64 features into a float model input).
/// Plugin features the model does not take are simply not sent.
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
    if (U *Dst = R.getTensor<U>(J))
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

/// A diagnostic of the MLBridge plugins, shown by opt/clang as
/// "warning: mlbridge-inline: ..." (clang: [-Wbackend-plugin]).
class BridgeDiagnostic : public llvm::DiagnosticInfo {
public:
  BridgeDiagnostic(llvm::StringRef Prefix, const llvm::Twine &Msg,
                   llvm::DiagnosticSeverity Severity);
  void print(llvm::DiagnosticPrinter &DP) const override;

private:
  std::string Text;
};

/// Reports through Ctx's diagnostic handler.
void diagnose(llvm::LLVMContext &Ctx, llvm::StringRef Prefix,
              llvm::DiagnosticSeverity Severity, const llvm::Twine &Msg);

/// A DiagnosticSink for runners that forwards warnings and errors to Ctx as
/// warnings (the compile goes on with a fallback), notes only if Verbose.
DiagnosticSink llvmDiagnosticSink(llvm::LLVMContext &Ctx, std::string Prefix,
                                  bool Verbose);

/// Opt's value if it was given on the command line, else the environment
/// variable Env if set and non-empty, else Opt's default.
std::string stringSetting(const llvm::cl::opt<std::string> &Opt,
                          const char *Env);
unsigned unsignedSetting(const llvm::cl::opt<unsigned> &Opt, const char *Env);
bool boolSetting(const llvm::cl::opt<bool> &Opt, const char *Env);

/// Appends one line to the file at Path (O_APPEND, one write call, so lines
/// of concurrent compiler processes do not interleave). Errors are reported
/// to Ctx as warnings.
void appendLine(llvm::LLVMContext &Ctx, llvm::StringRef Prefix,
                const std::string &Path, const std::string &Line);

/// Escapes S for a JSON string literal (without the quotes), as the
/// library does (mlbridge/json_escape.h).
std::string jsonEscape(llvm::StringRef S);

} // namespace mlbridge::plugins

#endif // MLBRIDGE_INTEGRATIONS_LLVM_PLUGINSUPPORT_H
