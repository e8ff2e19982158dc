#include "mlbridge/stream_model_runner.h"

#include "core/unavailability.h"
#include "transport/message_channel.h"

#include <cstring>
#include <random>

#include <sys/random.h>

namespace mlbridge {

namespace {

/// A random non-zero id, different for every session of every process.
uint64_t newSessionId() {
  uint64_t Id = 0;
  while (Id == 0)
    if (::getrandom(&Id, sizeof Id, 0) != static_cast<ssize_t>(sizeof Id))
      Id = uint64_t(std::random_device()()) << 32 ^ std::random_device()();
  return Id;
}

/// Counts the bytes read through it, so a reply can be checked against
/// the length its frame announced.
class CountingSource final : public ByteSource {
public:
  explicit CountingSource(ByteSource &In) : In(In) {}
  Status readExact(void *Dst, size_t N) override {
    Count += N;
    return In.readExact(Dst, N);
  }
  Status readLine(std::string &Line, size_t MaxBytes) override {
    Status S = In.readLine(Line, MaxBytes);
    Count += Line.size() + 1;
    return S;
  }
  uint64_t Count = 0;

private:
  ByteSource &In;
};

/// Reads and drops N bytes.
Status discard(ByteSource &In, uint64_t N) {
  char Scratch[4096];
  while (N) {
    const size_t Take = static_cast<size_t>(std::min<uint64_t>(N, sizeof Scratch));
    if (Status S = In.readExact(Scratch, Take); !S.isOk())
      return S;
    N -= Take;
  }
  return Status::ok();
}

/// Bitstream and Json are built in; Protobuf comes with the options.
std::unique_ptr<SerDes> makeCodec(const StreamOptions &Options) {
  if (Options.Format != SerDesKind::Protobuf)
    return createSerDes(Options.Format);
  return Options.ProtobufSerDes ? Options.ProtobufSerDes() : nullptr;
}

} // namespace

void ReplyFrame::encode(char (&Out)[Bytes]) const {
  std::memcpy(Out, &Session, 8);
  std::memcpy(Out + 8, &Request, 8);
  std::memcpy(Out + 16, &Length, 8);
}

ReplyFrame ReplyFrame::decode(const char (&In)[Bytes]) {
  ReplyFrame F;
  std::memcpy(&F.Session, In, 8);
  std::memcpy(&F.Request, In + 8, 8);
  std::memcpy(&F.Length, In + 16, 8);
  return F;
}

StreamModelRunner::StreamModelRunner(std::vector<TensorSpec> FeatureSpecs,
                                     std::optional<TensorSpec> Advice,
                                     const StreamOptions &Options,
                                     const std::string &Endpoint,
                                     const char *EndpointKind)
    : ModelRunner(std::move(FeatureSpecs), std::move(Advice), Options),
      ReplyTimeout(Options.ReplyTimeout), Limits(Options.Limits),
      Codec(makeCodec(Options)) {
  detectConcurrentUse(); // free next to a round trip
  if (Endpoint.empty())
    setConstructionError(Status(ErrorCode::InvalidArgument,
                                std::string("empty ") + EndpointKind));
  else if (!Codec)
    setConstructionError(Status(
        ErrorCode::InvalidArgument,
        Options.Format == SerDesKind::Protobuf
            ? "SerDes \"protobuf\" needs the options' ProtobufSerDes: set it "
              "to mlbridge::createProtobufSerDes (mlbridge/protobuf_serdes.h, "
              "link MLBridge::grpc)"
            : "unknown SerDes kind"));
  else if (Codec->kind() != Options.Format)
    setConstructionError(Status(
        ErrorCode::InvalidArgument,
        std::string("the options' ProtobufSerDes made a \"") +
            serdesKindName(Codec->kind()) + "\" SerDes, not a \"protobuf\" one"));
  else if (Options.OpenTimeout.count() <= 0)
    setConstructionError(
        Status(ErrorCode::InvalidArgument, "the open timeout must be positive"));
  else if (ReplyTimeout.count() <= 0)
    setConstructionError(
        Status(ErrorCode::InvalidArgument, "the reply timeout must be positive"));
  else if (Options.Spin.count() < 0)
    setConstructionError(
        Status(ErrorCode::InvalidArgument, "the spin time must not be negative"));
}

StreamModelRunner::~StreamModelRunner() = default;

Status StreamModelRunner::connect() {
  if (Channel)
    return Status::ok();
  if (!constructionStatus().isOk())
    return constructionStatus();
  Expected<std::unique_ptr<MessageChannel>> C = openChannel();
  if (!C) {
    Status S = C.takeStatus();
    S.addContext("opening " + channelName());
    markUnavailable(S);
    return S;
  }
  Channel = std::move(*C);
  SessionId = offersSessionIds() ? newSessionId() : 0;
  Requests = 0;
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
    Codec->encodeHeader(HeaderViews, *Spec, /*ContinuesSession=*/false,
                        SessionId, Msg);
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
    Codec->encodeHeader(Features, Spec, /*ContinuesSession=*/HeaderSent,
                        SessionId, Msg);
  for (const std::string &C : PendingContexts)
    Codec->encodeContext(C, Msg);
  int64_t &Counter =
      NextIndex[PendingContexts.empty() ? Context : PendingContexts.back()];
  Status S = Codec->encodeObservation(Counter, Features, Msg);
  // Without reply frames, input before the request can only be a second
  // reply to the previous one: it must not answer this request.
  if (S.isOk() && !SessionId)
    S = Channel->checkIdle();
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
      S = readReply(Spec, Out);
    }
  }
  Msg.clear();
  if (!S.isOk()) {
    S.addContext(channelName());
    if (remote::makesUnavailable(S.code(), remote::Failure::Exchange,
                                 remote::Framing::ByteStream))
      breakChannel(S);
  }
  return S;
}

Status StreamModelRunner::readReply(const TensorSpec &Spec, TensorValue &Out) {
  if (!SessionId) {
    Status S = Codec->decodeAdvice(*Channel, Spec, Limits, Out);
    return S.isOk() ? Channel->endReply() : S;
  }
  for (;;) {
    char Raw[ReplyFrame::Bytes];
    if (Status S = Channel->readExact(Raw, sizeof Raw); !S.isOk())
      return S;
    const ReplyFrame Frame = ReplyFrame::decode(Raw);
    if (Frame.Length > Limits.MaxMessageBytes + 8) // + a dynamic count
      return Status(ErrorCode::TooLarge,
                    "a reply of " + std::to_string(Frame.Length) +
                        " bytes exceeds the limit of " +
                        std::to_string(Limits.MaxMessageBytes));
    if (Frame.Session != SessionId) {
      // A late answer to an earlier session on this channel (its compiler
      // timed out or exited): meant for someone else, never for us.
      if (Status S = discard(*Channel, Frame.Length); !S.isOk())
        return S;
      continue;
    }
    if (Frame.Request != Requests)
      return Status(ErrorCode::Malformed,
                    "the model sent a reply to request " +
                        std::to_string(Frame.Request) + " while request " +
                        std::to_string(Requests) +
                        " was pending (more than one reply to a request); "
                        "the channel is out of step");
    CountingSource Counted(*Channel);
    Status S = Codec->decodeAdvice(Counted, Spec, Limits, Out);
    ++Requests;
    if (!S.isOk())
      return S;
    if (Counted.Count != Frame.Length)
      return Status(ErrorCode::Malformed,
                    "the reply's frame announced " +
                        std::to_string(Frame.Length) +
                        " bytes but the advice took " +
                        std::to_string(Counted.Count));
    return Channel->endReply();
  }
}

} // namespace mlbridge
