//===- MachineEmbeddings.h - MIR2Vec-style machine code vectors -*- C++ -*-===//
//
// Symbolic embeddings of machine code for LLVM 19 and 22 (docs/ir2vec.md,
// "MIR2Vec"), our own: LLVM 22's llvm-ir2vec crashes on real MIR and LLVM
// 19 has no MIR2Vec, and nobody publishes a machine vocabulary.
//
//  * Entities. An instruction is its opcode (the target's name, e.g.
//    MOV32rr) and its operands' kinds: a register operand is
//    PhyReg_<class> / VirtReg_<class> (the physical register's minimal
//    class, the virtual register's class; VirtReg_generic without one,
//    NoReg for $noreg), any other operand its MachineOperand type
//    (Immediate, MBB, FrameIndex, GlobalAddress, RegisterMask, ...). Debug
//    instructions are skipped.
//  * Triplets (the training data of a TransE vocabulary,
//    python/mlbridge/mir2vec.py): (opcode, next, opcode of the next
//    instruction of the block) and (opcode, arg, each operand's entity).
//  * Vectors, from a vocabulary {entity: vector}: instruction =
//    OpcodeWeight * V[opcode] + OperandWeight * sum V[operand entity]
//    (an entity the vocabulary lacks counts zero); block = sum of its
//    instructions; function = sum of its blocks.
//
// Library mlbridge_mir2vec (LLVM 19) / mlbridge_mir2vec22: static, the
// plugins' flags; for any machine-code plugin (the llc pass of
// MIR2VecPlugin.cpp; the register allocator can link it). No output, no
// exit; errors are values.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_MIR2VEC_MACHINEEMBEDDINGS_H
#define MLBRIDGE_INTEGRATIONS_LLVM_MIR2VEC_MACHINEEMBEDDINGS_H

#include "mlbridge/status.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class MachineBasicBlock;
class MachineFunction;
class MachineInstr;
class MachineOperand;
} // namespace llvm

namespace mlbridge::mir2vec {

using Vector = std::vector<double>;

/// The entity of an instruction's opcode and of one operand.
std::string opcodeEntity(const llvm::MachineInstr &MI);
std::string operandEntity(const llvm::MachineOperand &MO);
/// The opcode's entity, then each operand's.
std::vector<std::string> instructionEntities(const llvm::MachineInstr &MI);

struct Triplet {
  std::string Head;
  const char *Relation; ///< "next" or "arg"
  std::string Tail;
};
/// Every triplet of F, in instruction order.
std::vector<Triplet> extractTriplets(const llvm::MachineFunction &F);

/// A vocabulary file: JSON {"format": "mlbridge-mir2vec-vocab-1",
/// "dimension": D, "entities": {name: [D numbers]}, ...}.
class Vocabulary {
public:
  /// NotFound (naming the file and how to make one) / Malformed (naming
  /// the entity; also a value that is not finite, e.g. 1e999).
  static Expected<Vocabulary> load(const std::string &Path);
  unsigned dimension() const { return Dim; }
  /// Null for an entity the vocabulary lacks.
  const Vector *find(const std::string &Entity) const;
  size_t size() const { return Entities.size(); }

private:
  unsigned Dim = 0;
  std::map<std::string, Vector> Entities;
};

/// Whether every value of V is finite: a sum of huge finite values can
/// overflow, and JSON has no inf or nan (check before writing V).
bool allFinite(const Vector &V);

struct Weights {
  double Opcode = 1.0;
  double Operand = 0.2;
};

class MachineEmbeddings {
public:
  explicit MachineEmbeddings(std::shared_ptr<const Vocabulary> V, Weights W = {})
      : Vocab(std::move(V)), W(W) {}
  unsigned dimension() const { return Vocab->dimension(); }
  Vector instruction(const llvm::MachineInstr &MI) const; // zero for debug instructions
  Vector block(const llvm::MachineBasicBlock &MBB) const;
  Vector function(const llvm::MachineFunction &MF) const;

private:
  void addEntity(Vector &Out, const std::string &Entity, double Weight) const;
  std::shared_ptr<const Vocabulary> Vocab;
  Weights W;
};

} // namespace mlbridge::mir2vec

#endif // MLBRIDGE_INTEGRATIONS_LLVM_MIR2VEC_MACHINEEMBEDDINGS_H
