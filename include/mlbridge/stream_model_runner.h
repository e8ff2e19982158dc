//===- mlbridge/stream_model_runner.h - A SerDes over a channel -*- C++ -*-===//
//
// StreamModelRunner is what every inter-process runner that speaks a SerDes
// has in common, whatever moves the bytes: it writes the session header
// (again when the features or the advice spec change), contexts and
// observations with the chosen SerDes, counts observations per context as
// LLVM does, and decodes the reply before the reply deadline. A subclass
// only opens its channel: PipeModelRunner (a FIFO pair) and ShmModelRunner
// (a shared-memory ring) are the two.
//
// The channel is opened on first use (evaluate or switchContext) or by
// connect(); an I/O or protocol error closes it and makes the runner
// unavailable (ModelRunner's contract). StreamOptions holds the settings
// every such runner has; PipeOptions and ShmOptions add their transport's.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_STREAM_MODEL_RUNNER_H
#define MLBRIDGE_STREAM_MODEL_RUNNER_H

#include "mlbridge/model_runner.h"
#include "mlbridge/serdes.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace mlbridge {

class MessageChannel; // a transport's end of the channel (internal)

/// The frame before every reply of a session whose header offered a
/// session id (docs/protocol.md §5.1): 24 bytes, little-endian u64s. C++
/// model hosts write it with encode().
struct ReplyFrame {
  static constexpr size_t Bytes = 24;
  uint64_t Session = 0; ///< the header's session id, echoed
  uint64_t Request = 0; ///< replies sent before this one in the session
  uint64_t Length = 0;  ///< bytes of the reply that follows

  void encode(char (&Out)[Bytes]) const;
  static ReplyFrame decode(const char (&In)[Bytes]);
};

/// The settings every stream runner has.
struct StreamOptions : RunnerOptions {
  SerDesKind Format = SerDesKind::Bitstream;
  /// Makes the SerDes when Format is SerDesKind::Protobuf, which the core
  /// library does not build in: set it to mlbridge::createProtobufSerDes
  /// (mlbridge/protobuf_serdes.h, link MLBridge::grpc). Unused otherwise.
  SerDesFactory ProtobufSerDes = nullptr;
  /// How long opening may wait for the model side to be there and take the
  /// channel (what that means is the transport's: PipeOptions, ShmOptions).
  std::chrono::milliseconds OpenTimeout{30000};
  /// How long one request may take: writing it and reading the whole reply.
  std::chrono::milliseconds ReplyTimeout{30000};
  /// How long a wait for a reply may poll before sleeping, if that
  /// measurably shortens the wait (docs/pipes.md, docs/shm.md); 0: never
  /// spin. Spinning costs CPU only while a reply is awaited.
  std::chrono::microseconds Spin{50};
  /// Limits applied to replies.
  SerDesLimits Limits;
};

class StreamModelRunner : public ModelRunner {
public:
  ~StreamModelRunner() override;

  /// Opens the channel now (otherwise done by the first request).
  Status connect();
  /// Closes the channel; the model sees the end of the session. The next
  /// request opens a new session (with a new header).
  void disconnect();

protected:
  /// Checks the shared options and that Endpoint (where the channel is
  /// opened, an EndpointKind) is given; the first invalid one is the
  /// construction error.
  StreamModelRunner(std::vector<TensorSpec> FeatureSpecs,
                    std::optional<TensorSpec> Advice,
                    const StreamOptions &Options, const std::string &Endpoint,
                    const char *EndpointKind);

  /// Opens the transport (bounded by the subclass's open timeout).
  virtual Expected<std::unique_ptr<MessageChannel>> openChannel() = 0;
  /// Names the channel in error messages, e.g. "pipe '/tmp/ch'".
  virtual std::string channelName() const = 0;
  /// True to offer a session id in each session's header and require
  /// framed replies (protocol §5.1): for transports where a late reply to
  /// an earlier session, or a second reply to an earlier request, could
  /// reach this one.
  virtual bool offersSessionIds() const { return false; }

private:
  Status doEvaluate(const std::vector<const TensorValue *> &Features,
                    bool FeaturesChanged, const TensorSpec &Spec,
                    TensorValue &Out) override;
  Status doSwitchContext(std::string_view Name) override;
  /// Drops the channel after an error that leaves the stream unusable.
  void breakChannel(const Status &Reason);
  /// Reads the reply to the request just sent (its frame checked, if any).
  Status readReply(const TensorSpec &Spec, TensorValue &Out);

  std::chrono::milliseconds ReplyTimeout;
  SerDesLimits Limits;
  std::unique_ptr<SerDes> Codec;
  std::unique_ptr<MessageChannel> Channel;
  uint64_t SessionId = 0; // 0: replies are not framed
  uint64_t Requests = 0;  // replies read in this session
  std::unordered_map<std::string, int64_t> NextIndex; // per context
  std::string Context;
  std::optional<TensorSpec> LastAdviceSpec; // advice spec in the last header
  bool HeaderSent = false;
  std::vector<std::string> PendingContexts; // sent with the next message
  std::vector<const TensorValue *> HeaderViews; // scratch
  WireMessage Msg;
};

} // namespace mlbridge

#endif // MLBRIDGE_STREAM_MODEL_RUNNER_H
