//===- shm_layout.h - The shared-memory channel's layout, defined once ----===//
//
// docs/shm.md §2: a 4 KiB control block, then the request ring (compiler ->
// model), then the reply ring (model -> compiler), each of Capacity bytes.
// Every control word sits on its own cache line. A ring holds records: a
// little-endian u64 length, the bytes, padding to 8; a writer that does not
// fit before the ring's end writes kWrapMarker as the length and starts at
// the ring's start.
//
// The one definition: ShmChannel (the C++ compiler side) and the native
// model-side module (src/python_ext/shm_ring_module.cpp) include this file,
// and a test checks python/mlbridge's constants against it. Keep every
// constant a one-line `constexpr std::<type> kName = <decimal or 0x hex>;`
// that test can read.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SRC_TRANSPORT_SHM_LAYOUT_H
#define MLBRIDGE_SRC_TRANSPORT_SHM_LAYOUT_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mlbridge::shm_layout {

// The hello datagram the model sends with its three descriptors (memory
// file, the model's eventfd, the compiler's eventfd): magic u64, version
// u32, flags u32, capacity u64.
constexpr std::uint64_t kMagic = 0x31304D4853424C4D; // "MLBSHM01"
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHelloBytes = 24;

// Byte offsets into the control block. The first three words repeat the
// hello (magic, version, capacity).
constexpr std::size_t kControlBytes = 4096;
constexpr std::size_t kMagicOffset = 0;
constexpr std::size_t kVersionOffset = 8;
constexpr std::size_t kCapacityOffset = 16;
constexpr std::size_t kRequestHead = 64;
constexpr std::size_t kRequestTail = 128;
constexpr std::size_t kReplyHead = 192;
constexpr std::size_t kReplyTail = 256;
// Set by a side while it sleeps (or is about to) on its eventfd; the other
// side writes the eventfd only then.
constexpr std::size_t kModelSleeping = 320;
constexpr std::size_t kCompilerSleeping = 384;

// Rings: capacities are multiples of 8 within these bounds.
constexpr std::uint64_t kMinCapacity = 4096;
constexpr std::uint64_t kMaxCapacity = 0x10000000000; // 1 TiB
constexpr std::size_t kLengthBytes = 8;
constexpr std::uint64_t kWrapMarker = 0xFFFFFFFFFFFFFFFF;

inline std::uint64_t padTo8(std::uint64_t N) {
  return (N + 7) & ~std::uint64_t(7);
}

/// What a ring's reader finds at its position.
struct RingRecord {
  enum class Kind { Record, Empty, Corrupt } State;
  /// Record: its ring position (past a wrap marker). Empty: where to wait
  /// for the next one (past a published wrap marker).
  std::uint64_t Start = 0;
  std::uint64_t Length = 0; ///< its payload bytes
  const char *Problem = ""; ///< for Corrupt: what is wrong
};

/// The record at ring position Read of Ring (Capacity bytes) when the writer
/// has published up to Head. Every index is checked before it is used: a
/// corrupt head or length is reported, never followed (a reader that
/// followed wrap markers under a corrupt head would walk the ring for
/// hours). Empty: nothing published past Read, or only a wrap marker.
inline RingRecord findRecord(const unsigned char *Ring, std::uint64_t Capacity,
                             std::uint64_t Read, std::uint64_t Head) {
  using Kind = RingRecord::Kind;
  std::uint64_t Avail = Head - Read;
  if (Avail == 0)
    return {Kind::Empty, Read};
  if (Avail > Capacity)
    return {Kind::Corrupt, 0, 0,
            "the writer's head is more than the ring's capacity ahead of the "
            "reader"};
  std::uint64_t Offset = Read % Capacity;
  if (Offset % 8 != 0)
    return {Kind::Corrupt, 0, 0, "the reader's position is not 8-aligned"};
  std::uint64_t Length;
  std::memcpy(&Length, Ring + Offset, sizeof Length);
  if (Length == kWrapMarker) {
    const std::uint64_t Skip = Capacity - Offset;
    if (Offset == 0)
      return {Kind::Corrupt, 0, 0, "a wrap marker at the ring's start"};
    if (Avail < Skip)
      return {Kind::Corrupt, 0, 0,
              "a wrap marker the writer's head has not passed"};
    if (Avail == Skip)
      return {Kind::Empty, Head};
    Read += Skip;
    Avail -= Skip;
    Offset = 0;
    std::memcpy(&Length, Ring, sizeof Length);
  }
  if (Length > Capacity - Offset - kLengthBytes)
    return {Kind::Corrupt, 0, 0, "a record length past the ring's end"};
  if (kLengthBytes + padTo8(Length) > Avail)
    return {Kind::Corrupt, 0, 0,
            "a record longer than what the writer published"};
  return {Kind::Record, Read, Length};
}

} // namespace mlbridge::shm_layout

#endif // MLBRIDGE_SRC_TRANSPORT_SHM_LAYOUT_H
