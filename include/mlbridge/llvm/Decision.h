//===- Decision.h - Stable names for a plugin's decisions --------*- C++ -*-===//
//
// Search and replay key a decision by its name: the same loop of the same
// function gets the same name in every compile of the same source with the
// same flags, whatever else the compiler or the model did before. A plugin
// sends it as the request's context (ModelRunner::switchContext), which the
// Python side reads as obs.context. Part of the installed LLVM kit
// (MLBridge::llvm19 / MLBridge::llvm22; examples/new-optimization/).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_LLVM_DECISION_H
#define MLBRIDGE_LLVM_DECISION_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace llvm {
class Function;
class Loop;
class LoopInfo;
} // namespace llvm

namespace mlbridge::plugins {

/// The position of L among the loops of its function in LoopInfo's
/// preorder (an outer loop before its inner loops, siblings in program
/// order): deterministic for the same IR at the same point of the pipeline.
unsigned loopIndex(const llvm::Loop &L, const llvm::LoopInfo &LI);

/// "<module>:<function>:<Kind><Index>", e.g. "kernels.c:saxpy:loop0".
/// <module> is the module's source file name as the compiler was given it
/// (the same path gives the same name); <function> the symbol name.
std::string decisionName(const llvm::Function &F, llvm::StringRef Kind, unsigned Index);

/// decisionName(its function, "loop", loopIndex(L, LI)).
std::string decisionName(const llvm::Loop &L, const llvm::LoopInfo &LI);

} // namespace mlbridge::plugins

#endif // MLBRIDGE_LLVM_DECISION_H
