//===- PluginEmbeddings.cpp - IR2Vec vectors as plugin features -----------===//
//
// The version-independent part: where the vocabulary is, the per-function
// cache, module sums. Compiled once per LLVM version (with that version's
// headers) into mlbridge_ir2vec / mlbridge_ir2vec22.
//
//===----------------------------------------------------------------------===//
#include "PluginEmbeddings.h"
#include "EmbeddingBackend.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instruction.h"
#include "llvm/IR/Module.h"
#include <cstdlib>

using namespace llvm;

namespace mlbridge::ir2vec {

const char *vocabularyFileName() { return EmbeddingBackend::fileName(); }

// Weak: the definition the build (or the installed kit's CMake package)
// compiles into the plugin wins; a plugin linked some other way (e.g. by
// pkg-config) has no default and must name its vocabulary.
__attribute__((weak)) const char *defaultVocabularyDir() { return ""; }

std::string resolveVocabularyPath(const std::string &Path) {
  if (!Path.empty())
    return Path;
  const char *Dir = std::getenv("MLBRIDGE_IR2VEC_VOCAB_DIR");
  const std::string Base = Dir && *Dir ? Dir : defaultVocabularyDir();
  return Base.empty() ? std::string() : Base + "/" + vocabularyFileName();
}

// A function's vectors; instructions only once one is asked for.
struct FunctionEntry {
  Vector Function;
  DenseMap<const BasicBlock *, Vector> Blocks;
  DenseMap<const Instruction *, Vector> Instructions;
  bool HasInstructions = false;
};

struct PluginEmbeddings::Cache {
  // Entries on the heap: the references handed out survive the map growing.
  DenseMap<const Function *, std::unique_ptr<FunctionEntry>> Functions;
  Vector Zero;

  FunctionEntry &get(const EmbeddingBackend &B, const Function &F, bool WithInstructions) {
    std::unique_ptr<FunctionEntry> &Slot = Functions[&F];
    if (!Slot)
      Slot = std::make_unique<FunctionEntry>();
    FunctionEntry &E = *Slot;
    const bool Fresh = E.Function.empty();
    if (!Fresh && (E.HasInstructions || !WithInstructions))
      return E;
    FunctionVectorsAll All = B.embed(F, WithInstructions);
    // The function and block vectors already handed out stay where they are
    // (a second walk gives the same values).
    if (Fresh) {
      E.Function = std::move(All.Function);
      size_t BlockNo = 0;
      for (const BasicBlock &BB : F)
        E.Blocks[&BB] = std::move(All.Blocks[BlockNo++]);
    }
    if (WithInstructions) {
      size_t InstNo = 0;
      for (const BasicBlock &BB : F)
        for (const Instruction &I : BB.instructionsWithoutDebug())
          E.Instructions[&I] = std::move(All.Instructions[InstNo++]);
      E.HasInstructions = true;
    }
    return E;
  }
};

Expected<std::unique_ptr<PluginEmbeddings>> PluginEmbeddings::create(const EmbeddingOptions &O) {
  std::string Path = resolveVocabularyPath(O.VocabularyPath);
  if (Path.empty())
    return Status(ErrorCode::NotFound,
                  std::string("no IR2Vec vocabulary named: give EmbeddingOptions::VocabularyPath "
                              "or set MLBRIDGE_IR2VEC_VOCAB_DIR (a plugin built with the "
                              "kit's CMake package gets the installed one)"));
  auto B = EmbeddingBackend::load(Path, O.Kind);
  if (!B)
    return B.takeStatus();
  return std::unique_ptr<PluginEmbeddings>(
      new PluginEmbeddings(std::move(*B), std::move(Path), O.Kind));
}

PluginEmbeddings::PluginEmbeddings(std::unique_ptr<EmbeddingBackend> B, std::string P, Kind K)
    : Backend(std::move(B)), TheCache(new Cache), Path(std::move(P)), TheKind(K) {
  TheCache->Zero.assign(Backend->dimension(), 0.0);
}
PluginEmbeddings::~PluginEmbeddings() = default;

unsigned PluginEmbeddings::dimension() const { return Backend->dimension(); }
const char *PluginEmbeddings::embedderName() const { return EmbeddingBackend::embedderName(); }
Weights PluginEmbeddings::weights() const { return Backend->weights(); }

const Vector &PluginEmbeddings::function(const Function &F) {
  if (F.isDeclaration())
    return TheCache->Zero;
  return TheCache->get(*Backend, F, false).Function;
}

const Vector &PluginEmbeddings::block(const BasicBlock &BB) {
  FunctionEntry &E = TheCache->get(*Backend, *BB.getParent(), false);
  auto It = E.Blocks.find(&BB);
  return It == E.Blocks.end() ? TheCache->Zero : It->second;
}

const Vector &PluginEmbeddings::instruction(const Instruction &I) {
  FunctionEntry &E = TheCache->get(*Backend, *I.getFunction(), true);
  auto It = E.Instructions.find(&I);
  return It == E.Instructions.end() ? TheCache->Zero : It->second;
}

Vector PluginEmbeddings::loop(const Loop &L) {
  Vector Out(dimension(), 0.0);
  for (const BasicBlock *BB : L.blocks())
    addTo(Out, block(*BB));
  return Out;
}

Vector PluginEmbeddings::module(const Module &M) {
  Vector Out(dimension(), 0.0);
  for (const Function &F : M)
    if (!F.isDeclaration())
      addTo(Out, function(F));
  return Out;
}

void PluginEmbeddings::invalidate(const Function &F) { TheCache->Functions.erase(&F); }
void PluginEmbeddings::invalidateAll() { TheCache->Functions.clear(); }
size_t PluginEmbeddings::cachedFunctions() const { return TheCache->Functions.size(); }

void PluginEmbeddings::addTo(Vector &Acc, const Vector &V) {
  for (size_t I = 0; I < Acc.size() && I < V.size(); ++I)
    Acc[I] += V[I];
}

} // namespace mlbridge::ir2vec
