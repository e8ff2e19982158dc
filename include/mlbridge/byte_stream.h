//===- mlbridge/byte_stream.h - Byte sources and gathered writes -*- C++ -*-===//
//
// The seam between a SerDes (what the bytes are) and a transport (how they
// move). Outgoing messages are gathered lists of byte ranges, so feature
// buffers reach the transport without a copy; incoming bytes are read from a
// ByteSource that enforces its own deadline and size limits.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_BYTE_STREAM_H
#define MLBRIDGE_BYTE_STREAM_H

#include "mlbridge/status.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge {

/// One contiguous run of bytes to write.
struct ByteRange {
  const void *Data;
  size_t Size;
};

/// An outgoing message built from owned text and borrowed byte ranges.
/// Borrowed ranges must stay valid until the message is written.
class WireMessage {
public:
  void clear() {
    Owned.clear();
    Segments.clear();
  }
  /// Copies Text into the message.
  void appendText(std::string_view Text);
  /// Appends one byte (copied).
  void appendChar(char C) { appendText(std::string_view(&C, 1)); }
  /// References [Data, Data+Size) without copying.
  void appendBorrowed(const void *Data, size_t Size);
  /// Direct access to the owned text buffer for formatters that append in
  /// place; call commitOwned() with the number of bytes appended.
  std::string &ownedBuffer() { return Owned; }
  void commitOwned(size_t StartOffset);

  /// Resolves the segments to pointers (valid until the next append).
  void ranges(std::vector<ByteRange> &Out) const;
  size_t totalSize() const;
  /// The whole message as one string (tests and small messages).
  std::string flatten() const;

private:
  struct Segment {
    bool IsOwned;
    size_t Offset; // into Owned, when IsOwned
    const void *Ptr;
    size_t Size;
  };
  std::string Owned;
  std::vector<Segment> Segments;
};

/// A stream of incoming bytes. Implementations bound every wait by a
/// deadline and report EOF as ErrorCode::PeerClosed.
class ByteSource {
public:
  virtual ~ByteSource();
  /// Reads exactly N bytes into Dst.
  virtual Status readExact(void *Dst, size_t N) = 0;
  /// Reads up to and including the next '\n'; Line receives the bytes
  /// without the '\n'. Fails with TooLarge past MaxBytes, before buffering
  /// more than MaxBytes.
  virtual Status readLine(std::string &Line, size_t MaxBytes) = 0;
};

/// A ByteSource over a fixed buffer (tests, decoding captured streams).
class MemoryByteSource final : public ByteSource {
public:
  explicit MemoryByteSource(std::string_view Bytes) : Bytes(Bytes) {}
  Status readExact(void *Dst, size_t N) override;
  Status readLine(std::string &Line, size_t MaxBytes) override;
  bool atEnd() const { return Pos == Bytes.size(); }
  size_t position() const { return Pos; }

private:
  std::string_view Bytes;
  size_t Pos = 0;
};

} // namespace mlbridge

#endif // MLBRIDGE_BYTE_STREAM_H
