//===- EmbeddingsJson.h - The plugins' output file --------------*- C++ -*-===//
//
// What both MLBridgeIR2Vec plugins (ours on LLVM 19, LLVM's own embedder on
// LLVM 22) write to -mlbridge-ir2vec-out, so one reader
// (python/mlbridge/ir2vec.py) takes either:
//   {"format": "mlbridge-ir2vec-1", "llvm": "19.1.7", "embedder": "mlbridge",
//    "kind": "symbolic", "dimension": 300, "weights": [1, 0.5, 0.2],
//    "module": [...],
//    "functions": [{"name": "main", "vector": [...], "blocks": [[...], ...]}]}
// Functions are the module's definitions in module order; "blocks" (every
// block of the function in its order) only with -mlbridge-ir2vec-blocks,
// "instructions" (every instruction the blocks sum, in function order: no
// debug intrinsics or pseudo probes) only with -mlbridge-ir2vec-instructions.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_EMBEDDINGSJSON_H
#define MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_EMBEDDINGSJSON_H

#include "Vocabulary.h"
#include "mlbridge/status.h"
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge::ir2vec {

/// IR2Vec's two kinds of embeddings (Embedder.h says how they differ).
enum class Kind { Symbolic, FlowAware };
const char *kindName(Kind K); ///< "symbolic", "flow-aware"
std::optional<Kind> parseKind(std::string_view S);

/// IR2Vec's published weights, LLVM 22's defaults (-ir2vec-opc-weight,
/// -ir2vec-type-weight, -ir2vec-arg-weight).
struct Weights {
  float Opcode = 1.0f;
  float Type = 0.5f;
  float Operand = 0.2f;
};

struct FunctionVectors {
  std::string Name;
  Vector Function;
  std::vector<Vector> Blocks;       ///< empty unless blocks were asked for
  std::vector<Vector> Instructions; ///< empty unless instructions were asked for
};

struct EmbeddingsReport {
  std::string LLVMVersion;
  std::string Embedder; ///< "mlbridge" (LLVM 19) or "llvm" (LLVM 22)
  ir2vec::Kind Kind = Kind::Symbolic;
  unsigned Dimension = 0;
  float Weights[3] = {1.0f, 0.5f, 0.2f}; ///< opcode, type, operand
  Vector Module;
  std::vector<FunctionVectors> Functions;
  bool WithBlocks = false;
  bool WithInstructions = false;

  /// Appends a function and adds its vector to the module's (Module must
  /// have the dimension already).
  void addFunction(FunctionVectors F);
};

/// The file's text; R's numbers must be finite (writeReport checks).
std::string toJson(const EmbeddingsReport &R);

/// Writes the report to Path (replaced atomically: a reader never sees half
/// a file). Errors name the file; a report holding inf or nan (JSON has
/// neither) is refused (Malformed, naming the vector) and nothing is written.
Status writeReport(const EmbeddingsReport &R, const std::string &Path);

} // namespace mlbridge::ir2vec

#endif // MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_EMBEDDINGSJSON_H
