//===- model_compiler.h - ONNX model -> C++ source ------------------------===//
//
// The library behind mlbridge-model-compiler: turns the bytes of an ONNX
// model into a C++17 header and source that implement it with the standard
// library only (see include/mlbridge/compiled_model.h for what the
// generated class exports, docs/compiled-model.md for the guide).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_MODEL_COMPILER_H
#define MLBRIDGE_MODEL_COMPILER_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mlbridge::modelc {

struct CompileOptions {
  /// Name of the generated class; a C++ identifier.
  std::string ClassName;
  /// Optional namespace of the class, e.g. "my::models".
  std::string Namespace;
  /// How the generated source includes the generated header ("policy.h").
  std::string HeaderInclude;
  /// Recorded in the generated code and info() (usually the file name).
  std::string SourceName = "model.onnx";
  /// Sizes for symbolic input dimensions ("batch" -> 1).
  std::map<std::string, int64_t> DimValues;
  /// Adds the no-workspace run() overload (workspace on the stack) when
  /// the workspace is at most this many bytes.
  size_t StackWorkspaceLimit = 64 * 1024;
};

struct CompileResult {
  bool Ok = false;
  /// Why generation failed; names the node for operator problems.
  std::string Error;
  std::string Header;
  std::string Source;
  /// A human-readable description (inputs, outputs, nodes, sizes).
  std::string Summary;
};

/// Compiles the serialized ONNX ModelProto in Bytes.
CompileResult compileOnnxModel(const std::string &Bytes,
                               const CompileOptions &Options);

/// The operators the compiler supports, sorted.
std::vector<std::string> supportedOperators();

} // namespace mlbridge::modelc

#endif // MLBRIDGE_MODEL_COMPILER_H
