//===- MLIRCompat.h - What differs between MLIR 19 and MLIR 22 --*- C++ -*-===//
//
// The MLIR plugin is built from one source against MLIR 19 (Debian's
// libmlir-19-dev, the tested path) and, opt-in, MLIR 22 (extracted by
// scripts/deps/mlir22.sh; CMakeLists.txt). Every version difference the
// plugin meets belongs here, nowhere else. Today there is none to bridge:
// AffineUnrollPlugin.cpp compiles unchanged, warning-free, against both
// (MLIR_PLUGIN_API_VERSION is 1 and mlir::PassPluginLibraryInfo the same
// struct on both), and mlir-opt-22 gives the same output as mlir-opt-19 on
// the kernels (tests/e2e/test_mlir22_plugin.py). What this header does keep:
// the versions the plugin is known to build with.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_MLIR_MLIRCOMPAT_H
#define MLBRIDGE_INTEGRATIONS_MLIR_MLIRCOMPAT_H

#include "llvm/Config/llvm-config.h"
#include "mlir/Tools/Plugins/PassPlugin.h"

#if LLVM_VERSION_MAJOR != 19 && LLVM_VERSION_MAJOR != 22
#error "the MLBridge MLIR plugin is built against MLIR 19 or MLIR 22 (docs/mlir.md)"
#endif

#endif // MLBRIDGE_INTEGRATIONS_MLIR_MLIRCOMPAT_H
