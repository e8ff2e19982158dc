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

#include <memory>
#include <string>
#include <vector>

#include <sys/uio.h>

namespace mlbridge {

class FifoChannel final : public MessageChannel {
public:
  /// Opens InPath for reading, then OutPath for writing (LLVM's order),
  /// waiting until Until for the FIFOs to exist and the peer to open its
  /// ends. With Create, missing FIFOs are made with mode 0600.
  static Expected<std::unique_ptr<FifoChannel>>
  open(const std::string &InPath, const std::string &OutPath, Deadline Until,
       bool Create);
  ~FifoChannel() override;

  /// Writes the whole message (one writev when the pipe has room).
  Status write(const WireMessage &Msg, Deadline Until) override;

  void setReadDeadline(Deadline Until) override { ReadDeadline = Until; }
  Status readExact(void *Dst, size_t N) override;
  Status readLine(std::string &Line, size_t MaxBytes) override;

  /// True if unread bytes are buffered (a reply arrived unasked).
  bool hasBufferedInput() const { return Begin != End; }

private:
  FifoChannel(int InFd, int OutFd, std::string InPath, std::string OutPath);
  /// Waits for and reads more bytes into the buffer.
  Status fill();

  int InFd;
  int OutFd;
  std::string InPath, OutPath;
  Deadline ReadDeadline;
  std::vector<char> Buffer;
  size_t Begin = 0, End = 0;
  std::vector<ByteRange> Ranges;   // scratch for write()
  std::vector<struct iovec> Iov; // scratch for write()
};

} // namespace mlbridge

#endif // MLBRIDGE_SRC_TRANSPORT_FIFO_CHANNEL_H
