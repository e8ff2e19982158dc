//===- EmbeddingBackend.h - One LLVM version's embedder ---------*- C++ -*-===//
//
// What PluginEmbeddings (PluginEmbeddings.h) needs from an LLVM version,
// implemented once per version: EmbeddingBackend19.cpp (our embedder) and
// llvm22/EmbeddingBackend22.cpp (LLVM's ir2vec::Embedder). Internal to the
// mlbridge_ir2vec libraries.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_EMBEDDINGBACKEND_H
#define MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_EMBEDDINGBACKEND_H

#include "PluginEmbeddings.h"
#include <vector>

namespace mlbridge::ir2vec {

/// Everything about one function, in function order.
struct FunctionVectorsAll {
  Vector Function;
  std::vector<Vector> Blocks;       ///< every block
  std::vector<Vector> Instructions; ///< every instructionsWithoutDebug() of every
                                    ///< block, only when asked for (memory)
};

class EmbeddingBackend {
public:
  /// Reads the vocabulary at Path (NotFound / Malformed naming the file).
  static Expected<std::unique_ptr<EmbeddingBackend>> load(const std::string &Path, Kind K);
  /// The file name of this version's vocabulary ("seedEmbeddingVocab.txt").
  static const char *fileName();
  static const char *embedderName();
  ~EmbeddingBackend();

  unsigned dimension() const;
  Weights weights() const;
  FunctionVectorsAll embed(const llvm::Function &F, bool WithInstructions) const;

private:
  struct State;
  explicit EmbeddingBackend(std::unique_ptr<State> S);
  std::unique_ptr<State> S;
};

} // namespace mlbridge::ir2vec

#endif // MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_EMBEDDINGBACKEND_H
