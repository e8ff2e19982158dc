//===- Vocabulary.h - IR2Vec seed vocabulary (no LLVM) ----------*- C++ -*-===//
//
// IR2Vec's seed vocabulary as it publishes it (seedEmbeddingVocab.txt, one
// "name:[v1, v2, ...]," per line; scripts/deps/ir2vec.sh installs it): entity
// name -> vector. Pure C++ (no LLVM), shared by both plugins' output and the
// LLVM 19 embedder; loading errors are values naming the file, the line and
// what is wrong.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_VOCABULARY_H
#define MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_VOCABULARY_H

#include "mlbridge/status.h"
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge::ir2vec {

using Vector = std::vector<double>;

class Vocabulary {
public:
  /// Reads Path. NotFound when it cannot be opened, Malformed for a line
  /// that is not "name:[numbers]" (with an optional trailing ','), a value
  /// that is not finite (inf, nan, or out of a double's range), a
  /// dimension different from the first line's, a name seen twice, or no
  /// entry at all.
  static Expected<Vocabulary> load(const std::string &Path);
  /// The same from text in memory; Name is the file named in messages.
  static Expected<Vocabulary> parse(std::string_view Text, const std::string &Name);

  unsigned dimension() const { return Dim; }
  size_t size() const { return Entries.size(); }
  /// The vector of an entity, or nullptr when the vocabulary lacks it.
  const Vector *find(std::string_view Name) const;

private:
  std::map<std::string, Vector, std::less<>> Entries;
  unsigned Dim = 0;
};

/// Whether every value of V is finite (JSON has no inf or nan).
bool allFinite(const Vector &V);

/// Appends V as a JSON array of numbers, each the shortest text that reads
/// back as the same double (locale-independent); V must be allFinite.
void appendJsonVector(std::string &Out, const Vector &V);

} // namespace mlbridge::ir2vec

#endif // MLBRIDGE_INTEGRATIONS_LLVM_IR2VEC_VOCABULARY_H
