//===- fifo_channel.h - A FIFO pair with deadlines (internal) -------------===//
//
// The compiler's end of a named-pipe channel: reads advice from "<B>.in",
// writes observations to "<B>.out". Both fds are non-blocking; every wait is
// a poll() bounded by the caller's deadline.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SRC_TRANSPORT_FIFO_CHANNEL_H
#define MLBRIDGE_SRC_TRANSPORT_FIFO_CHANNEL_H

#include "transport/message_channel.h"
#include "transport/spin_wait.h"

#include <memory>
#include <string>
#include <vector>

#include <sys/uio.h>

namespace mlbridge {

class FifoChannel final : public MessageChannel {
public:
  /// Opens InPath for reading, then OutPath for writing (LLVM's order),
  /// waiting until Until for the FIFOs to exist and the peer to open its
  /// ends. With Create, missing FIFOs are made with mode 0600. Refuses
  /// symbolic links, FIFOs of another user or that group or others may
  /// write, and a channel another compiler holds (InPath is locked while
  /// the channel is open). A read that finds the pipe empty polls it
  /// for up to Spin before sleeping, where that measurably pays
  /// (SpinBudget).
  static Expected<std::unique_ptr<MessageChannel>>
  open(const std::string &InPath, const std::string &OutPath, Deadline Until,
       bool Create, std::chrono::microseconds Spin = {});
  ~FifoChannel() override;

  /// Writes the whole message (one writev when the pipe has room).
  Status write(const WireMessage &Msg, Deadline Until) override;

  Status readExact(void *Dst, size_t N) override;
  Status readLine(std::string &Line, size_t MaxBytes) override;

  /// Bytes buffered after a decoded reply: a second reply.
  Status endReply() override;
  /// Bytes buffered or waiting in the pipe before a request: a reply
  /// nobody asked for.
  Status checkIdle() override;

private:
  FifoChannel(int InFd, int OutFd, std::string InPath, std::string OutPath,
              std::chrono::microseconds Spin);
  /// Waits for and reads more bytes into the buffer.
  Status fill();

  int InFd;
  int OutFd;
  std::string InPath, OutPath;
  SpinBudget Spinner;
  std::vector<char> Buffer;
  size_t Begin = 0, End = 0;
  std::vector<ByteRange> Ranges;   // scratch for write()
  std::vector<struct iovec> Iov; // scratch for write()
};

} // namespace mlbridge

#endif // MLBRIDGE_SRC_TRANSPORT_FIFO_CHANNEL_H
