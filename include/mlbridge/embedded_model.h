//===- mlbridge/embedded_model.h - A model linked in ------------*- C++ -*-===//
//
// The one description of a model whose code is linked into the program,
// shared by both ways the build makes one:
//
//  * mlbridge-model-compiler (mlbridge_add_compiled_model) turns an ONNX
//    model into C++: `Foo::info()` (mlbridge/compiled_model.h), run by
//    CompiledModelRunner;
//  * mlbridge_add_tf_model has XLA compile a TensorFlow model:
//    `FooModel()` (mlbridge/tf_model_runner.h), run by TfModelRunner.
//
// The generated code fills one EmbeddedModel per model; there is no need
// to write one by hand. An instance (Create) owns the buffers of one
// evaluation: every input, every output and the scratch memory. A runner
// writes its features straight into the input buffers (they are the
// feature buffers), calls Run, and reads the outputs where Run left them;
// nothing is copied in. Instances of one model share its code and constant
// weights read-only, so threads with an instance each run in parallel
// without locks.
//
// This header needs nothing but the C++ standard library (dtype.h is
// header-only for what it uses), so generated code including it links into
// a compiler without a runtime library. The function pointers never throw.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_EMBEDDED_MODEL_H
#define MLBRIDGE_EMBEDDED_MODEL_H

#include "mlbridge/dtype.h"

#include <cstddef>
#include <cstdint>

namespace mlbridge {

/// Version of the EmbeddedModel layout; generated code records the version
/// it was generated for, and the runners refuse others (version 1 was 0.1's
/// CompiledModelInfo).
inline constexpr std::uint32_t kEmbeddedModelAbiVersion = 2;

/// One input or output: dense, row-major, fixed shape.
struct EmbeddedTensorInfo {
  const char *Name;          ///< input (feature) or output name
  DType Type;                ///< any dtype but String
  std::size_t Rank;          ///< 0 for a scalar
  const std::int64_t *Shape; ///< Rank dimensions, each >= 0
  std::size_t ElementCount;  ///< product of Shape (1 for a scalar)
};

struct EmbeddedModel {
  std::uint32_t AbiVersion; ///< kEmbeddedModelAbiVersion when generated
  /// How messages name the model: the generated class ("ns::Foo") for the
  /// model compiler, the CMake target for XLA.
  const char *Name;
  const char *SourceModel; ///< the ONNX file or SavedModel it came from
  const char *Producer;    ///< e.g. "pytorch 1.13.1", "tensorflow 2.19.0"
  std::int64_t Opset;      ///< ONNX default-domain opset; 0 for XLA
  /// The output the model names as advice (an ONNX model's
  /// "mlbridge.advice" metadata entry), or nullptr.
  const char *AdviceOutput;
  std::size_t NumInputs;
  const EmbeddedTensorInfo *Inputs;
  std::size_t NumOutputs;
  const EmbeddedTensorInfo *Outputs;

  /// A new instance with its own buffers; nullptr if memory is exhausted.
  void *(*Create)() noexcept;
  void (*Destroy)(void *Instance) noexcept;
  /// Input I's buffer in Instance (Inputs[I].ElementCount elements), which
  /// Run reads; it stays put for the instance's lifetime. nullptr if the
  /// compiled code has no such input of that size (generated files of
  /// different builds mixed).
  void *(*InputBuffer)(void *Instance, std::size_t I) noexcept;
  /// Runs the model on the input buffers; false if it failed.
  bool (*Run)(void *Instance) noexcept;
  /// Output I of the last successful Run, valid until the next Run;
  /// nullptr if the compiled code has no such output.
  const void *(*OutputBuffer)(const void *Instance, std::size_t I) noexcept;
};

} // namespace mlbridge

#endif // MLBRIDGE_EMBEDDED_MODEL_H
