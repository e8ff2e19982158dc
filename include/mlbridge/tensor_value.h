//===- mlbridge/tensor_value.h - A tensor's spec and bytes ------*- C++ -*-===//
//
// TensorValue owns one tensor: its spec (with a concrete shape) and its
// packed little-endian bytes. Feature buffers and advice buffers are
// TensorValues; they are reused across evaluations, so after the first call
// the hot path allocates nothing unless a shape grows.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_TENSOR_VALUE_H
#define MLBRIDGE_TENSOR_VALUE_H

#include "mlbridge/tensor_spec.h"

#include <cstring>
#include <string_view>
#include <vector>

namespace mlbridge {

class TensorValue {
public:
  TensorValue() = default;
  explicit TensorValue(TensorSpec Spec) : Spec(std::move(Spec)) {
    Bytes.resize(this->Spec.byteSize());
  }

  /// The spec; its shape is the current concrete shape (dynamic dims are
  /// resolved once a value is set).
  const TensorSpec &spec() const { return Spec; }
  DType type() const { return Spec.type(); }
  size_t elementCount() const { return Bytes.size() / dtypeSize(Spec.type()); }
  size_t byteSize() const { return Bytes.size(); }

  const void *data() const { return Bytes.data(); }
  void *data() { return Bytes.data(); }

  /// Typed view; nullptr when T is not this tensor's dtype.
  template <typename T> T *dataAs() {
    return DTypeOf<T>::value == Spec.type() ? reinterpret_cast<T *>(data())
                                             : nullptr;
  }
  template <typename T> const T *dataAs() const {
    return DTypeOf<T>::value == Spec.type()
               ? reinterpret_cast<const T *>(data())
               : nullptr;
  }

  /// String tensors: the UTF-8 bytes.
  std::string_view asString() const {
    return std::string_view(reinterpret_cast<const char *>(Bytes.data()),
                            Bytes.size());
  }

  /// Sets shape and resizes the byte buffer (keeps capacity).
  void reshape(std::vector<int64_t> Shape) {
    Spec.setShape(std::move(Shape));
    Bytes.resize(Spec.byteSize());
  }
  /// Replaces the whole spec and resizes (contents unspecified).
  void reset(TensorSpec NewSpec) {
    Spec = std::move(NewSpec);
    Bytes.resize(Spec.isDynamic() ? 0 : Spec.byteSize());
  }
  /// Resizes to ByteCount bytes; for readers that learn sizes from the wire.
  void resizeBytes(size_t ByteCount) { Bytes.resize(ByteCount); }
  void assign(const void *Src, size_t N) {
    Bytes.resize(N);
    if (N)
      std::memcpy(Bytes.data(), Src, N);
  }

private:
  TensorSpec Spec;
  std::vector<unsigned char> Bytes;
};

} // namespace mlbridge

#endif // MLBRIDGE_TENSOR_VALUE_H
