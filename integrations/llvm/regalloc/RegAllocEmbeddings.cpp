//===- RegAllocEmbeddings.cpp - MIR2Vec vectors as an optional observation ===//
//
// See RegAllocEmbeddings.h.
//
//===----------------------------------------------------------------------===//
#include "RegAllocEmbeddings.h"
#include "MachineEmbeddings.h"
#include "PluginSupport.h"
#include "RegAllocProtocol.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/CodeGen/MachineFunction.h"
#include "llvm/CodeGen/MachineRegisterInfo.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/CommandLine.h"

#include <optional>

using namespace llvm;
namespace mlp = mlbridge::plugins;
namespace m2v = mlbridge::mir2vec;

namespace mlbridge::regalloc {

namespace {
cl::opt<std::string> VocabOpt(
    "mlbridge-ra-mir2vec-vocab",
    cl::desc("A MIR2Vec vocabulary (python -m mlbridge.mir2vec train): also send "
             "the model function_embedding and node_embeddings. Env: "
             "MLBRIDGE_RA_MIR2VEC_VOCAB"));
} // namespace

struct MIR2VecObservation::State {
  std::optional<m2v::MachineEmbeddings> E;
  // A live range's vector, made when first asked for in this function.
  DenseMap<Register, std::vector<float>> Nodes;
};

namespace {
/// The vocabulary of the option, loaded once per process (null: none, or
/// unreadable); immutable, so every thread's embedder may share it.
std::shared_ptr<const m2v::Vocabulary> sharedVocabulary(LLVMContext &Ctx) {
  static const std::shared_ptr<const m2v::Vocabulary> V =
      [&Ctx]() -> std::shared_ptr<const m2v::Vocabulary> {
    const std::string Path = mlp::readSetting(VocabOpt, "MLBRIDGE_RA_MIR2VEC_VOCAB");
    if (Path.empty())
      return nullptr;
    auto Loaded = m2v::Vocabulary::load(Path);
    if (Loaded)
      return std::make_shared<const m2v::Vocabulary>(std::move(*Loaded));
    mlp::diagnose(Ctx, "mlbridge-regalloc", DS_Warning,
                  Loaded.status().toString() + "; the model gets no MIR2Vec vectors");
    return nullptr;
  }();
  return V;
}
} // namespace

MIR2VecObservation::MIR2VecObservation(LLVMContext &Ctx) : S(new State) {
  if (std::shared_ptr<const m2v::Vocabulary> V = sharedVocabulary(Ctx))
    S->E.emplace(std::move(V));
}
MIR2VecObservation::~MIR2VecObservation() = default;

bool MIR2VecObservation::enabled() const { return S->E.has_value(); }

void MIR2VecObservation::appendSpecs(std::vector<TensorSpec> &Specs) const {
  if (!enabled())
    return;
  const int64_t D = S->E->dimension();
  Specs.push_back(TensorSpec::create<float>("function_embedding", {1, D}));
  Specs.push_back(TensorSpec::create<float>("node_embeddings", {1, MaxNodes, D}));
}

void MIR2VecObservation::beginFunction(const MachineFunction &MF) {
  S->Nodes.clear();
  Function.clear();
  if (!enabled())
    return;
  const m2v::Vector V = S->E->function(MF);
  Function.assign(V.begin(), V.end());
}

void MIR2VecObservation::nodeVectors(const MachineFunction &MF,
                                     const std::vector<Register> &Window,
                                     std::vector<float> &Out) {
  const size_t D = enabled() ? S->E->dimension() : 0;
  Out.assign(static_cast<size_t>(MaxNodes) * D, 0.0f);
  if (!enabled())
    return;
  const MachineRegisterInfo &MRI = MF.getRegInfo();
  for (size_t I = 0; I < Window.size() && I < static_cast<size_t>(MaxNodes); ++I) {
    auto [It, New] = S->Nodes.try_emplace(Window[I]);
    if (New) {
      m2v::Vector Sum(D, 0.0);
      for (const MachineInstr &MI : MRI.reg_nodbg_instructions(Window[I])) {
        const m2v::Vector V = S->E->instruction(MI);
        for (size_t K = 0; K < D; ++K)
          Sum[K] += V[K];
      }
      It->second.assign(Sum.begin(), Sum.end());
    }
    std::copy(It->second.begin(), It->second.end(), Out.begin() + I * D);
  }
}

} // namespace mlbridge::regalloc
