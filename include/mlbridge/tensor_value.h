//===- mlbridge/tensor_value.h - A tensor's spec and bytes ------*- C++ -*-===//
//
// TensorValue holds one tensor: its spec (with a concrete shape) and its
// packed little-endian bytes. Feature buffers and advice buffers are
// TensorValues; they are reused across evaluations, so after the first call
// the hot path allocates nothing unless a shape grows. Normally it owns its
// bytes; a runner whose model reads its inputs from buffers of its own can
// make the feature values borrow those buffers (borrowing()), so features
// are written straight into the model's memory, as LLVM's MLModelRunner
// lets a runner supply its buffers.
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
  /// A value of Spec (a concrete shape) whose bytes are Buffer's
  /// Spec.byteSize() bytes, which the caller owns and keeps alive as long as
  /// the value borrows them. An operation that changes the byte size
  /// (reshape, reset, resizeBytes, assign of another size) turns it into an
  /// owning value with a copy of the bytes that fit; a copy of it owns its
  /// bytes.
  static TensorValue borrowing(TensorSpec Spec, void *Buffer) {
    TensorValue V;
    V.ExternalSize = Spec.byteSize();
    V.Spec = std::move(Spec);
    V.External = static_cast<unsigned char *>(Buffer);
    return V;
  }
  TensorValue(const TensorValue &O) : Spec(O.Spec) {
    Bytes.assign(O.bytes(), O.bytes() + O.byteSize());
  }
  TensorValue &operator=(const TensorValue &O) {
    if (this != &O) {
      Spec = O.Spec;
      External = nullptr;
      ExternalSize = 0;
      Bytes.assign(O.bytes(), O.bytes() + O.byteSize()); // keeps capacity
    }
    return *this;
  }
  TensorValue(TensorValue &&O) noexcept
      : Spec(std::move(O.Spec)), Bytes(std::move(O.Bytes)),
        External(O.External), ExternalSize(O.ExternalSize) {
    O.External = nullptr;
    O.ExternalSize = 0;
  }
  TensorValue &operator=(TensorValue &&O) noexcept {
    Spec = std::move(O.Spec);
    Bytes = std::move(O.Bytes);
    External = O.External;
    ExternalSize = O.ExternalSize;
    O.External = nullptr;
    O.ExternalSize = 0;
    return *this;
  }
  ~TensorValue() = default;

  /// True while the bytes are a buffer supplied through borrowing().
  bool isBorrowed() const { return External != nullptr; }

  /// The spec; its shape is the current concrete shape (dynamic dims are
  /// resolved once a value is set).
  const TensorSpec &spec() const { return Spec; }
  DType type() const { return Spec.type(); }
  size_t elementCount() const { return byteSize() / dtypeSize(Spec.type()); }
  size_t byteSize() const { return External ? ExternalSize : Bytes.size(); }

  const void *data() const { return bytes(); }
  void *data() { return External ? External : Bytes.data(); }

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
    return std::string_view(reinterpret_cast<const char *>(bytes()),
                            byteSize());
  }

  /// Sets shape and resizes the byte buffer (keeps capacity).
  void reshape(std::vector<int64_t> Shape) {
    Spec.setShape(std::move(Shape));
    resizeBytes(Spec.byteSize());
  }
  /// Replaces the whole spec and resizes (contents unspecified).
  void reset(TensorSpec NewSpec) {
    Spec = std::move(NewSpec);
    resizeBytes(Spec.isDynamic() ? 0 : Spec.byteSize());
  }
  /// Resizes to ByteCount bytes; for readers that learn sizes from the wire.
  void resizeBytes(size_t ByteCount) {
    if (External) {
      if (ByteCount == ExternalSize)
        return;
      stopBorrowing();
    }
    Bytes.resize(ByteCount);
  }
  void assign(const void *Src, size_t N) {
    resizeBytes(N);
    if (N)
      std::memcpy(data(), Src, N);
  }

private:
  const unsigned char *bytes() const {
    return External ? External : Bytes.data();
  }
  /// Becomes an owning value with a copy of the borrowed bytes.
  void stopBorrowing() {
    Bytes.assign(External, External + ExternalSize);
    External = nullptr;
    ExternalSize = 0;
  }

  TensorSpec Spec;
  std::vector<unsigned char> Bytes;
  unsigned char *External = nullptr; // borrowed bytes, or null
  size_t ExternalSize = 0;
};

} // namespace mlbridge

#endif // MLBRIDGE_TENSOR_VALUE_H
