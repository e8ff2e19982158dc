//===- shm_channel.h - A shared-memory ring pair with deadlines (internal) -===//
//
// The compiler's end of a shared-memory channel (docs/shm.md): the model
// listens on a Unix socket; connecting hands us a memory file holding two
// byte rings (requests to the model, replies from it) and two eventfds to
// wake the other side. Every write is one record in the ring, copied there
// once; the reader spins on the ring's head for a bounded time, then sleeps
// in poll() on its eventfd and the socket -- so a dead model (socket hang-up)
// is an error at once, and a missing one is an error at the deadline.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SRC_TRANSPORT_SHM_CHANNEL_H
#define MLBRIDGE_SRC_TRANSPORT_SHM_CHANNEL_H

#include "transport/message_channel.h"
#include "transport/spin_wait.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlbridge {

class ShmChannel final : public MessageChannel {
public:
  /// Connects to the model listening at SocketPath, waiting until Until for
  /// the socket to exist and the model to accept. Spin bounds each busy
  /// wait for a reply before sleeping (adapted to how quickly replies come).
  static Expected<std::unique_ptr<MessageChannel>>
  connect(const std::string &SocketPath, Deadline Until,
          std::chrono::microseconds Spin);
  ~ShmChannel() override;

  Status write(const WireMessage &Msg, Deadline Until) override;
  /// Reads within the current reply record (a reply never spans two).
  Status readExact(void *Dst, size_t N) override;
  Status readLine(std::string &Line, size_t MaxBytes) override;
  Status endReply() override;

  /// Bytes one message may have at most (the ring's capacity less framing).
  uint64_t maxMessageBytes() const { return Capacity - sizeof(uint64_t); }

private:
  struct Ring;
  ShmChannel(std::string Path, int Socket, int WakeModel, int WakeSelf,
             char *Region, size_t RegionBytes, uint64_t Capacity,
             std::chrono::microseconds Spin);
  /// Waits for the next reply record and makes it current.
  Status nextRecord();
  /// Waits until the model published bytes past Read in the reply ring.
  Status awaitReply();
  Status peerGone() const;

  std::string Path;
  int Socket, WakeModel, WakeSelf;
  char *Region;
  size_t RegionBytes;
  uint64_t Capacity;
  SpinBudget Spinner;
  // Reply ring: Read is the start of the current record (or of the next
  // one when none is current); [Pos, End) are its unread bytes.
  uint64_t Read = 0;
  bool InRecord = false;
  uint64_t RecordBytes = 0;
  const char *Pos = nullptr, *End = nullptr;
  std::vector<ByteRange> Ranges; // scratch for write()
};

} // namespace mlbridge

#endif // MLBRIDGE_SRC_TRANSPORT_SHM_CHANNEL_H
