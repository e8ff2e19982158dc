// The LLVM plugins on many modules from several threads in one process, the
// way lld's ThinLTO backends run them (LTOBackend.cpp, runNewPMPasses and
// codegen): per module and thread a fresh LLVMContext, TargetMachine and
// PassBuilder, every loaded plugin's callbacks registered again, the
// optimization pipeline, then code generation into an object in memory.
//
// Built with the project's sanitizer flags: in the tsan preset this
// executable is the instrumented host (TSan starts with it) and the plugins
// are instrumented too, so a data race in plugin code that two backend
// threads reach is a TSan report (exit code 66). libLLVM is not
// instrumented: races inside LLVM, or between LLVM and a plugin, are not
// seen.
//
// Checks, exit 1 when one fails:
//  * every object compiled on N threads (each module REPEAT times, in an
//    order the threads race for) is byte for byte the module's object
//    compiled alone on one thread, with the plugins in both;
//  * with --expect-effect, the plugins changed the object of at least one
//    module (against the same pipeline without plugins, compiled first:
//    some plugins change process-wide defaults once used, e.g. the register
//    allocator);
//  * no compile reported a warning or an error.
//
// Usage: mlbridge-plugin-threads [--plugin P.so]... [-O 0|1|2|3|s|z]
//          [--threads N] [--repeat R] [--expect-effect] [--set NAME=VALUE]...
//          MODULE.bc...
// Every MLBRIDGE_* variable of the environment is dropped first; --set gives
// the plugins their settings (lld parses -mllvm before it loads plugins, so
// the environment is how ThinLTO users configure them).
#include "llvm/Config/llvm-config.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#if LLVM_VERSION_MAJOR >= 22
#include "llvm/Plugins/PassPlugin.h"
#else
#include "llvm/Passes/PassPlugin.h"
#endif

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern char **environ;

using namespace llvm;

namespace {

/// What lookupTarget and createTargetMachine take: LLVM 22 the Triple, 19
/// its string.
#if LLVM_VERSION_MAJOR >= 22
const Triple &tripleArg(const Triple &T) { return T; }
#else
const std::string &tripleArg(const Triple &T) { return T.str(); }
#endif

struct Options {
  std::vector<std::string> Plugins;
  std::vector<std::string> Modules;
  OptimizationLevel Level = OptimizationLevel::O2;
  unsigned Threads = 4;
  unsigned Repeat = 2;
  bool ExpectEffect = false;
};

/// One compile's object, or why there is none (its diagnostics included).
struct Outcome {
  std::string Object;
  std::string Problems;
};

std::optional<OptimizationLevel> levelOf(StringRef S) {
  if (S == "0") return OptimizationLevel::O0;
  if (S == "1") return OptimizationLevel::O1;
  if (S == "2") return OptimizationLevel::O2;
  if (S == "3") return OptimizationLevel::O3;
  if (S == "s") return OptimizationLevel::Os;
  if (S == "z") return OptimizationLevel::Oz;
  return std::nullopt;
}

/// Warnings and errors of one context, collected instead of printed.
void collectDiagnostic(const DiagnosticInfo *D, void *Context) {
  const DiagnosticInfo &DI = *D;
  if (DI.getSeverity() != DS_Warning && DI.getSeverity() != DS_Error)
    return;
  auto &Out = *static_cast<std::string *>(Context);
  raw_string_ostream OS(Out);
  DiagnosticPrinterRawOStream DP(OS);
  OS << (DI.getSeverity() == DS_Error ? "error: " : "warning: ");
  DI.print(DP);
  OS << "\n";
}

Outcome compile(const std::string &Path, const std::vector<PassPlugin> &Plugins,
                OptimizationLevel Level) {
  Outcome R;
  LLVMContext Ctx;
  Ctx.setDiagnosticHandlerCallBack(collectDiagnostic, &R.Problems);
  SMDiagnostic Err;
  std::unique_ptr<Module> M = parseIRFile(Path, Err, Ctx);
  if (!M) {
    raw_string_ostream OS(R.Problems);
    Err.print("mlbridge-plugin-threads", OS);
    return R;
  }
  Triple TT(M->getTargetTriple());
  if (TT.getTriple().empty())
    TT = Triple(sys::getDefaultTargetTriple());
  std::string Error;
  const Target *T = TargetRegistry::lookupTarget(tripleArg(TT), Error);
  if (!T) {
    R.Problems = Error;
    return R;
  }
  // lld's defaults: position-independent code, code generation at -O2.
  std::unique_ptr<TargetMachine> TM(T->createTargetMachine(
      tripleArg(TT), "", "", TargetOptions(), Reloc::PIC_,
      std::nullopt, CodeGenOptLevel::Default));
  M->setDataLayout(TM->createDataLayout());
  TargetLibraryInfoImpl TLII(TT);
  {
    LoopAnalysisManager LAM;
    FunctionAnalysisManager FAM;
    CGSCCAnalysisManager CGAM;
    ModuleAnalysisManager MAM;
    PassInstrumentationCallbacks PIC;
    StandardInstrumentations SI(Ctx, /*DebugLogging=*/false);
    SI.registerCallbacks(PIC, &MAM);
    PipelineTuningOptions PTO;
    PTO.LoopVectorization = Level.getSpeedupLevel() > 1;
    PTO.SLPVectorization = Level.getSpeedupLevel() > 1;
    PassBuilder PB(TM.get(), PTO, std::nullopt, &PIC);
    for (const PassPlugin &P : Plugins)
      P.registerPassBuilderCallbacks(PB);
    FAM.registerPass([&] { return TargetLibraryAnalysis(TLII); });
    PB.registerModuleAnalyses(MAM);
    PB.registerCGSCCAnalyses(CGAM);
    PB.registerFunctionAnalyses(FAM);
    PB.registerLoopAnalyses(LAM);
    PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);
    ModulePassManager MPM = Level == OptimizationLevel::O0
                                ? PB.buildO0DefaultPipeline(Level)
                                : PB.buildThinLTODefaultPipeline(Level, nullptr);
    MPM.run(*M, MAM);
  }
  SmallString<0> Object;
  raw_svector_ostream OS(Object);
  legacy::PassManager CodeGen;
  CodeGen.add(new TargetLibraryInfoWrapperPass(TLII));
  if (TM->addPassesToEmitFile(CodeGen, OS, nullptr, CodeGenFileType::ObjectFile)) {
    R.Problems += "the target cannot emit an object file\n";
    return R;
  }
  CodeGen.run(*M);
  R.Object.assign(Object.begin(), Object.end());
  return R;
}

/// Compiles Work[I] (an index into Modules) for every I, on Threads
/// threads that take the next item as they finish one.
std::vector<Outcome> compileAll(const Options &O, const std::vector<size_t> &Work,
                                const std::vector<PassPlugin> &Plugins,
                                unsigned Threads) {
  std::vector<Outcome> Results(Work.size());
  std::atomic<size_t> Next{0};
  auto Worker = [&] {
    for (size_t I; (I = Next.fetch_add(1)) < Work.size();)
      Results[I] = compile(O.Modules[Work[I]], Plugins, O.Level);
  };
  std::vector<std::thread> Pool;
  for (unsigned T = 0; T < Threads; ++T)
    Pool.emplace_back(Worker);
  for (std::thread &T : Pool)
    T.join();
  return Results;
}

/// Drops every MLBRIDGE_* variable (before any thread starts).
void clearPluginEnvironment() {
  std::vector<std::string> Names;
  for (char **E = environ; *E; ++E)
    if (std::strncmp(*E, "MLBRIDGE_", 9) == 0)
      Names.emplace_back(*E, std::strchr(*E, '=') - *E);
  for (const std::string &N : Names)
    ::unsetenv(N.c_str());
}

int usage(const char *Why) {
  errs() << "mlbridge-plugin-threads: " << Why
         << "\nusage: mlbridge-plugin-threads [--plugin P.so]... [-O 0|1|2|3|s|z] "
            "[--threads N] [--repeat R] [--expect-effect] [--set NAME=VALUE]... "
            "MODULE.bc...\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  clearPluginEnvironment();
  Options O;
  for (int I = 1; I < argc; ++I) {
    const StringRef A = argv[I];
    const bool HasValue = I + 1 < argc;
    if (A == "--plugin" && HasValue) {
      O.Plugins.push_back(argv[++I]);
    } else if (A == "-O" && HasValue) {
      auto L = levelOf(argv[++I]);
      if (!L)
        return usage("-O takes 0, 1, 2, 3, s or z");
      O.Level = *L;
    } else if ((A == "--threads" || A == "--repeat") && HasValue) {
      unsigned N = 0;
      if (StringRef(argv[++I]).getAsInteger(10, N) || N == 0)
        return usage("--threads and --repeat take a positive number");
      (A == "--threads" ? O.Threads : O.Repeat) = N;
    } else if (A == "--expect-effect") {
      O.ExpectEffect = true;
    } else if (A == "--set" && HasValue) {
      const auto [Name, Value] = StringRef(argv[++I]).split('=');
      if (Name.empty() || !StringRef(argv[I]).contains('='))
        return usage("--set takes NAME=VALUE");
      ::setenv(Name.str().c_str(), Value.str().c_str(), 1);
    } else if (A.starts_with("-")) {
      return usage(("unknown or incomplete option " + A).str().c_str());
    } else {
      O.Modules.push_back(A.str());
    }
  }
  if (O.Modules.empty())
    return usage("no module given");

  InitializeNativeTarget();
  InitializeNativeTargetAsmPrinter();
  InitializeNativeTargetAsmParser();
  // Loaded once, by the main thread, as lld loads --load-pass-plugin.
  std::vector<PassPlugin> Plugins;
  for (const std::string &P : O.Plugins) {
    Expected<PassPlugin> L = PassPlugin::Load(P);
    if (!L) {
      errs() << "mlbridge-plugin-threads: " << toString(L.takeError()) << "\n";
      return 2;
    }
    Plugins.push_back(*L);
  }

  std::vector<size_t> Once(O.Modules.size());
  for (size_t I = 0; I < Once.size(); ++I)
    Once[I] = I;
  int Failures = 0;
  auto Report = [&](const std::vector<size_t> &Work, const std::vector<Outcome> &Rs,
                    const char *What) {
    for (size_t I = 0; I < Rs.size(); ++I)
      if (!Rs[I].Problems.empty() || Rs[I].Object.empty()) {
        errs() << O.Modules[Work[I]] << " (" << What << "):\n" << Rs[I].Problems;
        ++Failures;
      }
  };
  // Without the plugins first: the register allocator, once used, is the
  // process's default allocator.
  std::vector<Outcome> Plain;
  if (O.ExpectEffect) {
    Plain = compileAll(O, Once, {}, 1);
    Report(Once, Plain, "without plugins");
  }
  const std::vector<Outcome> Alone = compileAll(O, Once, Plugins, 1);
  Report(Once, Alone, "one thread");

  // Every module Repeat times, interleaved, so that threads compile
  // different modules and the same module at the same time.
  std::vector<size_t> Work;
  for (unsigned R = 0; R < O.Repeat; ++R)
    Work.insert(Work.end(), Once.begin(), Once.end());
  const std::vector<Outcome> Threaded = compileAll(O, Work, Plugins, O.Threads);
  Report(Work, Threaded, "threads");
  size_t Differing = 0;
  for (size_t I = 0; I < Work.size(); ++I)
    if (Threaded[I].Object != Alone[Work[I]].Object) {
      errs() << O.Modules[Work[I]] << ": the object compiled on " << O.Threads
             << " threads differs from the one-thread object\n";
      ++Differing;
    }
  size_t Changed = 0;
  for (size_t I = 0; I < Plain.size(); ++I)
    Changed += Plain[I].Object != Alone[I].Object;
  if (O.ExpectEffect && Changed == 0) {
    errs() << "mlbridge-plugin-threads: the plugins changed no module's object: "
              "nothing was exercised\n";
    ++Failures;
  }
  outs() << O.Modules.size() << " modules x " << O.Repeat << " on " << O.Threads
         << " threads, " << Plugins.size() << " plugins: " << Differing
         << " objects differ from one thread";
  if (O.ExpectEffect)
    outs() << ", " << Changed << " modules changed by the plugins";
  outs() << "\n";
  return Failures || Differing ? 1 : 0;
}
