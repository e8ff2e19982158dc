//===- PluginSupport.cpp - What the LLVM plugins add to the common unit ---===//

#include "PluginSupport.h"

#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/raw_ostream.h"

#include "mlbridge/json_escape.h"

#include <atomic>
#include <cstdlib>
#include <memory>

using namespace llvm;

namespace mlbridge::plugins {

RunnerOptions::RunnerOptions(StringRef OptPrefix, StringRef EnvPrefix,
                             cl::OptionCategory &Category)
    : EnvPrefix(EnvPrefix.str()) {
  for (size_t I = 0; I < NumRunnerOptions; ++I) {
    const RunnerOptionInfo &O = RunnerOptionTable[I];
    Strings[I].Name = (OptPrefix + "-" + O.Key).str();
    Strings[I].Help = (Twine(O.Help) + " Env: " + runnerEnvName(EnvPrefix, O)).str();
    Opts[I] = std::make_unique<cl::opt<std::string>>(
        StringRef(Strings[I].Name), cl::cat(Category), cl::init(O.Default),
        cl::desc(StringRef(Strings[I].Help)));
  }
}

Expected<RunnerSettings> RunnerOptions::read(std::string EmbeddedModel) const {
  return readRunnerSettings(
      [this](const RunnerOptionInfo &O) {
        const cl::opt<std::string> &Opt =
            *Opts[static_cast<size_t>(&O - RunnerOptionTable)];
        return std::make_pair(std::string(Opt), Opt.getNumOccurrences() > 0);
      },
      EnvPrefix, std::move(EmbeddedModel));
}

ReportOptions::ReportOptions(StringRef OptPrefix, StringRef EnvPrefix,
                             cl::OptionCategory &Category, const Help &H)
    : LogNames(OptPrefix, EnvPrefix, "log", "LOG"),
      VerboseNames(OptPrefix, EnvPrefix, "verbose", "VERBOSE"),
      DescribeNames(OptPrefix, EnvPrefix, "describe", "DESCRIBE"),
      Log(LogNames.Name, LogNames.Env.c_str(), Category, H.Log),
      Verbose(VerboseNames.Name, VerboseNames.Env.c_str(), Category, H.Verbose, false) {
  if (H.Describe)
    Describe.emplace(DescribeNames.Name, DescribeNames.Env.c_str(), Category, H.Describe);
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
                                  bool Verbose, std::string Consequence) {
  // Shared by the sink's copies (a runner may copy it into its transport).
  auto Warned = std::make_shared<std::atomic<bool>>(false);
  return [&Ctx, Prefix = std::move(Prefix), Verbose,
          Consequence = std::move(Consequence), Warned](Severity S, std::string_view M) {
    const StringRef Text(M.data(), M.size());
    // A model failure is never a compile error: the plugins fall back.
    if (S != Severity::Note && !Warned->exchange(true)) {
      diagnose(Ctx, Prefix, DS_Warning, Text + Consequence);
      return;
    }
    if (Verbose)
      diagnose(Ctx, Prefix, DS_Remark, Text);
  };
}

// ---- the plugins' other settings ----------------------------------------------

std::string readSetting(const cl::opt<std::string> &Opt, const char *Env) {
  return settingValue(Opt.getNumOccurrences() > 0, Opt, Env);
}

unsigned readSetting(const cl::opt<unsigned> &Opt, const char *Env) {
  const std::string V = settingValue(Opt.getNumOccurrences() > 0, "", Env);
  unsigned N = 0;
  if (!V.empty() && !StringRef(V).getAsInteger(10, N))
    return N;
  return Opt;
}

bool readSetting(const cl::opt<bool> &Opt, const char *Env) {
  const std::string V = settingValue(Opt.getNumOccurrences() > 0, "", Env);
  return V.empty() ? bool(Opt) : parseBool(V);
}

bool settingGiven(const cl::Option &Opt, const char *Env) {
  if (Opt.getNumOccurrences() > 0)
    return true;
  const char *V = std::getenv(Env);
  return V && *V;
}

void appendLogLine(LLVMContext &Ctx, StringRef Prefix, const std::string &Path,
                   const std::string &Line) {
  if (Path.empty())
    return;
  if (Status S = appendLine(Path, Line); !S.isOk())
    diagnose(Ctx, Prefix, DS_Warning, S.message());
}

void writeDescription(LLVMContext &Ctx, StringRef Prefix, const std::string &Path,
                      const std::string &Json) {
  if (Path.empty())
    return;
  std::error_code EC;
  raw_fd_ostream OS(Path, EC);
  if (!EC) {
    OS << Json << "\n";
    OS.close();
    EC = OS.error();
  }
  if (EC)
    diagnose(Ctx, Prefix, DS_Warning,
             Twine("cannot write the protocol to ") + Path + ": " + EC.message());
}

} // namespace mlbridge::plugins
