//===- Embedder.h - IR2Vec embeddings on LLVM 19 ----------------*- C++ -*-===//
//
// IR2Vec's symbolic and flow-aware embeddings, computed the way LLVM 22's
// own embedder (llvm/Analysis/IR2Vec.h) computes them, for LLVM 19, which
// has none (docs/ir2vec.md says what is the same and what differs):
//
//   instruction = w_o * opcode + w_t * type + w_a * sum(operands)
//   block       = sum of its instructions (debug and pseudo-probe ones
//                 excluded: BasicBlock::instructionsWithoutDebug)
//   function    = sum of the blocks reachable from the entry (depth first)
//   module      = sum of the module's function definitions
//
// The types are canonicalised as LLVM 22 does (every float type is floatTy,
// vectors and AMX are vectorTy, target extension types unknownTy), the
// operands are function / pointer / constant / variable, checked in that
// order. Flow-aware: an operand defined by an instruction already embedded
// (in the depth-first walk) contributes that instruction's vector instead
// of "variable"/"pointer"; LLVM 22's simplified variant (SSA use-def only).
//
// For the LLVM plugins: no LLVM library is linked (the symbols come from
// opt-19/clang-19), compiled with their flags (-fno-rtti, -fno-exceptions).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_EMBEDDER_H
#define MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_EMBEDDER_H

#include "EmbeddingsJson.h"
#include "Vocabulary.h"
#include <vector>

namespace llvm {
class Instruction;
class Function;
class Module;
} // namespace llvm

namespace mlbridge::ir2vec {

struct FunctionEmbedding {
  Vector Function;
  std::vector<Vector> Blocks;       ///< every block in function order, if asked for
  std::vector<Vector> Instructions; ///< every instruction the blocks sum, in
                                    ///< function order, if asked for
};

class Embedder {
public:
  /// Looks every LLVM 19 opcode, canonical type and operand kind up once
  /// (IR2Vec's spelling: "getelementptr", "pointerTy", "constant"); an
  /// entity the vocabulary lacks is a zero vector.
  explicit Embedder(const Vocabulary &V, Kind K = Kind::Symbolic, Weights W = {});

  unsigned dimension() const { return Dim; }
  Kind kind() const { return TheKind; }
  const Weights &weights() const { return TheWeights; }

  /// The symbolic vector of one instruction (flow-aware vectors depend on
  /// the walk over the function: embedFunction).
  Vector embedInstruction(const llvm::Instruction &I) const;
  /// The function's vector (zero for a declaration) and, with WithBlocks,
  /// every block's vector, with WithInstructions every instruction's
  /// (instructionsWithoutDebug of every block; flow-aware: after the
  /// function's walk).
  FunctionEmbedding embedFunction(const llvm::Function &F, bool WithBlocks = false,
                                  bool WithInstructions = false) const;
  /// The sum of the vectors of M's function definitions.
  Vector embedModule(const llvm::Module &M) const;

private:
  unsigned Dim;
  Kind TheKind;
  Weights TheWeights;
  std::vector<Vector> Opcodes;  ///< by opcode number, scaled by Weights::Opcode
  std::vector<Vector> Types;    ///< by canonical type, scaled by Weights::Type
  std::vector<Vector> Operands; ///< by operand kind, scaled by Weights::Operand
};

} // namespace mlbridge::ir2vec

#endif // MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_EMBEDDER_H
