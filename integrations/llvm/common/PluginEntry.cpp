//===- PluginEntry.cpp - llvmGetPassPluginInfo, refusing a foreign LLVM ---===//
//
// See mlbridge/llvm/PluginEntry.h for why. This file must not see PassPlugin.h: it
// defines llvmGetPassPluginInfo with the calling convention both hosts use
// and writes a result of the host's size, whichever LLVM it was built for.
// The version check itself (hostLLVMMatches) is on every architecture: the
// register allocator, loaded with llc -load, has no entry to refuse in.
//
//===----------------------------------------------------------------------===//
#include "llvm/Config/llvm-config.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <string>

namespace mlbridge::plugins {
void writePassPluginInfo(void *Out); // PluginEntry.h, without PassPlugin.h
bool hostLLVMMatches();              // PluginEntry.h
void reportNoPasses();               // PluginEntry.h
} // namespace mlbridge::plugins

namespace {

// The LLVM major version of the process (the host's libLLVM was loaded
// before any plugin, so the process-wide lookup finds its LLVMGetVersion);
// 0 when it cannot tell (an LLVM without the C API exported).
unsigned hostMajor() {
  using GetVersion = void (*)(unsigned *, unsigned *, unsigned *);
  auto *Fn = reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "LLVMGetVersion"));
  if (!Fn)
    return 0;
  unsigned Major = 0, Minor = 0, Patch = 0;
  Fn(&Major, &Minor, &Patch);
  return Major;
}

// This plugin's file and the same plugin built for LLVM `For`, next to it
// by the layout of the build (lib/llvm-plugins/, lib/llvm22-plugins/) and
// of an install (lib/mlbridge/, lib/mlbridge/llvm22/).
std::string counterpart(const std::string &Self, unsigned For) {
  const size_t Slash = Self.rfind('/');
  if (Slash == std::string::npos)
    return "";
  std::string Dir = Self.substr(0, Slash);
  const std::string File = Self.substr(Slash);
  auto EndsWith = [&](const char *S) {
    const size_t N = std::strlen(S);
    return Dir.size() >= N && Dir.compare(Dir.size() - N, N, S) == 0;
  };
  if (For == 19 && EndsWith("/llvm22-plugins"))
    return Dir.substr(0, Dir.size() - 15) + "/llvm-plugins" + File;
  if (For == 19 && EndsWith("/llvm22"))
    return Dir.substr(0, Dir.size() - 7) + File;
  if (For == 22 && EndsWith("/llvm-plugins"))
    return Dir.substr(0, Dir.size() - 13) + "/llvm22-plugins" + File;
  if (For == 22)
    return Dir + "/llvm22" + File;
  return "";
}

// std::to_string would export libstdc++'s digit table (a GNU unique symbol
// the version script cannot hide) from the plugin.
std::string decimal(unsigned N) {
  char Buf[16];
  std::snprintf(Buf, sizeof Buf, "%u", N);
  return Buf;
}

// The file of this plugin.
std::string selfPath() {
  Dl_info Self{};
  if (dladdr(reinterpret_cast<void *>(&selfPath), &Self) && Self.dli_fname)
    return Self.dli_fname;
  return "this MLBridge plugin";
}

void refuse(unsigned Host) {
  const std::string Path = selfPath();
  std::string Fix = "rebuild it for LLVM " + decimal(Host);
  if (Host == 19 || Host == 22) {
    const std::string Other = counterpart(Path, Host);
    if (!Other.empty())
      Fix = "load " + Other + " instead (the LLVM " + decimal(Host) + " build)";
  }
  std::fprintf(stderr,
               "error: %s was built for LLVM %d and cannot load into this LLVM %u "
               "tool; %s\n",
               Path.c_str(), LLVM_VERSION_MAJOR, Host, Fix.c_str());
}

} // namespace

void mlbridge::plugins::reportNoPasses() {
  // Once per process: lld's LTO backends each load the plugin again.
  static const bool Reported = [] {
    const std::string Path = selfPath();
    std::fprintf(stderr,
                 "warning: %s has no passes for the new pass manager (-fpass-plugin, "
                 "-load-pass-plugin, --load-pass-plugin) and does nothing here: it "
                 "registers code-generation passes for llc; load it with llc -load=%s\n",
                 Path.c_str(), Path.c_str());
    return true;
  }();
  (void)Reported;
}

bool mlbridge::plugins::hostLLVMMatches() {
  // Once per plugin: every registration of a plugin asks, one message.
  static const bool Matches = [] {
    const unsigned Host = hostMajor();
    if (Host == 0 || Host == LLVM_VERSION_MAJOR)
      return true;
    refuse(Host);
    return false;
  }();
  return Matches;
}

// The entry: x86-64 only (elsewhere PluginEntryInfo.cpp defines the plain
// typed entry, unchecked).
#if defined(__x86_64__)

namespace {
// PassPluginLibraryInfo as LLVM 15-21 and LLVM 22 lay it out; a refusal is
// written in the host's layout (API version 0, no callbacks).
struct InfoUpTo21 {
  uint32_t APIVersion;
  const char *PluginName;
  const char *PluginVersion;
  void (*RegisterPassBuilderCallbacks)(void *);
};
struct InfoFrom22 {
  InfoUpTo21 Base;
  void *PreCodeGenCallback;
};
} // namespace

// The x86-64 System V convention of a function returning a struct of more
// than 16 bytes: the caller passes the result's address (in rdi), the
// callee returns it (in rax); so this signature is the typed one of both
// hosts, and the result written is the size the host reserved.
//
// Weak: a plugin that still defines its own (typed) llvmGetPassPluginInfo
// links and works, unchecked, until it defines passPluginInfo() instead.
extern "C" __attribute__((visibility("default"), weak)) void *llvmGetPassPluginInfo(void *Out) {
  if (mlbridge::plugins::hostLLVMMatches()) {
    mlbridge::plugins::writePassPluginInfo(Out);
    return Out;
  }
  if (hostMajor() >= 22)
    *static_cast<InfoFrom22 *>(Out) = InfoFrom22{{0, "MLBridge", "refused", nullptr}, nullptr};
  else
    *static_cast<InfoUpTo21 *>(Out) = InfoUpTo21{0, "MLBridge", "refused", nullptr};
  return Out;
}

#endif // __x86_64__
