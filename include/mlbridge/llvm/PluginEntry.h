//===- PluginEntry.h - The entry point of every MLBridge LLVM plugin -*- C++ -*-===//
//
// Part of the installed LLVM kit (examples/new-optimization/README.md):
// a plugin made with mlbridge_add_llvm_pass_plugin() compiles the entry in
// (sources of MLBridge::llvm19 / MLBridge::llvm22) and defines passPluginInfo().
//
// A plugin built for one LLVM must refuse, cleanly, to load into another:
// LLVM's plugin loader checks nothing but LLVM_PLUGIN_API_VERSION (1 on
// LLVM 19, 2 on 22) after calling the entry, and the entry's result type
// itself differs (LLVM 22's PassPluginLibraryInfo is 8 bytes longer). So no
// plugin defines llvmGetPassPluginInfo itself: each defines passPluginInfo()
// below, and PluginEntry.cpp exports llvmGetPassPluginInfo, which
//  * asks the host for its LLVM version (the C API's LLVMGetVersion, looked
//    up in the process: the host's libLLVM was loaded first);
//  * for the version the plugin was built for, returns passPluginInfo();
//  * otherwise prints one message to stderr naming both versions and the
//    plugin of the right version, and returns, in the HOST's layout, an info
//    with API version 0, which the host rejects ("Wrong API version").
// (A plugin that still defines llvmGetPassPluginInfo itself overrides this
// weak entry: it links and works as before, without the check.) A plugin
// loaded with llc -load has no entry called: its static registrations ask
// hostLLVMMatches() instead (regalloc/).
// That the plugin gets as far as its entry in a foreign host is the other
// half: every plugin links its own version's libLLVM (DT_NEEDED), so its
// references are versioned (LLVM_19.1 / LLVM_22.1) and bind to that LLVM
// even in the other one's process; unversioned, they bound to the host's
// and crashed in the plugin's static constructors (docs/llvm-versions.md).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_LLVM_PLUGINENTRY_H
#define MLBRIDGE_LLVM_PLUGINENTRY_H

#include "llvm/Config/llvm-config.h"
// LLVM 22 moved the plugin interface from Passes/ to Plugins/.
#if LLVM_VERSION_MAJOR >= 22
#include "llvm/Plugins/PassPlugin.h"
#else
#include "llvm/Passes/PassPlugin.h"
#endif

namespace mlbridge::plugins {

/// What the plugin registers: {LLVM_PLUGIN_API_VERSION, name, version,
/// callback}. Defined by each plugin with passes for the new pass manager;
/// called only in a host of its LLVM. A plugin of legacy code-generation
/// passes only (MLBridgeMIR2Vec.so, for llc -load) defines none: loaded as
/// a pass plugin (-fpass-plugin, -load-pass-plugin, lld's
/// --load-pass-plugin) its entry says how to load it (once) and registers
/// nothing. (A refusal, API version 0, is a fatal error in lld's LTO
/// backend threads, and one thread's exit races another's loading.)
llvm::PassPluginLibraryInfo passPluginInfo();

/// True when the host tool's LLVM (LLVMGetVersion in the process) is the
/// one this plugin was built for, or cannot be told; otherwise prints the
/// refusal once (both versions, the plugin of the right one) and returns
/// false. The entry asks it; so must a plugin that registers itself in
/// static constructors without an entry being called (the register
/// allocator, loaded with llc -load / clang -fplugin): register nothing then.
bool hostLLVMMatches();

/// Stores passPluginInfo() at Out (PluginEntryInfo.cpp): the exported entry
/// (PluginEntry.cpp) is compiled without this header, whose declaration of
/// llvmGetPassPluginInfo has the typed signature. For a plugin without
/// passPluginInfo: reportNoPasses() and an info registering nothing.
void writePassPluginInfo(void *Out);

/// Says, once per process, that this plugin has no passes to load as a pass
/// plugin and how to load it (llc -load).
void reportNoPasses();

} // namespace mlbridge::plugins

#endif // MLBRIDGE_LLVM_PLUGINENTRY_H
