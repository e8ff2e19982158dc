//===- python_ext/grpc_server_core.cpp - gRPC server core for Python ------===//
//
// One reactor per call (gRPC's callback API over the generic service, so
// requests stay serialized bytes and no protobuf message type is linked in:
// the Python side decodes them with its own protobuf runtime).
//
// A call's state lives under the core's mutex: Reading -> Queued (in the
// queue) -> Taken (handed out by next()) -> Finished. Whoever moves a call
// to Finished is the only one to call Finish on it, and does so after
// unlocking (gRPC may run OnDone inline); OnDone, which deletes the
// reactor, cannot run before that Finish.
//
//===----------------------------------------------------------------------===//

#include "grpc_server_core.h"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <unistd.h>

namespace mlbridge::pyserver {

size_t Incoming::size() const {
  size_t N = 0;
  for (const grpc::Slice &S : Payload)
    N += S.size();
  return N;
}

void Incoming::copyTo(char *Out) const {
  for (const grpc::Slice &S : Payload) {
    std::memcpy(Out, S.begin(), S.size());
    Out += S.size();
  }
}

namespace {

enum class CallState { Reading, Queued, Taken, Finished };

Clock::time_point steadyFromSystem(std::chrono::system_clock::time_point T) {
  const auto Now = std::chrono::system_clock::now();
  if (T <= Now)
    return Clock::now();
  const auto Left = T - Now;
  // gRPC's "no deadline" is the far future; keep the sum from overflowing.
  if (Left > std::chrono::hours(24 * 365))
    return Clock::time_point::max();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(Left);
}

/// How long shutdown() lets gRPC finish what is in flight.
constexpr std::chrono::milliseconds kShutdownGrace{1000};

} // namespace

class ServerCore::Impl final : public grpc::CallbackGenericService {
public:
  class Call;

  explicit Impl(ServerConfig C) : Config(std::move(C)) {}

  grpc::ServerGenericBidiReactor *
  CreateReactor(grpc::GenericCallbackServerContext *Ctx) override;

  // Reactor events (gRPC threads).
  void received(Call *C, bool Ok);
  void cancelled(Call *C);
  void done(Call *C);

  void sweep();

  ServerConfig Config;
  std::unique_ptr<grpc::Server> Server;
  int Port = 0;

  std::mutex M;
  std::condition_variable Arrived; ///< next() waits on it
  std::condition_variable SweepCV; ///< the sweeper waits on it
  std::unordered_map<uint64_t, Call *> Calls; ///< Queued and Taken calls
  struct Entry {
    MethodKind Kind;
    uint64_t Id;
    std::string Method;
    std::vector<grpc::Slice> Payload; ///< session ends only
  };
  std::deque<Entry> Queue;
  uint64_t NextId = 1;
  bool Closed = false;
  Clock::time_point SweepAt = Clock::time_point::max();
  std::thread Sweeper;
  std::once_flag ShutdownOnce;
  /// The process that started the server: a forked child has none of its
  /// threads, and shutting its sockets down would break the parent's.
  const pid_t Owner = ::getpid();
};

class ServerCore::Impl::Call final : public grpc::ServerGenericBidiReactor {
public:
  Call(Impl &Core, grpc::GenericCallbackServerContext *Ctx) : Core(Core), Ctx(Ctx) {}

  void OnReadDone(bool Ok) override { Core.received(this, Ok); }
  void OnCancel() override { Core.cancelled(this); }
  void OnDone() override {
    Core.done(this);
    delete this;
  }

  void start() { StartRead(&Request); }
  void finish(const grpc::Status &S) { Finish(S); }
  void reply(std::string_view Bytes) {
    grpc::Slice S(Bytes.data(), Bytes.size());
    Reply = grpc::ByteBuffer(&S, 1);
    StartWriteAndFinish(&Reply, grpc::WriteOptions(), grpc::Status::OK);
  }

  Impl &Core;
  grpc::GenericCallbackServerContext *Ctx;
  grpc::ByteBuffer Request, Reply;
  MethodKind Kind = MethodKind::Request;
  CallState State = CallState::Reading;
  bool CancelledEarly = false;
  uint64_t Id = 0;
  Clock::time_point Deadline = Clock::time_point::max();
};

grpc::ServerGenericBidiReactor *
ServerCore::Impl::CreateReactor(grpc::GenericCallbackServerContext *Ctx) {
  auto *C = new Call(*this, Ctx);
  auto It = Config.Methods.find(Ctx->method());
  if (It == Config.Methods.end()) {
    C->State = CallState::Finished;
    C->finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                           "method " + Ctx->method() + " is not served here"));
    return C;
  }
  C->Kind = It->second;
  C->start();
  return C;
}

void ServerCore::Impl::received(Call *C, bool Ok) {
  grpc::Status Refusal;
  {
    std::lock_guard<std::mutex> L(M);
    if (!Ok || C->CancelledEarly)
      Refusal = grpc::Status(grpc::StatusCode::CANCELLED, "no request arrived");
    else if (Closed)
      Refusal = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                             "the model is shutting down");
    else if (C->Kind == MethodKind::SessionEnd) {
      Entry E{MethodKind::SessionEnd, 0, C->Ctx->method(), {}};
      // The payload is a small message: copy it, the call ends now.
      std::vector<grpc::Slice> Slices;
      if (C->Request.Dump(&Slices).ok())
        for (const grpc::Slice &S : Slices)
          E.Payload.emplace_back(S.begin(), S.size());
      Queue.push_back(std::move(E));
      C->State = CallState::Finished;
    } else if (Calls.size() >= Config.MaxPendingCalls)
      Refusal = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                             "the model has too many requests waiting (" +
                                 std::to_string(Calls.size()) + ")");
    else {
      C->Id = NextId++;
      C->State = CallState::Queued;
      C->Deadline = std::min(steadyFromSystem(C->Ctx->deadline()),
                             Clock::now() + Config.AnswerTimeout);
      Calls.emplace(C->Id, C);
      Queue.push_back(Entry{MethodKind::Request, C->Id, C->Ctx->method(), {}});
      if (C->Deadline < SweepAt) {
        SweepAt = C->Deadline;
        SweepCV.notify_one();
      }
    }
    if (!Refusal.ok())
      C->State = CallState::Finished;
    else
      Arrived.notify_one();
  }
  if (!Refusal.ok())
    C->finish(Refusal);
  else if (C->Kind == MethodKind::SessionEnd)
    C->reply({});
}

void ServerCore::Impl::cancelled(Call *C) {
  {
    std::lock_guard<std::mutex> L(M);
    if (C->State == CallState::Reading) {
      C->CancelledEarly = true; // received() ends it
      return;
    }
    if (C->State == CallState::Finished)
      return;
    C->State = CallState::Finished;
    Calls.erase(C->Id);
  }
  C->finish(grpc::Status::CANCELLED);
}

void ServerCore::Impl::done(Call *C) {
  std::lock_guard<std::mutex> L(M);
  if (C->Id)
    Calls.erase(C->Id);
}

/// Ends the calls nobody answered in time; sleeps until the earliest
/// deadline (an idle server's sweeper sleeps without a timeout).
void ServerCore::Impl::sweep() {
  std::unique_lock<std::mutex> L(M);
  while (!Closed) {
    if (SweepAt == Clock::time_point::max())
      SweepCV.wait(L);
    else
      SweepCV.wait_until(L, SweepAt);
    if (Closed)
      break;
    const auto Now = Clock::now();
    std::vector<Call *> Expired;
    SweepAt = Clock::time_point::max();
    for (auto It = Calls.begin(); It != Calls.end();) {
      Call *C = It->second;
      if (C->Deadline <= Now) {
        C->State = CallState::Finished;
        Expired.push_back(C);
        It = Calls.erase(It);
      } else {
        SweepAt = std::min(SweepAt, C->Deadline);
        ++It;
      }
    }
    L.unlock();
    for (Call *C : Expired)
      C->finish(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                             "the model did not answer in time"));
    L.lock();
  }
}

// ---- ServerCore ------------------------------------------------------------------

ServerCore::ServerCore(std::unique_ptr<Impl> I) : I(std::move(I)) {}

std::unique_ptr<ServerCore> ServerCore::start(const ServerConfig &Config,
                                              std::string &Error) {
  auto I = std::make_unique<Impl>(Config);
  std::shared_ptr<grpc::ServerCredentials> Creds;
  if (Config.UseTls) {
    grpc::SslServerCredentialsOptions O(
        Config.RequireClientCert
            ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
            : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    O.pem_key_cert_pairs.push_back({Config.KeyPem, Config.CertPem});
    if (Config.RequireClientCert)
      O.pem_root_certs = Config.RootPem;
    Creds = grpc::SslServerCredentials(O);
  } else {
    Creds = grpc::InsecureServerCredentials();
  }
  grpc::ServerBuilder B;
  B.AddListeningPort(Config.Address, Creds, &I->Port);
  B.SetMaxReceiveMessageSize(Config.MaxMessageBytes);
  B.SetMaxSendMessageSize(Config.MaxMessageBytes);
  B.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  B.RegisterCallbackGenericService(I.get());
  I->Server = B.BuildAndStart();
  if (!I->Server || I->Port == 0) {
    if (I->Server)
      I->Server->Shutdown(std::chrono::system_clock::now());
    Error = "cannot listen on '" + Config.Address +
            "': the port is in use" +
            (Config.UseTls ? ", the TLS key or certificate is not usable," : "") +
            " or the address is invalid (a port is never shared between two "
            "servers)";
    return nullptr;
  }
  Impl *Raw = I.get();
  I->Sweeper = std::thread([Raw] { Raw->sweep(); });
  return std::unique_ptr<ServerCore>(new ServerCore(std::move(I)));
}

ServerCore::~ServerCore() {
  if (::getpid() != I->Owner) {
    (void)I.release(); // a forked child: gRPC's state is the parent's
    return;
  }
  shutdown();
}

int ServerCore::port() const { return I->Port; }

NextResult ServerCore::next(Clock::time_point Until, Incoming &Out) {
  std::vector<Impl::Call *> Expired;
  NextResult R = NextResult::TimedOut;
  {
    std::unique_lock<std::mutex> L(I->M);
    for (;;) {
      if (I->Closed) {
        R = NextResult::Closed;
        break;
      }
      if (I->Queue.empty()) {
        if (I->Arrived.wait_until(L, Until) == std::cv_status::timeout &&
            I->Queue.empty() && !I->Closed)
          break;
        continue;
      }
      Impl::Entry E = std::move(I->Queue.front());
      I->Queue.pop_front();
      if (E.Kind == MethodKind::SessionEnd) {
        Out = Incoming{E.Kind, 0, std::move(E.Method), std::move(E.Payload)};
        R = NextResult::Got;
        break;
      }
      auto It = I->Calls.find(E.Id);
      if (It == I->Calls.end())
        continue; // the compiler gave up while it was queued
      Impl::Call *C = It->second;
      if (C->Deadline <= Clock::now()) {
        C->State = CallState::Finished;
        I->Calls.erase(It);
        Expired.push_back(C);
        continue;
      }
      C->State = CallState::Taken;
      Out.Kind = MethodKind::Request;
      Out.Id = E.Id;
      Out.Method = std::move(E.Method);
      Out.Payload.clear();
      if (!C->Request.Dump(&Out.Payload).ok())
        Out.Payload.clear();
      R = NextResult::Got;
      break;
    }
  }
  for (Impl::Call *C : Expired)
    C->finish(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                           "the model did not answer in time"));
  return R;
}

AnswerResult ServerCore::answer(uint64_t Id, std::string_view Reply) {
  Impl::Call *C;
  bool TooLarge = Reply.size() > size_t(I->Config.MaxMessageBytes);
  bool Late;
  {
    std::lock_guard<std::mutex> L(I->M);
    auto It = I->Calls.find(Id);
    if (It == I->Calls.end() || It->second->State != CallState::Taken)
      return AnswerResult::Gone;
    C = It->second;
    Late = C->Deadline <= Clock::now();
    C->State = CallState::Finished;
    I->Calls.erase(It);
  }
  if (Late) {
    C->finish(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                           "the model did not answer in time"));
    return AnswerResult::Gone;
  }
  if (TooLarge) {
    C->finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                           "the model's reply of " + std::to_string(Reply.size()) +
                               " bytes is larger than max " +
                               std::to_string(I->Config.MaxMessageBytes)));
    return AnswerResult::TooLarge;
  }
  C->reply(Reply);
  return AnswerResult::Sent;
}

bool ServerCore::fail(uint64_t Id, grpc::StatusCode Code, const std::string &Message) {
  Impl::Call *C;
  {
    std::lock_guard<std::mutex> L(I->M);
    auto It = I->Calls.find(Id);
    if (It == I->Calls.end() || It->second->State != CallState::Taken)
      return false;
    C = It->second;
    C->State = CallState::Finished;
    I->Calls.erase(It);
  }
  C->finish(grpc::Status(Code, Message));
  return true;
}

void ServerCore::shutdown() {
  if (::getpid() != I->Owner)
    return; // a forked child: see ~ServerCore
  std::call_once(I->ShutdownOnce, [this] {
    std::vector<Impl::Call *> Waiting;
    {
      std::lock_guard<std::mutex> L(I->M);
      I->Closed = true;
      for (auto &[Id, C] : I->Calls) {
        C->State = CallState::Finished;
        Waiting.push_back(C);
      }
      I->Calls.clear();
      I->Queue.clear();
      I->Arrived.notify_all();
      I->SweepCV.notify_all();
    }
    for (Impl::Call *C : Waiting)
      C->finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                             "the model is shutting down"));
    if (I->Sweeper.joinable())
      I->Sweeper.join();
    // Calls still being read, and connections of clients that do not
    // act on GOAWAY while idle (grpcio's synchronous stubs poll only
    // during a call), are cut at the deadline; Shutdown returns once
    // every reactor is done. A status already on its way gets that long.
    I->Server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
    I->Server->Wait();
  });
}

} // namespace mlbridge::pyserver
