#include "mlbridge/stream_model_runner.h"

#include "transport/message_channel.h"

namespace mlbridge {

namespace {

/// Errors after which the byte stream can no longer be trusted.
bool breaksStream(ErrorCode C) {
  return C == ErrorCode::Timeout || C == ErrorCode::PeerClosed ||
         C == ErrorCode::IOError || C == ErrorCode::Malformed ||
         C == ErrorCode::TooLarge || C == ErrorCode::NotFound;
}

} // namespace

StreamModelRunner::StreamModelRunner(std::vector<TensorSpec> FeatureSpecs,
                                     std::optional<TensorSpec> Advice,
                                     const RunnerOptions &Options,
                                     SerDesKind Format,
                                     std::chrono::milliseconds ReplyTimeout,
                                     SerDesLimits Limits)
    : ModelRunner(std::move(FeatureSpecs), std::move(Advice), Options),
      ReplyTimeout(ReplyTimeout), Limits(Limits), Codec(createSerDes(Format)) {
  if (!Codec)
    setConstructionError(Status(
        ErrorCode::InvalidArgument,
        std::string("SerDes \"") + serdesKindName(Format) +
            "\" is not available in this program (protobuf: link "
            "MLBridge::grpc and call mlbridge::enableProtobufSerDes())"));
  else if (ReplyTimeout.count() <= 0)
    setConstructionError(
        Status(ErrorCode::InvalidArgument, "the reply timeout must be positive"));
}

StreamModelRunner::~StreamModelRunner() = default;

Status StreamModelRunner::connect() {
  if (Channel)
    return Status::ok();
  if (!constructionStatus().isOk())
    return constructionStatus();
  std::unique_ptr<MessageChannel> C;
  if (Status S = openChannel(C); !S.isOk()) {
    S.addContext("opening " + channelName());
    markUnavailable(S);
    return S;
  }
  Channel = std::move(C);
  NextIndex.clear();
  Context.clear();
  HeaderSent = false;
  return Status::ok();
}

void StreamModelRunner::disconnect() {
  PendingContexts.clear();
  Channel.reset();
  HeaderSent = false;
}

void StreamModelRunner::breakChannel(const Status &Reason) {
  markUnavailable(Reason);
  disconnect();
}

Status StreamModelRunner::doSwitchContext(std::string_view Name) {
  PendingContexts.emplace_back(Name);
  // LLVM's runner writes its header (and the context) before any
  // observation, so a session may consist of contexts only. Do the same
  // when the header is already known; otherwise the contexts go out with
  // the first observation.
  const TensorSpec *Spec = nullptr;
  if (!HeaderSent && !announcedState(HeaderViews, Spec).isOk())
    return Status::ok();
  if (Status S = connect(); !S.isOk())
    return S;
  Msg.clear();
  if (!HeaderSent)
    Codec->encodeHeader(HeaderViews, *Spec, /*ContinuesSession=*/false, Msg);
  for (const std::string &C : PendingContexts)
    Codec->encodeContext(C, Msg);
  Status S = Channel->write(Msg, Clock::now() + ReplyTimeout);
  Msg.clear();
  if (!S.isOk()) {
    S.addContext(channelName());
    breakChannel(S);
    return S;
  }
  if (!HeaderSent) {
    HeaderSent = true;
    LastAdviceSpec = *Spec;
    markFeaturesAnnounced();
  }
  Context = std::move(PendingContexts.back());
  PendingContexts.clear();
  return Status::ok();
}

Status StreamModelRunner::doEvaluate(
    const std::vector<const TensorValue *> &Features, bool FeaturesChanged,
    const TensorSpec &Spec, TensorValue &Out) {
  if (Status S = connect(); !S.isOk())
    return S;
  Msg.clear();
  const bool NeedHeader =
      !HeaderSent || FeaturesChanged || LastAdviceSpec != Spec;
  if (NeedHeader)
    Codec->encodeHeader(Features, Spec, /*ContinuesSession=*/HeaderSent, Msg);
  for (const std::string &C : PendingContexts)
    Codec->encodeContext(C, Msg);
  int64_t &Counter =
      NextIndex[PendingContexts.empty() ? Context : PendingContexts.back()];
  Status S = Codec->encodeObservation(Counter, Features, Msg);
  if (S.isOk()) {
    const Deadline Until = Clock::now() + ReplyTimeout;
    S = Channel->write(Msg, Until);
    if (S.isOk()) {
      // Sent: the model now knows the header, contexts and this index.
      HeaderSent = true;
      LastAdviceSpec = Spec;
      ++Counter;
      if (!PendingContexts.empty())
        Context = std::move(PendingContexts.back());
      PendingContexts.clear();
      Channel->setReadDeadline(Until);
      S = Codec->decodeAdvice(*Channel, Spec, Limits, Out);
      if (S.isOk())
        S = Channel->endReply();
    }
  }
  Msg.clear();
  if (!S.isOk()) {
    S.addContext(channelName());
    if (breaksStream(S.code()))
      breakChannel(S);
  }
  return S;
}

} // namespace mlbridge
