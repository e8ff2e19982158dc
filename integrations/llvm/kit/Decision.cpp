//===- Decision.cpp - Stable decision names (mlbridge/llvm/Decision.h) ----===//
#include "mlbridge/llvm/Decision.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

#include <cstdio>

unsigned mlbridge::plugins::loopIndex(const llvm::Loop &L, const llvm::LoopInfo &LI) {
  unsigned I = 0;
  for (const llvm::Loop *Each : LI.getLoopsInPreorder()) {
    if (Each == &L)
      return I;
    ++I;
  }
  return I; // not a loop of LI: one past the last
}

std::string mlbridge::plugins::decisionName(const llvm::Function &F, llvm::StringRef Kind,
                                            unsigned Index) {
  std::string Name = F.getParent() ? F.getParent()->getSourceFileName() : std::string();
  Name += ':';
  Name += F.getName().str();
  Name += ':';
  Name += Kind.str();
  // std::to_string would export libstdc++'s digit table from the plugin
  // (a GNU unique symbol no version script hides).
  char Digits[16];
  std::snprintf(Digits, sizeof Digits, "%u", Index);
  Name += Digits;
  return Name;
}

std::string mlbridge::plugins::decisionName(const llvm::Loop &L, const llvm::LoopInfo &LI) {
  return decisionName(*L.getHeader()->getParent(), "loop", loopIndex(L, LI));
}
