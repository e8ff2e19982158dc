//===- core/byte_stream.cpp - Byte sources and gathered writes ------------===//

#include "mlbridge/byte_stream.h"

#include <cstring>

namespace mlbridge {

// ---- WireMessage -----------------------------------------------------------

// Owned segments store offsets, not pointers, because Owned may reallocate
// while the message is being built. Consecutive owned bytes share a segment
// so a typical message is few ranges (one writev entry per borrowed buffer).

void WireMessage::appendText(std::string_view Text) {
  if (Text.empty())
    return;
  const size_t Start = Owned.size();
  Owned.append(Text.data(), Text.size());
  commitOwned(Start);
}

void WireMessage::commitOwned(size_t StartOffset) {
  if (StartOffset >= Owned.size())
    return;
  const size_t Size = Owned.size() - StartOffset;
  if (!Segments.empty()) {
    Segment &Last = Segments.back();
    if (Last.IsOwned && Last.Offset + Last.Size == StartOffset) {
      Last.Size += Size;
      return;
    }
  }
  Segments.push_back(Segment{true, StartOffset, nullptr, Size});
}

void WireMessage::appendBorrowed(const void *Data, size_t Size) {
  if (Size == 0)
    return;
  Segments.push_back(Segment{false, 0, Data, Size});
}

void WireMessage::ranges(std::vector<ByteRange> &Out) const {
  Out.clear();
  Out.reserve(Segments.size());
  for (const Segment &S : Segments)
    Out.push_back(ByteRange{S.IsOwned ? Owned.data() + S.Offset : S.Ptr, S.Size});
}

size_t WireMessage::totalSize() const {
  size_t N = 0;
  for (const Segment &S : Segments)
    N += S.Size;
  return N;
}

std::string WireMessage::flatten() const {
  std::string Out;
  Out.reserve(totalSize());
  for (const Segment &S : Segments) {
    const char *P = S.IsOwned ? Owned.data() + S.Offset
                              : static_cast<const char *>(S.Ptr);
    Out.append(P, S.Size);
  }
  return Out;
}

// ---- ByteSource ------------------------------------------------------------

ByteSource::~ByteSource() = default;

Status MemoryByteSource::readExact(void *Dst, size_t N) {
  const size_t Have = Bytes.size() - Pos;
  if (N > Have)
    return Status(ErrorCode::PeerClosed,
                  "unexpected end of stream: needed " + std::to_string(N) +
                      " bytes, have " + std::to_string(Have));
  if (N)
    std::memcpy(Dst, Bytes.data() + Pos, N);
  Pos += N;
  return Status::ok();
}

Status MemoryByteSource::readLine(std::string &Line, size_t MaxBytes) {
  const size_t Have = Bytes.size() - Pos;
  // Look at most one byte past the limit: enough to tell "too long".
  const size_t Scan = Have <= MaxBytes ? Have : MaxBytes + 1;
  const char *Start = Bytes.data() + Pos;
  const void *NL = Scan ? std::memchr(Start, '\n', Scan) : nullptr;
  if (!NL) {
    if (Have > MaxBytes)
      return Status(ErrorCode::TooLarge,
                    "line longer than the limit of " +
                        std::to_string(MaxBytes) + " bytes");
    if (Have == 0)
      return Status(ErrorCode::PeerClosed, "end of stream");
    return Status(ErrorCode::PeerClosed,
                  "unexpected end of stream: " + std::to_string(Have) +
                      " bytes without a terminating newline");
  }
  const size_t Len = size_t(static_cast<const char *>(NL) - Start);
  Line.assign(Start, Len);
  Pos += Len + 1;
  return Status::ok();
}

} // namespace mlbridge
