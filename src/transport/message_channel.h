//===- message_channel.h - What a SerDes session needs from a transport ---===//
//
// The compiler's end of a byte channel to a model: whole messages out (a
// gathered WireMessage, written before a deadline), a ByteSource in (the
// reply, read before the deadline set for it). FIFO pairs and the
// shared-memory ring implement it; StreamModelRunner speaks any SerDes over
// any of them.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SRC_TRANSPORT_MESSAGE_CHANNEL_H
#define MLBRIDGE_SRC_TRANSPORT_MESSAGE_CHANNEL_H

#include "mlbridge/byte_stream.h"
#include "mlbridge/status.h"
#include "transport/deadline.h"

namespace mlbridge {

class MessageChannel : public ByteSource {
public:
  /// Writes the whole message, or fails by Until.
  virtual Status write(const WireMessage &Msg, Deadline Until) = 0;
  /// Deadline for the following reads.
  void setReadDeadline(Deadline Until) { ReadDeadline = Until; }
  /// Called after a reply was decoded. Transports that frame messages
  /// report a reply with bytes the decoder did not consume.
  virtual Status endReply() { return Status::ok(); }
  /// Called before a request is sent, when replies carry no session frame:
  /// a transport that can see input nobody asked for (a second reply to
  /// the previous request) reports it.
  virtual Status checkIdle() { return Status::ok(); }

protected:
  Deadline ReadDeadline;
};

} // namespace mlbridge

#endif // MLBRIDGE_SRC_TRANSPORT_MESSAGE_CHANNEL_H
