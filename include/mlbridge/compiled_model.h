//===- mlbridge/compiled_model.h - What a compiled model exports -*- C++ -*-===//
//
// mlbridge-model-compiler turns an ONNX model into a C++ class (a header and
// a source file). This header is the only one the generated code includes,
// and it needs nothing but the C++ standard library, so a generated model is
// self-contained: it links into a compiler without any runtime library.
//
// Every generated class `Foo` has
//
//   struct Foo::Workspace;                     // scratch for one call
//   static void Foo::run(<inputs...>, <outputs...>, Workspace &) noexcept;
//   static const mlbridge::CompiledModelInfo &Foo::info() noexcept;
//
// run() is a pure function of its inputs: it reads only its input arrays
// and constant weights and writes only its output arrays and the
// workspace. Any number of threads may call it at once, each with its own
// Workspace. info() describes the model for CompiledModelRunner (see
// mlbridge/compiled_model_runner.h), which puts it behind the ModelRunner
// feature API.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_COMPILED_MODEL_H
#define MLBRIDGE_COMPILED_MODEL_H

#include <cstddef>
#include <cstdint>

namespace mlbridge {

/// Version of the CompiledModelInfo layout; generated code records the
/// version it was generated for, and CompiledModelRunner refuses others.
inline constexpr std::uint32_t kCompiledModelAbiVersion = 1;

/// Element type of a compiled model's input or output. The values are
/// ONNX's TensorProto.DataType codes.
enum class CompiledElemType : std::int32_t {
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  Bool = 9, ///< One byte per element, 0 or 1 (C++ bool).
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
};

/// One input or output of a compiled model: dense, row-major, fixed shape.
struct CompiledTensorInfo {
  const char *Name;          ///< The ONNX value name.
  CompiledElemType Type;
  std::size_t Rank;          ///< 0 for a scalar.
  const std::int64_t *Shape; ///< Rank dimensions, each > 0.
  std::size_t ElementCount;  ///< Product of Shape (1 for a scalar).
};

/// A type-erased description of a generated model.
struct CompiledModelInfo {
  std::uint32_t AbiVersion; ///< kCompiledModelAbiVersion when generated.
  const char *ClassName;    ///< "Foo", or "ns::Foo" with a namespace.
  const char *SourceModel;  ///< File name of the ONNX model.
  const char *Producer;     ///< "pytorch 1.13.1", from the model.
  std::int64_t Opset;       ///< Default-domain opset of the model.
  /// The output the model names as advice in its "mlbridge.advice"
  /// metadata entry (as OnnxModelRunner reads it), or nullptr.
  const char *AdviceOutput;
  std::size_t NumInputs;
  const CompiledTensorInfo *Inputs;
  std::size_t NumOutputs;
  const CompiledTensorInfo *Outputs;
  std::size_t WorkspaceBytes; ///< sizeof(Workspace).
  /// Allocates a Workspace (nullptr if memory is exhausted); never throws.
  void *(*CreateWorkspace)() noexcept;
  void (*DestroyWorkspace)(void *Workspace) noexcept;
  /// run() with inputs and outputs as arrays of pointers, in model order.
  /// Outputs must not overlap inputs or each other.
  void (*Run)(const void *const *Inputs, void *const *Outputs,
              void *Workspace) noexcept;
};

} // namespace mlbridge

#endif // MLBRIDGE_COMPILED_MODEL_H
