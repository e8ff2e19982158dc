//===- MachineEmbeddings.cpp - MIR2Vec-style machine code vectors ---------===//
//
// See MachineEmbeddings.h. The same source on LLVM 19 and 22: the
// MachineInstr / MachineOperand / register-class API it uses is the same.
//
//===----------------------------------------------------------------------===//
#include "MachineEmbeddings.h"

#include "llvm/CodeGen/MachineFunction.h"
#include "llvm/CodeGen/MachineInstr.h"
#include "llvm/CodeGen/MachineRegisterInfo.h"
#include "llvm/CodeGen/TargetInstrInfo.h"
#include "llvm/CodeGen/TargetRegisterInfo.h"
#include "llvm/CodeGen/TargetSubtargetInfo.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

using namespace llvm;

namespace mlbridge::mir2vec {

namespace {
const MachineFunction *functionOf(const MachineInstr &MI) {
  return MI.getParent() ? MI.getParent()->getParent() : nullptr;
}

const char *operandTypeName(MachineOperand::MachineOperandType T) {
  switch (T) {
  case MachineOperand::MO_Immediate: return "Immediate";
  case MachineOperand::MO_CImmediate: return "CImmediate";
  case MachineOperand::MO_FPImmediate: return "FPImmediate";
  case MachineOperand::MO_MachineBasicBlock: return "MBB";
  case MachineOperand::MO_FrameIndex: return "FrameIndex";
  case MachineOperand::MO_ConstantPoolIndex: return "ConstantPoolIndex";
  case MachineOperand::MO_TargetIndex: return "TargetIndex";
  case MachineOperand::MO_JumpTableIndex: return "JumpTableIndex";
  case MachineOperand::MO_ExternalSymbol: return "ExternalSymbol";
  case MachineOperand::MO_GlobalAddress: return "GlobalAddress";
  case MachineOperand::MO_BlockAddress: return "BlockAddress";
  case MachineOperand::MO_RegisterMask: return "RegisterMask";
  case MachineOperand::MO_RegisterLiveOut: return "RegisterLiveOut";
  case MachineOperand::MO_Metadata: return "Metadata";
  case MachineOperand::MO_MCSymbol: return "MCSymbol";
  case MachineOperand::MO_CFIIndex: return "CFIIndex";
  case MachineOperand::MO_IntrinsicID: return "IntrinsicID";
  case MachineOperand::MO_Predicate: return "Predicate";
  case MachineOperand::MO_ShuffleMask: return "ShuffleMask";
  default: return "OtherOperand";
  }
}
} // namespace

std::string opcodeEntity(const MachineInstr &MI) {
  const MachineFunction *MF = functionOf(MI);
  if (!MF)
    return ("Opcode_" + Twine(MI.getOpcode())).str();
  return MF->getSubtarget().getInstrInfo()->getName(MI.getOpcode()).str();
}

std::string operandEntity(const MachineOperand &MO) {
  if (!MO.isReg())
    return operandTypeName(MO.getType());
  const Register R = MO.getReg();
  const MachineInstr *MI = MO.getParent();
  const MachineFunction *MF = MI ? functionOf(*MI) : nullptr;
  if (!R.isValid())
    return "NoReg";
  if (!MF)
    return R.isVirtual() ? "VirtReg_generic" : "PhyReg_unknown";
  const TargetRegisterInfo &TRI = *MF->getSubtarget().getRegisterInfo();
  if (R.isVirtual()) {
    const TargetRegisterClass *RC = MF->getRegInfo().getRegClassOrNull(R);
    return RC ? "VirtReg_" + std::string(TRI.getRegClassName(RC)) : "VirtReg_generic";
  }
  const TargetRegisterClass *RC = TRI.getMinimalPhysRegClass(R.asMCReg());
  return RC ? "PhyReg_" + std::string(TRI.getRegClassName(RC)) : "PhyReg_unknown";
}

std::vector<std::string> instructionEntities(const MachineInstr &MI) {
  std::vector<std::string> E{opcodeEntity(MI)};
  for (const MachineOperand &MO : MI.operands())
    E.push_back(operandEntity(MO));
  return E;
}

std::vector<Triplet> extractTriplets(const MachineFunction &F) {
  std::vector<Triplet> Out;
  for (const MachineBasicBlock &MBB : F) {
    std::string Previous;
    for (const MachineInstr &MI : MBB) {
      if (MI.isDebugInstr())
        continue;
      std::vector<std::string> E = instructionEntities(MI);
      if (!Previous.empty())
        Out.push_back({Previous, "next", E[0]});
      for (size_t I = 1; I < E.size(); ++I)
        Out.push_back({E[0], "arg", E[I]});
      Previous = E[0];
    }
  }
  return Out;
}

mlbridge::Expected<Vocabulary> Vocabulary::load(const std::string &Path) {
  auto Bad = [&](const Twine &Why) {
    return Status(ErrorCode::Malformed, ("MIR2Vec vocabulary '" + Path + "': " + Why).str());
  };
  auto Buf = MemoryBuffer::getFile(Path);
  if (!Buf)
    return Status(ErrorCode::NotFound,
                  "MIR2Vec vocabulary '" + Path + "' cannot be opened (" +
                      Buf.getError().message() +
                      "); python -m mlbridge.mir2vec train writes one (docs/ir2vec.md)");
  llvm::Expected<json::Value> J = json::parse((*Buf)->getBuffer());
  if (!J) {
    std::string Msg = toString(J.takeError());
    return Bad("not JSON: " + Msg);
  }
  const json::Object *O = J->getAsObject();
  if (!O)
    return Bad("not a JSON object");
  if (O->getString("format") != std::optional<StringRef>("mlbridge-mir2vec-vocab-1"))
    return Bad("'format' is not \"mlbridge-mir2vec-vocab-1\"");
  std::optional<int64_t> Dim = O->getInteger("dimension");
  if (!Dim || *Dim <= 0)
    return Bad("no positive integer 'dimension'");
  const json::Object *Entities = O->getObject("entities");
  if (!Entities || Entities->empty())
    return Bad("no 'entities' object, or it is empty");
  Vocabulary V;
  V.Dim = static_cast<unsigned>(*Dim);
  for (const auto &KV : *Entities) {
    const json::Array *A = KV.second.getAsArray();
    if (!A || A->size() != V.Dim)
      return Bad("entity '" + KV.first.str() + "' is not a list of " + Twine(V.Dim) +
                 " numbers");
    Vector Vec;
    Vec.reserve(V.Dim);
    for (const json::Value &X : *A) {
      std::optional<double> D = X.getAsNumber();
      if (!D)
        return Bad("entity '" + KV.first.str() + "' holds a value that is not a number");
      // LLVM's JSON parser reads 1e999 as inf.
      if (!std::isfinite(*D))
        return Bad("value " + Twine(Vec.size() + 1) + " of entity '" + KV.first.str() +
                   "' is not finite (out of a double's range)");
      Vec.push_back(*D);
    }
    V.Entities.emplace(KV.first.str(), std::move(Vec));
  }
  return V;
}

bool allFinite(const Vector &V) {
  for (double X : V)
    if (!std::isfinite(X))
      return false;
  return true;
}

const Vector *Vocabulary::find(const std::string &Entity) const {
  auto It = Entities.find(Entity);
  return It == Entities.end() ? nullptr : &It->second;
}

void MachineEmbeddings::addEntity(Vector &Out, const std::string &Entity, double Weight) const {
  if (const Vector *V = Vocab->find(Entity))
    for (size_t I = 0; I < Out.size(); ++I)
      Out[I] += Weight * (*V)[I];
}

Vector MachineEmbeddings::instruction(const MachineInstr &MI) const {
  Vector Out(dimension(), 0.0);
  if (MI.isDebugInstr())
    return Out;
  std::vector<std::string> E = instructionEntities(MI);
  addEntity(Out, E[0], W.Opcode);
  for (size_t I = 1; I < E.size(); ++I)
    addEntity(Out, E[I], W.Operand);
  return Out;
}

// The sum of Part(X) over the range.
template <typename Range, typename PartFn>
static Vector sumOf(unsigned Dim, const Range &Xs, PartFn Part) {
  Vector Out(Dim, 0.0);
  for (const auto &X : Xs) {
    const Vector V = Part(X);
    for (size_t I = 0; I < Out.size(); ++I)
      Out[I] += V[I];
  }
  return Out;
}

Vector MachineEmbeddings::block(const MachineBasicBlock &MBB) const {
  return sumOf(dimension(), MBB, [this](const MachineInstr &MI) { return instruction(MI); });
}

Vector MachineEmbeddings::function(const MachineFunction &MF) const {
  return sumOf(dimension(), MF, [this](const MachineBasicBlock &B) { return block(B); });
}

} // namespace mlbridge::mir2vec
