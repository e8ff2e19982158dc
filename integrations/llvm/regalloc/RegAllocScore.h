//===- RegAllocScore.h - The score of an allocated function ------*- C++ -*-===//
//
// MLGO's register allocation score, computed by our own code on any
// allocator's output (docs/register-allocation.md, "Score"): per function,
// the sum over blocks of freq(block)/freq(entry) x
//   0.2 copies + 4 loads + 1 stores + 5 load-and-stores
//   + 0.2 cheap rematerializable + 1 expensive rematerializable instructions,
// each instruction in exactly one class, tested in that order: a COPY; a
// trivially rematerializable instruction (cheap if "as cheap as a move");
// one that may load and store; may load; may store. Debug instructions,
// KILLs and inline asm count nothing.
//
// The machine function pass "mlbridge-ra-score" writes one JSON line per
// function to -mlbridge-ra-score-file: run it on the MIR an allocator left
// (llc -stop-after=virtregrewriter, then llc -run-pass=mlbridge-ra-score).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_REGALLOCSCORE_H
#define MLBRIDGE_INTEGRATIONS_LLVM_REGALLOCSCORE_H

#include "llvm/ADT/STLFunctionalExtras.h"

namespace llvm {
class MachineBasicBlock;
class MachineFunction;
class MachineInstr;
} // namespace llvm

namespace mlbridge::regalloc {

/// Frequency-weighted counts of one function, and their weighted sum.
struct Score {
  double Copies = 0, Loads = 0, Stores = 0, LoadStores = 0, CheapRemats = 0,
         ExpensiveRemats = 0;
  double total() const {
    return 0.2 * Copies + 4.0 * Loads + 1.0 * Stores + 5.0 * LoadStores +
           0.2 * CheapRemats + 1.0 * ExpensiveRemats;
  }
};

/// The score of MF, with each block's frequency relative to the entry and
/// the target's rematerializability test given.
Score computeScore(const llvm::MachineFunction &MF,
                   llvm::function_ref<double(const llvm::MachineBasicBlock &)> RelFreq,
                   llvm::function_ref<bool(const llvm::MachineInstr &)> IsRemat);

} // namespace mlbridge::regalloc

#endif // MLBRIDGE_INTEGRATIONS_LLVM_REGALLOCSCORE_H
