//===- EmbeddingBackend19.cpp - PluginEmbeddings on LLVM 19 ---------------===//
//
// LLVM 19 has no IR2Vec: our embedder (Embedder.h) on IR2Vec's text
// vocabulary (Vocabulary.h), IR2Vec's published weights.
//
//===----------------------------------------------------------------------===//
#include "EmbeddingBackend.h"
#include "Embedder.h"

namespace mlbridge::ir2vec {

struct EmbeddingBackend::State {
  Embedder E; // keeps the scaled vectors it needs, not the vocabulary
};

Expected<std::unique_ptr<EmbeddingBackend>> EmbeddingBackend::load(const std::string &Path,
                                                                   Kind K) {
  auto V = Vocabulary::load(Path);
  if (!V)
    return V.takeStatus();
  auto S = std::unique_ptr<State>(new State{Embedder(*V, K)});
  return std::unique_ptr<EmbeddingBackend>(new EmbeddingBackend(std::move(S)));
}

const char *EmbeddingBackend::fileName() { return "seedEmbeddingVocab.txt"; }
const char *EmbeddingBackend::embedderName() { return "mlbridge"; }

EmbeddingBackend::EmbeddingBackend(std::unique_ptr<State> S) : S(std::move(S)) {}
EmbeddingBackend::~EmbeddingBackend() = default;

unsigned EmbeddingBackend::dimension() const { return S->E.dimension(); }
Weights EmbeddingBackend::weights() const { return S->E.weights(); }

FunctionVectorsAll EmbeddingBackend::embed(const llvm::Function &F,
                                           bool WithInstructions) const {
  FunctionEmbedding FE = S->E.embedFunction(F, /*WithBlocks=*/true, WithInstructions);
  return {std::move(FE.Function), std::move(FE.Blocks), std::move(FE.Instructions)};
}

} // namespace mlbridge::ir2vec
