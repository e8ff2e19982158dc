//===- PluginSupport.h - What the LLVM plugins add to the common unit -*- C++ -*-===//
//
// The LLVM pass plugins take their runner settings, runner creation and log
// line from the public library (mlbridge/runner_settings.h, through
// integrations/common/RunnerSettings.h); this adds what needs LLVM:
// the runner options as cl::opts (RunnerOptions), reports through LLVM's
// diagnostic handler (never stdout), and the plugins' other settings read
// from an option or, when it is not on the command line, an environment
// variable (clang's driver cannot pass -mllvm options to a plugin loaded
// only with -fpass-plugin; see docs/llvm-plugins.md).
//
// Built into each plugin (a shared module) with PluginEntry.cpp, the entry
// that refuses a host of the other LLVM version (PluginEntry.h); the plugin
// links its version's libLLVM, the one its opt/clang has loaded.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_PLUGINSUPPORT_H
#define MLBRIDGE_INTEGRATIONS_LLVM_PLUGINSUPPORT_H

#include "ProtocolDescription.h"
#include "RunnerSettings.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/Support/CommandLine.h"

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
} // namespace llvm

namespace mlbridge::plugins {

using namespace mlbridge::integrations;

/// The runner options of one plugin (RunnerOptionTable), registered as
/// -<OptPrefix>-runner, -<OptPrefix>-model, ... with the environment
/// variables <EnvPrefix>RUNNER, <EnvPrefix>MODEL, ...
class RunnerOptions {
public:
  RunnerOptions(llvm::StringRef OptPrefix, llvm::StringRef EnvPrefix,
                llvm::cl::OptionCategory &Category);
  /// The settings from the options and environment variables.
  Expected<RunnerSettings> read(std::string EmbeddedModel) const;

private:
  struct Names {
    std::string Name, Help;
  };
  std::string EnvPrefix;
  std::array<Names, NumRunnerOptions> Strings; // outlive the options
  std::array<std::unique_ptr<llvm::cl::opt<std::string>>, NumRunnerOptions> Opts;
};

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

/// A DiagnosticSink for one runner: its first warning or error goes to Ctx
/// as a warning (the compile goes on with a fallback), followed by
/// \p Consequence (what the plugin does from then on, e.g. "; using LLVM's
/// default decisions"); later ones only as remarks if Verbose, like notes.
/// One warning per runner and compile, however many decisions fail after.
DiagnosticSink llvmDiagnosticSink(llvm::LLVMContext &Ctx, std::string Prefix,
                                  bool Verbose, std::string Consequence = "");

/// Opt's value if it was given on the command line, else the environment
/// variable Env if set and non-empty, else Opt's default.
std::string readSetting(const llvm::cl::opt<std::string> &Opt, const char *Env);
unsigned readSetting(const llvm::cl::opt<unsigned> &Opt, const char *Env);
bool readSetting(const llvm::cl::opt<bool> &Opt, const char *Env);

/// One setting of a plugin: the option -<Name> and its environment
/// variable Env, named once (the help says " Env: <Env>"). T is
/// std::string, unsigned or bool.
template <typename T> class Setting {
public:
  Setting(llvm::StringRef Name, const char *Env, llvm::cl::OptionCategory &Category,
          const char *Help, T Default = T())
      : EnvName(Env), HelpText((llvm::Twine(Help) + " Env: " + Env).str()),
        Opt(Name, llvm::cl::cat(Category), llvm::cl::init(Default),
            llvm::cl::desc(llvm::StringRef(HelpText))) {}
  /// The option if given, else the environment variable if set and not
  /// empty, else the default.
  T get() const { return readSetting(Opt, EnvName); }
  /// Whether a value was given at all (option or environment), for
  /// settings whose default comes from elsewhere (e.g. a built-in model).
  bool given() const;
  const llvm::cl::opt<T> &option() const { return Opt; }

private:
  const char *EnvName;
  std::string HelpText; // outlives the option
  llvm::cl::opt<T> Opt;
};

/// Whether Opt is on the command line or Env is set and not empty.
bool settingGiven(const llvm::cl::Option &Opt, const char *Env);
template <typename T> bool Setting<T>::given() const { return settingGiven(Opt, EnvName); }

/// What a plugin reports besides its decisions, the same three settings in
/// every plugin: -<OptPrefix>-log (append one JSON line per unit of work to
/// a file), -<OptPrefix>-describe (write the protocol as JSON to a file;
/// registered only when Help.Describe is given) and -<OptPrefix>-verbose
/// (remarks), with the environment variables <EnvPrefix>LOG,
/// <EnvPrefix>DESCRIBE, <EnvPrefix>VERBOSE.
class ReportOptions {
public:
  /// Each help is the option's sentence; " Env: <name>" is appended.
  struct Help {
    const char *Log;
    const char *Verbose;
    const char *Describe = nullptr;
  };
  ReportOptions(llvm::StringRef OptPrefix, llvm::StringRef EnvPrefix,
                llvm::cl::OptionCategory &Category, const Help &H);
  std::string logPath() const { return Log.get(); }
  /// Empty when not asked for (or the plugin has no describe option).
  std::string describePath() const { return Describe ? Describe->get() : std::string(); }
  bool verbose() const { return Verbose.get(); }

private:
  struct Names {
    Names(llvm::StringRef OptPrefix, llvm::StringRef EnvPrefix, llvm::StringRef Key,
          llvm::StringRef EnvKey)
        : Name((OptPrefix + "-" + Key).str()), Env((EnvPrefix + EnvKey).str()) {}
    std::string Name, Env;
  };
  Names LogNames, VerboseNames, DescribeNames; // outlive the settings
  Setting<std::string> Log;
  Setting<bool> Verbose;
  std::optional<Setting<std::string>> Describe;
};

/// Appends one line to the file at Path (appendLine); errors are reported
/// to Ctx as warnings.
void appendLogLine(llvm::LLVMContext &Ctx, llvm::StringRef Prefix,
                   const std::string &Path, const std::string &Line);

// The protocol description (describeProtocol, ProtocolList, addListItem)
// is the integrations' ProtocolDescription.h, shared with the MLIR plugin.

/// Writes Json and a newline to the file at Path, replacing it; errors are
/// reported to Ctx as warnings. The compile goes on either way.
void writeDescription(llvm::LLVMContext &Ctx, llvm::StringRef Prefix,
                      const std::string &Path, const std::string &Json);

} // namespace mlbridge::plugins

#endif // MLBRIDGE_INTEGRATIONS_LLVM_PLUGINSUPPORT_H
