//===- grpc/grpc_inference.cpp - The compiler as a gRPC client ------------===//
//
// Inference mode: each evaluation is one unary call to the model server,
// mlbridge.v1.ModelService/Evaluate (or a user-defined method). Reaching
// the server is bounded by ConnectTimeout (gRPC's reconnect backoff with
// jitter, capped by our options), each call by CallTimeout. No call is
// ever retried: a request the model may have seen is never sent twice.
//
//===----------------------------------------------------------------------===//

#include "grpc_internal.h"
#include "user_message.h"

#include "mlbridge.grpc.pb.h"

#include <grpcpp/generic/generic_stub.h>

#include <condition_variable>
#include <mutex>

namespace mlbridge::grpc_detail {

namespace {

using Clock = std::chrono::steady_clock;

class InferenceClient final : public GrpcModelRunner::Impl {
public:
  using Impl::Impl;

  Status init() {
    Expected<std::shared_ptr<grpc::ChannelCredentials>> Creds =
        clientCredentials(Opts);
    if (!Creds)
      return Creds.status();
    if (Opts.UserMessages) {
      auto C = UserMessageCodec::load(*Opts.UserMessages);
      if (!C)
        return C.status();
      User = std::move(*C);
    }
    Channel = grpc::CreateCustomChannel(Address, *Creds, channelArguments(Opts));
    if (!Channel)
      return Status(ErrorCode::InvalidArgument,
                    "cannot create a gRPC channel to '" + Address + "'");
    Stub = v1::ModelService::NewStub(Channel);
    Generic = std::make_unique<grpc::GenericStub>(Channel);
    return Status::ok();
  }

  Status connect() override {
    if (Connected)
      return Status::ok();
    const auto Start = Clock::now();
    const auto Until = Start + Opts.ConnectTimeout;
    if (Channel->WaitForConnected(toSystem(Until))) {
      Connected = true;
      return Status::ok();
    }
    const grpc_connectivity_state State = Channel->GetState(false);
    return Status(
        ErrorCode::Unavailable,
        "no model server reachable at '" + Address + "' within " +
            std::to_string(Opts.ConnectTimeout.count()) + " ms (" +
            (State == GRPC_CHANNEL_TRANSIENT_FAILURE
                 ? "connection attempts failed" + lastConnectError()
                 : "still connecting") +
            "; is the server running, and do both sides agree on " +
            (Opts.UseTls ? "TLS" : "plaintext (no TLS)") + "?)");
  }

  /// gRPC keeps why the last connection attempt failed (refused, TLS
  /// handshake, certificate verification) only in a failing call's status:
  /// one fail-fast call fetches it, so the error names the cause.
  std::string lastConnectError() {
    grpc::ClientContext Ctx;
    Ctx.set_deadline(toSystem(Clock::now() + std::chrono::milliseconds(500)));
    v1::Advice Ignored;
    grpc::Status G = Stub->Evaluate(&Ctx, v1::Observation(), &Ignored);
    if (G.ok() || G.error_message().empty())
      return "";
    return ": " + G.error_message();
  }

  Status evaluate(const std::vector<const TensorValue *> &Features,
                  const TensorSpec &Spec, TensorValue &Out,
                  remote::Failure &Where) override {
    if (Ended)
      return Status(ErrorCode::Unavailable, "the session has ended");
    if (User)
      return evaluateUser(Features, Spec, Out, Where);
    Req.set_session(SessionId);
    Req.set_context(Context);
    int64_t &Counter = counter();
    Req.set_index(Counter);
    featuresToProto(Features, Req.mutable_features());
    specToProto(Spec, Req.mutable_advice());
    if (Status S = connect(); !S.isOk()) {
      Where = remote::Failure::PeerLost;
      return S;
    }
    grpc::ClientContext Ctx;
    Ctx.set_deadline(toSystem(Clock::now() + Opts.CallTimeout));
    Reply.Clear();
    grpc::Status G = Stub->Evaluate(&Ctx, Req, &Reply);
    ++Counter;
    if (!G.ok())
      return fromGrpc(G, "Evaluate on '" + Address + "'");
    ReplyKind Kind;
    Status S = adviceFromReply(Reply, Spec, Opts.MaxMessageBytes, "model", Out,
                               &Kind);
    if (Kind == ReplyKind::Advice)
      Where = remote::Failure::AdviceContent;
    return S;
  }

  Status endSession() override {
    if (Ended)
      return Status::ok();
    Ended = true;
    // Only a server we reached hears about the end; never wait for one.
    if (User || !Connected ||
        Channel->GetState(false) != GRPC_CHANNEL_READY)
      return Status::ok();
    grpc::ClientContext Ctx;
    Ctx.set_deadline(toSystem(
        Clock::now() + std::min(Opts.CallTimeout, std::chrono::milliseconds(2000))));
    v1::SessionEnd End;
    End.set_session(SessionId);
    v1::Empty Nothing;
    grpc::Status G = Stub->EndSession(&Ctx, End, &Nothing);
    return G.ok() ? Status::ok()
                  : fromGrpc(G, "EndSession on '" + Address + "'");
  }

private:
  Status evaluateUser(const std::vector<const TensorValue *> &Features,
                      const TensorSpec &Spec, TensorValue &Out,
                      remote::Failure &Where) {
    if (Status S = User->fillRequest(Features); !S.isOk())
      return S;
    std::string Bytes;
    if (!User->request().SerializeToString(&Bytes))
      return Status(ErrorCode::Internal, "cannot serialize the request");
    if (Status S = connect(); !S.isOk()) {
      Where = remote::Failure::PeerLost;
      return S;
    }
    grpc::Slice Slice(Bytes);
    grpc::ByteBuffer Request(&Slice, 1), Response;
    grpc::ClientContext Ctx;
    Ctx.set_deadline(toSystem(Clock::now() + Opts.CallTimeout));
    std::mutex M;
    std::condition_variable CV;
    bool Done = false;
    grpc::Status G;
    Generic->UnaryCall(&Ctx, User->schema().Method, grpc::StubOptions(),
                       &Request, &Response, [&](grpc::Status S) {
                         std::lock_guard<std::mutex> L(M);
                         G = std::move(S);
                         Done = true;
                         CV.notify_all();
                       });
    {
      std::unique_lock<std::mutex> L(M);
      // The deadline ends the call; the extra wait is a safety net only.
      if (!CV.wait_for(L, Opts.CallTimeout + std::chrono::seconds(5),
                       [&] { return Done; })) {
        Ctx.TryCancel();
        CV.wait(L, [&] { return Done; });
      }
    }
    ++counter();
    if (!G.ok())
      return fromGrpc(G, std::string(User->schema().Method) + " on '" +
                             Address + "'");
    std::vector<grpc::Slice> Slices;
    std::string Payload;
    if (Response.Dump(&Slices).ok())
      for (const grpc::Slice &S : Slices)
        Payload.append(reinterpret_cast<const char *>(S.begin()), S.size());
    User->reply().Clear();
    if (!parseQuietly(User->reply(), Payload))
      return Status(ErrorCode::Malformed,
                    "the reply is not a valid " + User->schema().ReplyType);
    Where = remote::Failure::AdviceContent;
    return User->readAdvice(Spec, Out);
  }

  std::shared_ptr<grpc::Channel> Channel;
  std::unique_ptr<v1::ModelService::Stub> Stub;
  std::unique_ptr<grpc::GenericStub> Generic;
  std::unique_ptr<UserMessageCodec> User;
  v1::Observation Req;
  v1::Advice Reply;
  bool Connected = false;
  bool Ended = false;
};

} // namespace

Expected<std::unique_ptr<GrpcModelRunner::Impl>>
createInferenceClient(std::string Address, GrpcOptions Opts,
                      std::string SessionId) {
  auto C = std::make_unique<InferenceClient>(std::move(Address),
                                             std::move(Opts),
                                             std::move(SessionId));
  if (Status S = C->init(); !S.isOk())
    return S;
  return std::unique_ptr<GrpcModelRunner::Impl>(std::move(C));
}

} // namespace mlbridge::grpc_detail
