//===- MIR2VecPlugin.cpp - MIR2Vec triplets and vectors for llc -----------===//
//
// MLBridgeMIR2Vec.so, loaded with llc -load (LLVM 19 and 22 builds): the
// machine function pass "mlbridge-mir2vec" (MachineEmbeddings.h), run on
// MIR with -run-pass=mlbridge-mir2vec. One JSON line per machine function:
//   -mlbridge-mir2vec-triplets=F  {"function", "llvm", "triplets": [[head,
//                                 relation, tail], ...]} (training data)
//   -mlbridge-mir2vec-vocab=V -mlbridge-mir2vec-out=F
//                                 {"function", "llvm", "dimension",
//                                 "vector", "blocks": [[...]],
//                                 "instructions": [{"entities", "vector"}]}
// Errors (no output option, a missing or malformed vocabulary) go through
// LLVM's diagnostics (llc prints "error: mlbridge-mir2vec: ..." and exits 1).
// python/mlbridge/mir2vec.py runs it; docs/ir2vec.md, "MIR2Vec".
//
//===----------------------------------------------------------------------===//
#include "MachineEmbeddings.h"
#include "PluginEntry.h"
#include "PluginSupport.h"

#include "llvm/CodeGen/MachineFunction.h"
#include "llvm/CodeGen/MachineFunctionPass.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <memory>
#include <optional>

using namespace llvm;
namespace mlp = mlbridge::plugins;
namespace m2v = mlbridge::mir2vec;

namespace {

constexpr const char *Prefix = "mlbridge-mir2vec";

cl::OptionCategory Category("MLBridge MIR2Vec (-run-pass=mlbridge-mir2vec)");
cl::opt<std::string> TripletsOpt("mlbridge-mir2vec-triplets", cl::cat(Category),
                                 cl::desc("Append each machine function's triplets "
                                          "(one JSON line) to this file"));
cl::opt<std::string> VocabOpt("mlbridge-mir2vec-vocab", cl::cat(Category),
                              cl::desc("The MIR2Vec vocabulary (python -m mlbridge.mir2vec "
                                       "train writes one)"));
cl::opt<std::string> OutOpt("mlbridge-mir2vec-out", cl::cat(Category),
                            cl::desc("Append each machine function's vectors (one JSON "
                                     "line) to this file; needs -mlbridge-mir2vec-vocab"));
cl::opt<bool> InstructionsOpt("mlbridge-mir2vec-instructions", cl::cat(Category),
                              cl::init(false),
                              cl::desc("Also write every instruction's entities and vector"));

json::Array vectorJson(const m2v::Vector &V) {
  json::Array A;
  for (double X : V)
    A.push_back(X);
  return A;
}

class MIR2VecPass : public MachineFunctionPass {
public:
  static char ID;
  MIR2VecPass() : MachineFunctionPass(ID) {}
  StringRef getPassName() const override { return "MLBridge MIR2Vec"; }
  void getAnalysisUsage(AnalysisUsage &AU) const override {
    AU.setPreservesAll();
    MachineFunctionPass::getAnalysisUsage(AU);
  }

  bool runOnMachineFunction(MachineFunction &MF) override {
    LLVMContext &Ctx = MF.getFunction().getContext();
    if (TripletsOpt.empty() && OutOpt.empty()) {
      mlp::diagnose(Ctx, Prefix, DS_Error,
                    "nothing to do: give -mlbridge-mir2vec-triplets=FILE and/or "
                    "-mlbridge-mir2vec-out=FILE with -mlbridge-mir2vec-vocab=FILE");
      return false;
    }
    if (!TripletsOpt.empty()) {
      json::Array T;
      for (const m2v::Triplet &X : m2v::extractTriplets(MF))
        T.push_back(json::Array{X.Head, X.Relation, X.Tail});
      json::Object Line{{"function", MF.getName()},
                        {"llvm", LLVM_VERSION_STRING},
                        {"triplets", std::move(T)}};
      mlp::appendLogLine(Ctx, Prefix, TripletsOpt,
                         formatv("{0}", json::Value(std::move(Line))).str());
    }
    if (!OutOpt.empty())
      writeVectors(MF, Ctx);
    return false;
  }

private:
  void writeVectors(MachineFunction &MF, LLVMContext &Ctx) {
    if (!Embeddings && VocabError.empty()) {
      if (VocabOpt.empty()) {
        VocabError = "-mlbridge-mir2vec-out needs -mlbridge-mir2vec-vocab=FILE "
                     "(python -m mlbridge.mir2vec train writes one)";
      } else if (auto V = m2v::Vocabulary::load(VocabOpt)) {
        Embeddings.emplace(std::make_shared<const m2v::Vocabulary>(std::move(*V)));
      } else {
        VocabError = V.status().toString();
      }
      if (!VocabError.empty())
        mlp::diagnose(Ctx, Prefix, DS_Error, VocabError);
    }
    if (!Embeddings)
      return;
    // Every vector is part of the function's sum: one check covers them all.
    const m2v::Vector FunctionVector = Embeddings->function(MF);
    if (!m2v::allFinite(FunctionVector)) {
      mlp::diagnose(Ctx, Prefix, DS_Error,
                    "the vector of machine function '" + MF.getName().str() +
                        "' is not finite (the vocabulary's values overflow); nothing "
                        "written to " + OutOpt);
      return;
    }
    json::Array Blocks, Instructions;
    for (const MachineBasicBlock &MBB : MF) {
      Blocks.push_back(vectorJson(Embeddings->block(MBB)));
      if (InstructionsOpt)
        for (const MachineInstr &MI : MBB) {
          if (MI.isDebugInstr())
            continue;
          json::Array E;
          for (std::string &S : m2v::instructionEntities(MI))
            E.push_back(std::move(S));
          Instructions.push_back(json::Object{{"entities", std::move(E)},
                                              {"vector", vectorJson(Embeddings->instruction(MI))}});
        }
    }
    json::Object Line{{"function", MF.getName()},
                      {"llvm", LLVM_VERSION_STRING},
                      {"dimension", static_cast<int64_t>(Embeddings->dimension())},
                      {"vector", vectorJson(FunctionVector)},
                      {"blocks", std::move(Blocks)}};
    if (InstructionsOpt)
      Line["instructions"] = std::move(Instructions);
    mlp::appendLogLine(Ctx, Prefix, OutOpt, formatv("{0}", json::Value(std::move(Line))).str());
  }

  std::optional<m2v::MachineEmbeddings> Embeddings; // loaded on first use
  std::string VocabError;
};

char MIR2VecPass::ID = 0;

// Registered only in a host of this plugin's LLVM (common/PluginEntry.h):
// llc -load calls no entry that could refuse another one.
struct Registration {
  std::optional<RegisterPass<MIR2VecPass>> Pass;
  Registration() {
    if (mlp::hostLLVMMatches())
      Pass.emplace("mlbridge-mir2vec", "MLBridge: MIR2Vec triplets and vectors");
  }
} TheRegistration;

} // namespace
