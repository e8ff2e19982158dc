//===- grpc/grpc_training.cpp - The compiler as a gRPC server -------------===//
//
// Training mode: the compiler hosts mlbridge.v1.CompilerService and the
// trainer drives it. evaluate() publishes an observation and waits (up to
// CallTimeout) for the trainer's SendAction; GetObservation waits (up to
// the trainer's deadline) for the next observation or the end of the
// session. The server runs on gRPC's own threads: starting it never
// blocks, stopping it waits at most LingerTimeout + ShutdownTimeout.
//
//===----------------------------------------------------------------------===//

#include "grpc_internal.h"
#include "support/checked_cast.h"

#include "mlbridge.grpc.pb.h"

#include <condition_variable>
#include <mutex>

namespace mlbridge::grpc_detail {

namespace {

using Clock = std::chrono::steady_clock;

/// Handlers never wait longer than this per call, whatever the client's
/// deadline (a trainer without a deadline polls again).
constexpr std::chrono::seconds kMaxHandlerWait{60};
/// Handlers re-check cancellation this often.
constexpr std::chrono::milliseconds kWaitSlice{50};

class TrainingServer final : public GrpcModelRunner::Impl,
                             public v1::CompilerService::Service {
public:
  using Impl::Impl;

  ~TrainingServer() override { stop(); }

  Status start() {
    if (!Opts.AllowRemote && !isLoopbackAddress(Address))
      return Status(ErrorCode::InvalidArgument,
                    "refusing to listen on '" + Address +
                        "': not a loopback address (set AllowRemote, and "
                        "preferably UseTls, to serve other machines)");
    Expected<std::shared_ptr<grpc::ServerCredentials>> Creds =
        serverCredentials(Opts);
    if (!Creds)
      return Creds.status();
    grpc::ServerBuilder B;
    int Selected = 0;
    B.AddListeningPort(Address, *Creds, &Selected);
    B.RegisterService(this);
    const int Max = support::saturatingCast<int>(Opts.MaxMessageBytes);
    B.SetMaxReceiveMessageSize(Max);
    B.SetMaxSendMessageSize(Max);
    // A port in use must be an error, never silently shared.
    B.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    Server = B.BuildAndStart();
    if (!Server || Selected == 0) {
      if (Server)
        Server->Shutdown(std::chrono::system_clock::now());
      Server.reset();
      return Status(ErrorCode::IOError,
                    "cannot listen on '" + Address +
                        "': the address is in use or invalid (a port is "
                        "never shared between two servers)");
    }
    if (Status S = Sibling.claim(Address, Selected); !S.isOk()) {
      Server->Shutdown(std::chrono::system_clock::now());
      Server.reset();
      return S.addContext("cannot listen on '" + Address + "'");
    }
    BoundPort = Selected;
    // "host:0" -> "host:<port>" for the trainer.
    size_t Colon = Address.rfind(':');
    if (Colon != std::string::npos && Address.rfind("unix", 0) != 0)
      Address = Address.substr(0, Colon + 1) + std::to_string(Selected);
    return Status::ok();
  }

  Status connect() override { return Status::ok(); }
  int port() const override { return BoundPort; }

  Status evaluate(const std::vector<const TensorValue *> &Features,
                  const TensorSpec &Spec, TensorValue &Out,
                  remote::Failure &Where) override {
    std::unique_lock<std::mutex> L(M);
    if (EpisodeEnded) {
      Where = remote::Failure::PeerLost;
      return episodeError();
    }
    if (SessionEnded)
      return Status(ErrorCode::Unavailable, "the session has ended");
    // Publish the observation.
    Pending.Clear();
    Pending.set_session(SessionId);
    Pending.set_context(Context);
    int64_t &Counter = counter();
    Pending.set_index(Counter++);
    Pending.set_id(++LastId);
    featuresToProto(Features, Pending.mutable_features());
    specToProto(Spec, Pending.mutable_advice());
    PendingSpec = Spec;
    HasPending = true;
    Answered = false;
    CV.notify_all();

    const auto Until = Clock::now() + Opts.CallTimeout;
    CV.wait_until(L, Until,
                  [&] { return Answered || EpisodeEnded || Stopping; });
    HasPending = false;
    if (Answered) {
      Answered = false;
      if (!Answer.isOk())
        return Answer;
      std::swap(Out, AnswerValue);
      return Status::ok();
    }
    // Episode over, server stopping, or no action in time: either way no
    // trainer is driving this runner any more.
    Where = remote::Failure::PeerLost;
    if (EpisodeEnded)
      return episodeError();
    if (Stopping)
      return Status(ErrorCode::Unavailable, "the server is stopping");
    return Status(ErrorCode::Timeout,
                  "no action from the trainer for observation " +
                      std::to_string(LastId) + " within " +
                      std::to_string(Opts.CallTimeout.count()) + " ms");
  }

  Status endSession() override {
    std::unique_lock<std::mutex> L(M);
    if (!SessionEnded) {
      SessionEnded = true;
      CV.notify_all();
    }
    // Give a trainer that is driving us a chance to learn it (bounded); a
    // compiler no trainer ever called stops at once.
    if (TrainerSeen)
      CV.wait_for(L, Opts.LingerTimeout,
                  [&] { return EndDelivered || EpisodeEnded || Stopping; });
    return Status::ok();
  }

  bool episodeEnded() const override {
    std::lock_guard<std::mutex> L(M);
    return EpisodeEnded;
  }

  Status waitForEpisodeEnd(std::chrono::milliseconds Timeout) override {
    std::unique_lock<std::mutex> L(M);
    if (CV.wait_for(L, Timeout, [&] { return EpisodeEnded; }))
      return Status::ok();
    return Status(ErrorCode::Timeout,
                  "the trainer did not end the episode within " +
                      std::to_string(Timeout.count()) + " ms");
  }

  void stop() {
    {
      std::lock_guard<std::mutex> L(M);
      if (Stopping)
        return;
      Stopping = true;
      CV.notify_all();
    }
    if (Server) {
      Server->Shutdown(toSystem(Clock::now() + Opts.ShutdownTimeout));
      Server->Wait();
      Server.reset();
    }
    Sibling.release();
  }

  // ---- CompilerService ------------------------------------------------------

  grpc::Status GetObservation(grpc::ServerContext *Ctx,
                              const v1::ObservationRequest *,
                              v1::ObservationReply *Reply) override {
    const auto ClientDeadline = Ctx->deadline();
    const auto Until = std::min(std::chrono::system_clock::now() + kMaxHandlerWait,
                                ClientDeadline);
    std::unique_lock<std::mutex> L(M);
    TrainerSeen = true;
    while (true) {
      if (Stopping)
        return grpc::Status(grpc::UNAVAILABLE, "the compiler is shutting down");
      if (HasPending) {
        *Reply->mutable_observation() = Pending;
        return grpc::Status::OK;
      }
      if (SessionEnded) {
        Reply->mutable_session_end()->set_session(SessionId);
        EndDelivered = true;
        CV.notify_all();
        return grpc::Status::OK;
      }
      if (Ctx->IsCancelled())
        return grpc::Status(grpc::CANCELLED, "cancelled by the trainer");
      const auto Now = std::chrono::system_clock::now();
      if (Now >= Until)
        return grpc::Status(grpc::DEADLINE_EXCEEDED,
                            "no observation from the compiler yet");
      CV.wait_for(L, std::min<std::chrono::system_clock::duration>(
                         kWaitSlice, Until - Now));
    }
  }

  grpc::Status SendAction(grpc::ServerContext *, const v1::Action *A,
                          v1::Empty *) override {
    std::lock_guard<std::mutex> L(M);
    if (Stopping)
      return grpc::Status(grpc::UNAVAILABLE, "the compiler is shutting down");
    if (A->session().empty())
      return grpc::Status(grpc::INVALID_ARGUMENT,
                          "the action names no session (Action.session must "
                          "quote the observation's session)");
    // Ids restart at 1 in every session: an action for an earlier compiler
    // on this address can carry the pending id, never this session.
    if (A->session() != SessionId)
      return grpc::Status(grpc::FAILED_PRECONDITION,
                          "the action answers session '" + A->session() +
                              "', not this compiler's session '" + SessionId +
                              "' (a late action for an earlier compiler on "
                              "this address?)");
    if (!HasPending || A->id() != LastId)
      return grpc::Status(
          grpc::FAILED_PRECONDITION,
          "observation " + std::to_string(A->id()) +
              " is not awaiting an action" +
              (HasPending ? " (pending: " + std::to_string(LastId) + ")"
                   : std::string(" (none is pending)")));
    // The trainer's own error is the compiler's answer; an unusable
    // action is refused, and the compiler keeps waiting for a good one.
    ReplyKind Kind;
    Status S = adviceFromReply(A->advice(), PendingSpec, Opts.MaxMessageBytes,
                               "trainer", AnswerValue, &Kind);
    if (!S.isOk() && Kind != ReplyKind::PeerError)
      return grpc::Status(grpc::INVALID_ARGUMENT, S.toString());
    Answer = std::move(S);
    Answered = true;
    // No longer pending: a GetObservation that runs before the compiler
    // thread wakes up must not hand out this observation again.
    HasPending = false;
    CV.notify_all();
    return grpc::Status::OK;
  }

  grpc::Status EndEpisode(grpc::ServerContext *, const v1::EndEpisodeRequest *R,
                          v1::Empty *) override {
    std::lock_guard<std::mutex> L(M);
    if (!EpisodeEnded) {
      EpisodeEnded = true;
      EpisodeReason = R->reason();
      HasPending = false; // never handed out again
      CV.notify_all();
    }
    return grpc::Status::OK;
  }

private:
  Status episodeError() const {
    return Status(ErrorCode::PeerClosed,
                  "the trainer ended the episode" +
                      (EpisodeReason.empty() ? std::string()
                                             : " (" + EpisodeReason + ")"));
  }

  std::unique_ptr<grpc::Server> Server;
  LoopbackSiblingClaim Sibling;
  int BoundPort = 0;

  mutable std::mutex M;
  std::condition_variable CV;
  v1::Observation Pending;
  TensorSpec PendingSpec;
  uint64_t LastId = 0;
  bool HasPending = false;
  bool Answered = false;
  TensorValue AnswerValue;
  Status Answer; // the trainer's answer: ok (AnswerValue) or its error
  bool SessionEnded = false;
  bool EndDelivered = false;
  bool EpisodeEnded = false;
  bool TrainerSeen = false; // a GetObservation arrived
  std::string EpisodeReason;
  bool Stopping = false;
};

} // namespace

Expected<std::unique_ptr<GrpcModelRunner::Impl>>
createTrainingServer(std::string Address, GrpcOptions Opts,
                     std::string SessionId) {
  auto S = std::make_unique<TrainingServer>(std::move(Address), std::move(Opts),
                                            std::move(SessionId));
  if (Status E = S->start(); !E.isOk())
    return E;
  return std::unique_ptr<GrpcModelRunner::Impl>(std::move(S));
}

} // namespace mlbridge::grpc_detail
