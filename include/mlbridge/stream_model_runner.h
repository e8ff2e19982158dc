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
// unavailable (ModelRunner's contract).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_STREAM_MODEL_RUNNER_H
#define MLBRIDGE_STREAM_MODEL_RUNNER_H

#include "mlbridge/model_runner.h"
#include "mlbridge/serdes.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace mlbridge {

class MessageChannel; // a transport's end of the channel (internal)

class StreamModelRunner : public ModelRunner {
public:
  ~StreamModelRunner() override;

  /// Opens the channel now (otherwise done by the first request).
  Status connect();
  /// Closes the channel; the model sees the end of the session. The next
  /// request opens a new session (with a new header).
  void disconnect();

protected:
  StreamModelRunner(std::vector<TensorSpec> FeatureSpecs,
                    std::optional<TensorSpec> Advice,
                    const RunnerOptions &Options, SerDesKind Format,
                    std::chrono::milliseconds ReplyTimeout,
                    SerDesLimits Limits);

  /// Opens the transport (bounded by the subclass's open timeout).
  virtual Status openChannel(std::unique_ptr<MessageChannel> &Out) = 0;
  /// Names the channel in error messages, e.g. "pipe '/tmp/ch'".
  virtual std::string channelName() const = 0;

private:
  Status doEvaluate(const std::vector<const TensorValue *> &Features,
                    bool FeaturesChanged, const TensorSpec &Spec,
                    TensorValue &Out) override;
  Status doSwitchContext(std::string_view Name) override;
  /// Drops the channel after an error that leaves the stream unusable.
  void breakChannel(const Status &Reason);

  std::chrono::milliseconds ReplyTimeout;
  SerDesLimits Limits;
  std::unique_ptr<SerDes> Codec;
  std::unique_ptr<MessageChannel> Channel;
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
