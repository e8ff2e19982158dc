//===- PluginEmbeddings.h - IR2Vec vectors as plugin features ---*- C++ -*-===//
//
// IR2Vec embeddings for any MLBridge LLVM plugin, the same API on LLVM 19
// and LLVM 22 (docs/ir2vec.md, "From a plugin"):
//   LLVM 19  our embedder (Embedder.h) on IR2Vec's seedEmbeddingVocab.txt
//   LLVM 22  LLVM's own ir2vec::Embedder on an ir2vec::Vocabulary built from
//            seedEmbeddingVocab.json with LLVM's keys and weights
// Link `mlbridge_ir2vec` (LLVM 19) or `mlbridge_ir2vec22` (LLVM 22); both
// are static, position independent, built with the plugins' flags (the
// plugin brings its libLLVM). Installed (component llvm19 / llvm22) they
// are MLBridge::ir2vec19 / MLBridge::ir2vec22, this header
// <mlbridge/llvm/ir2vec/PluginEmbeddings.h>, the vocabulary in
// <prefix>/share/mlbridge/ir2vec. The version-specific code is
// EmbeddingBackend19.cpp and llvm22/EmbeddingBackend22.cpp, nothing else.
//
// Contract:
//  * create() finds the vocabulary without any environment variable in a
//    built tree: Options.VocabularyPath if not empty (a plugin's own option),
//    else $MLBRIDGE_IR2VEC_VOCAB_DIR/<vocabularyFileName()>, else
//    defaultVocabularyDir(): in a build tree the directory the build
//    recorded (MLBRIDGE_IR2VEC_VOCAB_DIR at configure time, default
//    <repo>/.deps/ir2vec); for a plugin built against the installed kit,
//    the installed vocabulary (find_package finds where the kit is and
//    compiles that path into the plugin: no installed file holds one). A missing or malformed file is an error value
//    (NotFound / Malformed, naming the file and saying how to install it):
//    fall back to your count features and warn once.
//  * Vectors are std::vector<double> of dimension() (300). Function, block
//    and instruction vectors are computed once per function and cached; the
//    references stay valid until that function is invalidated. A pass that
//    changes a function, or deletes it, must call invalidate(F) (or
//    invalidateAll()) before asking again: the cache is keyed by address.
//  * instruction(I) is I's vector as its block sums it (flow-aware: after
//    the function's walk); instructions the blocks skip (debug intrinsics,
//    pseudo probes) have a zero vector. A declaration's vector is zero.
//  * module(M) is the sum over M's function definitions (from the cache).
//  * Single-threaded, like the pass that owns it; no output, no exit.
//
// Usage (a plugin's pass):
//
//   #include "PluginEmbeddings.h"
//   using namespace mlbridge::ir2vec;
//   static llvm::cl::opt<std::string> Vocab("my-pass-ir2vec-vocab");
//
//   auto E = PluginEmbeddings::create({Vocab, Kind::Symbolic});
//   if (!E) {  // e.g. not-found: IR2Vec vocabulary '...' cannot be opened
//     diagnose(Ctx, "my-pass", DS_Warning, E.status().toString() +
//                                         "; using the count features");
//     ...                                 // and keep going without vectors
//   }
//   const Vector &F = (*E)->function(Fn);          // 300 doubles
//   const Vector &B = (*E)->block(BB);
//   const Vector &I = (*E)->instruction(*Call);    // e.g. a call site
//   Vector Node = (*E)->sumOfInstructions(NodeInstrs); // any instruction set
//   Vector L = (*E)->loop(Loop);                   // the sum of its blocks
//   Vector M = (*E)->module(Mod);
//   (*E)->invalidate(Fn);                          // after changing Fn
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_PLUGINEMBEDDINGS_H
#define MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_PLUGINEMBEDDINGS_H

#include "EmbeddingsJson.h"
#include "Vocabulary.h"
#include "mlbridge/status.h"
#include <memory>
#include <string>

namespace llvm {
class BasicBlock;
class Function;
class Instruction;
class Loop;
class Module;
} // namespace llvm

namespace mlbridge::ir2vec {

/// "seedEmbeddingVocab.txt" on LLVM 19, "seedEmbeddingVocab.json" on 22.
const char *vocabularyFileName();

/// Where the vocabulary is when neither a path nor the environment says:
/// defined by a source file the build (or the installed kit's CMake
/// package) compiles into each plugin that links the library.
const char *defaultVocabularyDir();

/// The vocabulary create() would read for Path (see the contract above).
std::string resolveVocabularyPath(const std::string &Path);

struct EmbeddingOptions {
  std::string VocabularyPath; ///< empty: $MLBRIDGE_IR2VEC_VOCAB_DIR, then the build's
  ir2vec::Kind Kind = Kind::Symbolic;
};

class EmbeddingBackend; // per LLVM version

class PluginEmbeddings {
public:
  static Expected<std::unique_ptr<PluginEmbeddings>> create(const EmbeddingOptions &O = {});
  ~PluginEmbeddings();
  PluginEmbeddings(const PluginEmbeddings &) = delete;
  PluginEmbeddings &operator=(const PluginEmbeddings &) = delete;

  unsigned dimension() const;
  ir2vec::Kind kind() const { return TheKind; }
  const std::string &vocabularyPath() const { return Path; }
  /// "mlbridge" (our embedder, LLVM 19) or "llvm" (LLVM 22's).
  const char *embedderName() const;
  /// The weights the vectors were computed with (opcode, type, operand).
  Weights weights() const;

  const Vector &function(const llvm::Function &F);
  const Vector &block(const llvm::BasicBlock &BB);
  const Vector &instruction(const llvm::Instruction &I);
  /// The sum of the vectors of a range of `const llvm::Instruction *` (or
  /// `llvm::Instruction *`), e.g. a node of a loop's dependence graph.
  template <typename Range> Vector sumOfInstructions(const Range &Insts) {
    Vector Out(dimension(), 0.0);
    for (const llvm::Instruction *I : Insts)
      addTo(Out, instruction(*I));
    return Out;
  }
  /// The sum of the vectors of L's blocks (its subloops' included).
  Vector loop(const llvm::Loop &L);
  Vector module(const llvm::Module &M);

  /// Forget F's vectors (call after changing or before deleting F).
  void invalidate(const llvm::Function &F);
  void invalidateAll();
  /// How many functions have cached vectors.
  size_t cachedFunctions() const;

private:
  struct Cache;
  PluginEmbeddings(std::unique_ptr<EmbeddingBackend> B, std::string Path, ir2vec::Kind K);
  static void addTo(Vector &Acc, const Vector &V);

  std::unique_ptr<EmbeddingBackend> Backend;
  std::unique_ptr<Cache> TheCache;
  std::string Path;
  ir2vec::Kind TheKind;
};

} // namespace mlbridge::ir2vec

#endif // MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_PLUGINEMBEDDINGS_H
