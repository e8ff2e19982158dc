//===- PluginEntryInfo.cpp - The typed half of the plugin entry -----------===//
#include "mlbridge/llvm/PluginEntry.h"

#include <new>

// Weak: a plugin of legacy passes only defines none (PluginEntry.h).
namespace mlbridge::plugins {
__attribute__((weak)) llvm::PassPluginLibraryInfo passPluginInfo();
} // namespace mlbridge::plugins

namespace {
llvm::PassPluginLibraryInfo infoOrNothing() {
  if (&mlbridge::plugins::passPluginInfo)
    return mlbridge::plugins::passPluginInfo();
  mlbridge::plugins::reportNoPasses();
  return {LLVM_PLUGIN_API_VERSION, "MLBridge", "no passes", [](llvm::PassBuilder &) {}};
}
} // namespace

void mlbridge::plugins::writePassPluginInfo(void *Out) {
  new (Out) llvm::PassPluginLibraryInfo(infoOrNothing());
}

#if !defined(__x86_64__)
// PluginEntry.cpp's checked entry is written for the x86-64 calling
// convention; elsewhere the plugin has the plain entry (no version check).
extern "C" __attribute__((visibility("default"), weak)) llvm::PassPluginLibraryInfo
llvmGetPassPluginInfo() {
  return infoOrNothing();
}
#endif
