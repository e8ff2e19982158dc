#include "mlbridge/pipe_model_runner.h"

#include "transport/fifo_channel.h"

#include <unordered_map>

#include <unistd.h>

namespace mlbridge {

// The connection state of one session: the FIFO pair plus the per-context
// observation counters that LLVM's logger keeps.
class PipeModelRunner::Channel {
public:
  std::unique_ptr<FifoChannel> Fifo;
  std::unordered_map<std::string, int64_t> NextIndex;
  std::string Context;
};

namespace {

/// Errors after which the byte stream can no longer be trusted.
bool breaksStream(ErrorCode C) {
  return C == ErrorCode::Timeout || C == ErrorCode::PeerClosed ||
         C == ErrorCode::IOError || C == ErrorCode::Malformed ||
         C == ErrorCode::TooLarge || C == ErrorCode::NotFound;
}

} // namespace

Expected<std::unique_ptr<PipeModelRunner>>
PipeModelRunner::create(std::string Base, std::vector<TensorSpec> FeatureSpecs,
                        std::optional<TensorSpec> Advice,
                        PipeOptions Options) {
  auto R = std::make_unique<PipeModelRunner>(
      std::move(Base), std::move(FeatureSpecs), std::move(Advice),
      std::move(Options));
  if (!R->constructionStatus().isOk())
    return R->constructionStatus();
  return R;
}

PipeModelRunner::PipeModelRunner(std::string Base,
                                 std::vector<TensorSpec> FeatureSpecs,
                                 std::optional<TensorSpec> Advice,
                                 PipeOptions Options)
    : ModelRunner(std::move(FeatureSpecs), std::move(Advice), Options),
      Base(std::move(Base)), Opts(std::move(Options)),
      Codec(createSerDes(Opts.Format)) {
  if (!Codec)
    setConstructionError(Status(
        ErrorCode::InvalidArgument,
        std::string("SerDes \"") + serdesKindName(Opts.Format) +
            "\" is not available in this program (protobuf: link "
            "MLBridge::grpc and call mlbridge::enableProtobufSerDes())"));
  else if (this->Base.empty())
    setConstructionError(
        Status(ErrorCode::InvalidArgument, "empty pipe base path"));
  else if (Opts.OpenTimeout.count() <= 0 || Opts.ReplyTimeout.count() <= 0)
    setConstructionError(
        Status(ErrorCode::InvalidArgument, "pipe timeouts must be positive"));
}

PipeModelRunner::~PipeModelRunner() {
  disconnect();
  if (Opts.CreateFifos) {
    ::unlink((Base + ".in").c_str());
    ::unlink((Base + ".out").c_str());
  }
}

Status PipeModelRunner::connect() {
  if (Pipe)
    return Status::ok();
  Expected<std::unique_ptr<FifoChannel>> F =
      FifoChannel::open(Base + ".in", Base + ".out",
                        Clock::now() + Opts.OpenTimeout, Opts.CreateFifos);
  if (!F) {
    Status S = F.takeStatus();
    S.addContext("opening pipe channel '" + Base + "'");
    markUnavailable(S);
    return S;
  }
  Pipe = std::make_unique<Channel>();
  Pipe->Fifo = std::move(*F);
  HeaderSent = false;
  return Status::ok();
}

void PipeModelRunner::disconnect() {
  if (!Pipe)
    return;
  PendingContexts.clear();
  Pipe.reset();
  HeaderSent = false;
}

Status PipeModelRunner::doSwitchContext(std::string_view Name) {
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
  Status S = Pipe->Fifo->write(Msg, Clock::now() + Opts.ReplyTimeout);
  Msg.clear();
  if (!S.isOk()) {
    S.addContext("pipe '" + Base + "'");
    markUnavailable(S);
    Pipe.reset();
    HeaderSent = false;
    PendingContexts.clear();
    return S;
  }
  if (!HeaderSent) {
    HeaderSent = true;
    LastAdviceSpec = *Spec;
    markFeaturesAnnounced();
  }
  Pipe->Context = std::move(PendingContexts.back());
  PendingContexts.clear();
  return Status::ok();
}

Status PipeModelRunner::doEvaluate(
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
  const std::string &Context =
      PendingContexts.empty() ? Pipe->Context : PendingContexts.back();
  int64_t &Counter = Pipe->NextIndex[Context];
  Status S = Codec->encodeObservation(Counter, Features, Msg);
  if (S.isOk()) {
    const Deadline Until = Clock::now() + Opts.ReplyTimeout;
    S = Pipe->Fifo->write(Msg, Until);
    if (S.isOk()) {
      // Sent: the model now knows the header, contexts and this index.
      HeaderSent = true;
      LastAdviceSpec = Spec;
      ++Counter;
      if (!PendingContexts.empty())
        Pipe->Context = std::move(PendingContexts.back());
      PendingContexts.clear();
      Pipe->Fifo->setReadDeadline(Until);
      S = Codec->decodeAdvice(*Pipe->Fifo, Spec, Opts.Limits, Out);
    }
  }
  Msg.clear();
  if (!S.isOk()) {
    S.addContext("pipe '" + Base + "'");
    if (breaksStream(S.code())) {
      markUnavailable(S);
      PendingContexts.clear();
      Pipe.reset();
      HeaderSent = false;
    }
  }
  return S;
}

} // namespace mlbridge
