//===- mlbridge/tensor_spec.h - Named, typed, shaped tensors ----*- C++ -*-===//
//
// A TensorSpec describes one feature or the advice: name, element type and
// shape. Scalars have shape [1]. A dimension of -1 is variable: its length is
// fixed only when a value is set (features) or received (advice).
//
// Specs serialize to LLVM's JSON form, byte for byte:
//   {"name":"callee_users","type":"int64_t","port":0,"shape":[1]}
//
// Beside `using namespace llvm;`. LLVM declares llvm::TensorSpec and
// llvm::Expected too, and C++ gives no using-directive priority over
// another: with `using namespace llvm;` and `using namespace mlbridge;`
// those two names (and only those: every other public mlbridge name is
// unique against LLVM's) are ambiguous wherever they are written
// unqualified. No trick inside these headers can change that (an inline
// namespace or a global using-declaration is found at the same level as
// LLVM's names), so the rule is the user's and our docs follow it:
//  * write `namespace mlb = mlbridge;` and `mlb::TensorSpec`, `mlb::...`
//    (as LLVM code writes `cl::`); or
//  * keep both using-directives and pin the two shared names inside the
//    file's own namespace, where a using-declaration hides both
//    directives' names:
//      using namespace llvm;
//      using namespace mlbridge;
//      namespace {
//      using mlbridge::Expected;   // LLVM's is llvm::Expected here
//      using mlbridge::TensorSpec; // LLVM's is llvm::TensorSpec here
//      ... the pass, with TensorSpec, Expected, makeRunner, ModelRunner ...
//      } // namespace
// tests/headers/llvm_names.cpp compiles exactly that against LLVM's
// headers.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_TENSOR_SPEC_H
#define MLBRIDGE_TENSOR_SPEC_H

#include "mlbridge/dtype.h"
#include "mlbridge/status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge {

/// Marks a variable dimension in a shape.
inline constexpr int64_t kDynamicDim = -1;

class TensorSpec {
public:
  TensorSpec() = default;
  TensorSpec(std::string Name, DType Type, std::vector<int64_t> Shape = {1},
             int Port = 0)
      : Name(std::move(Name)), Type(Type), Shape(std::move(Shape)),
        Port(Port) {}

  /// A spec for element type T: `TensorSpec::create<float>("x", {1, 33})`.
  template <typename T>
  static TensorSpec create(std::string Name, std::vector<int64_t> Shape = {1},
                           int Port = 0) {
    return TensorSpec(std::move(Name), DTypeOf<T>::value, std::move(Shape),
                      Port);
  }

  const std::string &name() const { return Name; }
  DType type() const { return Type; }
  const std::vector<int64_t> &shape() const { return Shape; }
  int port() const { return Port; }

  void setShape(std::vector<int64_t> NewShape) { Shape = std::move(NewShape); }

  /// True when some dimension is kDynamicDim.
  bool isDynamic() const;
  /// Product of the dimensions; 0 when the spec is dynamic.
  size_t elementCount() const;
  /// elementCount() * dtypeSize(type()).
  size_t byteSize() const { return elementCount() * dtypeSize(Type); }

  /// Checks the spec is usable: non-empty name, dims > 0 or kDynamicDim, and
  /// a total size below MaxBytes.
  Status validate(size_t MaxBytes) const;

  /// LLVM's compact JSON form (keys name, type, port, shape in that order).
  std::string toJson() const;
  /// Appends toJson() to Out without a temporary string.
  void appendJson(std::string &Out) const;
  /// Parses one spec in the JSON form above (key order free; "port"
  /// optional, default 0). Errors name the offending key.
  static Expected<TensorSpec> fromJson(std::string_view Json);

  bool operator==(const TensorSpec &O) const {
    return Name == O.Name && Type == O.Type && Shape == O.Shape &&
           Port == O.Port;
  }
  bool operator!=(const TensorSpec &O) const { return !(*this == O); }

  /// "float[1,33] features" style text for messages.
  std::string describe() const;

private:
  std::string Name;
  DType Type = DType::Float;
  std::vector<int64_t> Shape{1};
  int Port = 0;
};

} // namespace mlbridge

#endif // MLBRIDGE_TENSOR_SPEC_H
