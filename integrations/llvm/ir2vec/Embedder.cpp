//===- Embedder.cpp - IR2Vec embeddings on LLVM 19 ------------------------===//
#include "Embedder.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DepthFirstIterator.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instruction.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include <string>

using namespace llvm;

namespace mlbridge::ir2vec {

namespace {

// LLVM 22's canonical types (ir2vec::Vocabulary::CanonicalTypeID), in its
// order, spelled as IR2Vec's vocabulary does.
enum CanonicalType : unsigned {
  FloatTy, VoidTy, LabelTy, MetadataTy, VectorTy, TokenTy, IntegerTy,
  FunctionTy, PointerTy, StructTy, ArrayTy, UnknownTy, NumCanonicalTypes
};
constexpr const char *CanonicalTypeKeys[NumCanonicalTypes] = {
    "floatTy", "voidTy", "labelTy", "metadataTy", "vectorTy", "tokenTy",
    "integerTy", "functionTy", "pointerTy", "structTy", "arrayTy", "unknownTy"};

CanonicalType canonicalType(const Type *T) {
  switch (T->getTypeID()) {
  case Type::HalfTyID:
  case Type::BFloatTyID:
  case Type::FloatTyID:
  case Type::DoubleTyID:
  case Type::X86_FP80TyID:
  case Type::FP128TyID:
  case Type::PPC_FP128TyID:
    return FloatTy;
  case Type::VoidTyID:
    return VoidTy;
  case Type::LabelTyID:
    return LabelTy;
  case Type::MetadataTyID:
    return MetadataTy;
  case Type::X86_MMXTyID: // LLVM 19 only (LLVM 20 removed it): a vector
  case Type::X86_AMXTyID:
  case Type::FixedVectorTyID:
  case Type::ScalableVectorTyID:
    return VectorTy;
  case Type::TokenTyID:
    return TokenTy;
  case Type::IntegerTyID:
    return IntegerTy;
  case Type::FunctionTyID:
    return FunctionTy;
  case Type::PointerTyID:
  case Type::TypedPointerTyID:
    return PointerTy;
  case Type::StructTyID:
    return StructTy;
  case Type::ArrayTyID:
    return ArrayTy;
  case Type::TargetExtTyID:
    return UnknownTy;
  }
  return UnknownTy;
}

// ir2vec::Vocabulary::OperandKind, in its order and classification order.
enum OperandKind : unsigned { FunctionOp, PointerOp, ConstantOp, VariableOp, NumOperandKinds };
constexpr const char *OperandKeys[NumOperandKinds] = {"function", "pointer", "constant",
                                                      "variable"};

OperandKind operandKind(const Value *V) {
  if (isa<Function>(V))
    return FunctionOp;
  if (V->getType()->isPointerTy())
    return PointerOp;
  if (isa<Constant>(V))
    return ConstantOp;
  return VariableOp;
}

// LLVM 22 scales each vocabulary entry once (Embedding *= double(weight)).
Vector scaled(const Vocabulary &V, const char *Key, float W) {
  Vector Out(V.dimension(), 0.0);
  if (const Vector *E = V.find(Key))
    for (size_t I = 0; I < Out.size(); ++I)
      Out[I] = (*E)[I] * static_cast<double>(W);
  return Out;
}

// Operands LLVM 19 has and LLVM 22 does not, left out so that a module
// embeds the same on both (docs/ir2vec.md, version differences):
//  * the size of llvm.lifetime.start/end (LLVM 22 removed it; its bitcode
//    reader drops it from older modules);
//  * a switch's case values (LLVM 22 keeps them beside the operands, which
//    are the condition and the destinations only).
bool droppedByLLVM22(const Use &Op) {
  const User *U = Op.getUser();
  const unsigned N = Op.getOperandNo();
  if (const auto *II = dyn_cast<IntrinsicInst>(U))
    return II->isLifetimeStartOrEnd() && N == 0;
  return isa<SwitchInst>(U) && N >= 2 && N % 2 == 0; // cond, default, (value, dest)*
}

void add(Vector &Acc, const Vector &V) {
  for (size_t I = 0; I < Acc.size(); ++I)
    Acc[I] += V[I];
}

// The walk of one function: LLVM 22's Embedder::computeEmbeddings, with
// the flow-aware cache of instruction vectors.
class FunctionWalk {
public:
  FunctionWalk(unsigned Dim, Kind K, const std::vector<Vector> &Opcodes,
               const std::vector<Vector> &Types, const std::vector<Vector> &Operands)
      : Dim(Dim), Flow(K == Kind::FlowAware), Opcodes(Opcodes), Types(Types),
        Operands(Operands) {}

  Vector instruction(const Instruction &I) {
    if (Flow) {
      auto It = Cache.find(&I);
      if (It != Cache.end())
        return It->second;
    }
    Vector Args(Dim, 0.0);
    for (const Use &Op : I.operands()) {
      if (droppedByLLVM22(Op))
        continue;
      const Vector *FromDef = nullptr;
      if (Flow)
        if (const auto *Def = dyn_cast<Instruction>(Op.get())) {
          auto It = Cache.find(Def);
          if (It != Cache.end())
            FromDef = &It->second;
        }
      add(Args, FromDef ? *FromDef : Operands[operandKind(Op.get())]);
    }
    Vector Out = Opcodes[I.getOpcode()];
    add(Out, Types[canonicalType(I.getType())]);
    add(Out, Args);
    // LLVM 22 adds a compare predicate's vector here: IR2Vec 2.1.1 has none
    // (zero in the converted vocabulary), so nothing to add.
    if (Flow)
      Cache[&I] = Out;
    return Out;
  }

  Vector block(const BasicBlock &BB) {
    Vector Out(Dim, 0.0);
    for (const Instruction &I : BB.instructionsWithoutDebug())
      add(Out, instruction(I));
    return Out;
  }

  Vector function(const Function &F) {
    Vector Out(Dim, 0.0);
    if (F.isDeclaration())
      return Out;
    for (const BasicBlock *BB : depth_first(&F))
      add(Out, block(*BB));
    return Out;
  }

private:
  unsigned Dim;
  bool Flow;
  const std::vector<Vector> &Opcodes, &Types, &Operands;
  DenseMap<const Instruction *, Vector> Cache;
};

} // namespace

Embedder::Embedder(const Vocabulary &V, Kind K, Weights W)
    : Dim(V.dimension()), TheKind(K), TheWeights(W) {
  Opcodes.assign(Instruction::OtherOpsEnd, Vector(Dim, 0.0));
  for (unsigned Op = 1; Op < Instruction::OtherOpsEnd; ++Op)
    Opcodes[Op] = scaled(V, Instruction::getOpcodeName(Op), W.Opcode);
  for (const char *Key : CanonicalTypeKeys)
    Types.push_back(scaled(V, Key, W.Type));
  for (const char *Key : OperandKeys)
    Operands.push_back(scaled(V, Key, W.Operand));
}

Vector Embedder::embedInstruction(const Instruction &I) const {
  return FunctionWalk(Dim, Kind::Symbolic, Opcodes, Types, Operands).instruction(I);
}

FunctionEmbedding Embedder::embedFunction(const Function &F, bool WithBlocks,
                                          bool WithInstructions) const {
  FunctionWalk Walk(Dim, TheKind, Opcodes, Types, Operands);
  FunctionEmbedding Out;
  Out.Function = Walk.function(F);
  if (WithBlocks)
    for (const BasicBlock &BB : F)
      Out.Blocks.push_back(Walk.block(BB));
  if (WithInstructions)
    for (const BasicBlock &BB : F)
      for (const Instruction &I : BB.instructionsWithoutDebug())
        Out.Instructions.push_back(Walk.instruction(I));
  return Out;
}

Vector Embedder::embedModule(const Module &M) const {
  Vector Out(Dim, 0.0);
  for (const Function &F : M)
    if (!F.isDeclaration())
      add(Out, embedFunction(F).Function);
  return Out;
}

} // namespace mlbridge::ir2vec
