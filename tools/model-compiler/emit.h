//===- emit.h - Code emission helpers for operator implementations -------===//
#ifndef MLBRIDGE_MODELC_EMIT_H
#define MLBRIDGE_MODELC_EMIT_H

#include "graph.h"

#include <set>
#include <string>
#include <vector>

namespace mlbridge::modelc {

/// Where a value lives while run() executes.
struct Storage {
  enum Kind { None, Input, Output, Constant, Workspace } K = None;
  int Index = 0;       ///< input/output index, or constant array number
  int64_t Offset = 0;  ///< element offset in the workspace arena
};

class EmitContext {
public:
  explicit EmitContext(Graph &G) : G(G) {}

  Graph &G;
  std::vector<Storage> Where;      ///< per value (views resolved)
  std::vector<std::string> ConstNames; ///< per value index: array name
  std::string Body;                ///< statements of run()
  std::set<std::string> Kernels;   ///< helper templates to emit
  std::set<int> UsedInputs;        ///< inputs some code reads
  int NextConst = 0;

  /// Typed pointer expression to value V's first element (marks constants
  /// and inputs as used).
  std::string ptr(int V);
  /// C++ element type of value V.
  std::string ctype(int V) const { return etCType(G.Values[V].Type); }
  /// Appends one line of code to the body (two-space indent is added).
  void line(const std::string &S) { Body += "  " + S + "\n"; }
  void useKernel(const std::string &Name) { Kernels.insert(Name); }
  /// Adds a constant array made at generation time (a transposed weight)
  /// and returns its value index.
  int constant(const std::string &Hint, ET Type, Shape Dims,
               std::vector<unsigned char> Data);
  /// Literal of element type T for a value held as double.
  static std::string literal(ET T, double V);
  /// Exact literal of element I of constant V.
  static std::string literalOf(const Value &V, size_t I);
  /// Decimal size_t literal.
  static std::string num(int64_t V) { return std::to_string(V); }
};

/// The text of a helper template ("gemm", "softmax", ...).
std::string kernelSource(const std::string &Name);

/// Escapes text for a C++ // comment (no backslashes, control characters).
std::string commentText(const std::string &S);
/// A C++ string literal for S (quotes included).
std::string stringLiteral(const std::string &S);

} // namespace mlbridge::modelc

#endif // MLBRIDGE_MODELC_EMIT_H
