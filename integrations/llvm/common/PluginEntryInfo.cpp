//===- PluginEntryInfo.cpp - The typed half of the plugin entry -----------===//
#include "PluginEntry.h"

#include <new>

void mlbridge::plugins::writePassPluginInfo(void *Out) {
  new (Out) llvm::PassPluginLibraryInfo(passPluginInfo());
}

#if !defined(__x86_64__)
// PluginEntry.cpp's checked entry is written for the x86-64 calling
// convention; elsewhere the plugin has the plain entry (no version check).
extern "C" __attribute__((visibility("default"), weak)) llvm::PassPluginLibraryInfo
llvmGetPassPluginInfo() {
  return mlbridge::plugins::passPluginInfo();
}
#endif
