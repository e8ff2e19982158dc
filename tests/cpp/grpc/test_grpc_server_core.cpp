// The C++ gRPC server core of mlbridge.grpc (src/python_ext), driven the
// way the Python module drives it, with generic gRPC clients standing in
// for compilers. Also built and run under ASan (build-asan).

#include "grpc_server_core.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace mlbridge::pyserver;
using namespace std::chrono_literals;

const char *const kCall = "/test.Model/Call";
const char *const kEnd = "/test.Model/End";

std::unique_ptr<ServerCore> startCore(ServerConfig C = {}) {
  if (C.Address.empty())
    C.Address = "127.0.0.1:0";
  C.Methods = {{kCall, MethodKind::Request}, {kEnd, MethodKind::SessionEnd}};
  std::string Error;
  auto Core = ServerCore::start(C, Error);
  EXPECT_TRUE(Core) << Error;
  return Core;
}

std::string text(const Incoming &In) {
  std::string S(In.size(), '\0');
  In.copyTo(S.data());
  return S;
}

/// A compiler: one channel, blocking unary calls of raw bytes.
class Client {
public:
  explicit Client(int Port, int MaxBytes = 64 << 20) {
    grpc::ChannelArguments A;
    A.SetMaxSendMessageSize(MaxBytes);
    A.SetMaxReceiveMessageSize(MaxBytes);
    A.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    Channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(Port),
                                        grpc::InsecureChannelCredentials(), A);
    Stub = std::make_unique<grpc::GenericStub>(Channel);
  }

  // Connects before the first call, so a call's deadline covers only the
  // call (a connection that misses a short deadline leaves the channel in
  // backoff, failing the next calls with UNAVAILABLE).
  bool connect(std::chrono::milliseconds Timeout = 10000ms) {
    return Channel->WaitForConnected(std::chrono::system_clock::now() + Timeout);
  }

  grpc::Status call(const std::string &Method, const std::string &Payload,
                    std::string *Reply = nullptr,
                    std::chrono::milliseconds Timeout = 10000ms,
                    grpc::ClientContext *Ctx = nullptr) {
    grpc::ClientContext Own;
    grpc::ClientContext &C = Ctx ? *Ctx : Own;
    C.set_deadline(std::chrono::system_clock::now() + Timeout);
    grpc::Slice S(Payload.data(), Payload.size());
    grpc::ByteBuffer Req(&S, 1), Resp;
    std::promise<grpc::Status> Done;
    Stub->UnaryCall(&C, Method, grpc::StubOptions(), &Req, &Resp,
                    [&](grpc::Status St) { Done.set_value(std::move(St)); });
    grpc::Status St = Done.get_future().get();
    if (St.ok() && Reply) {
      std::vector<grpc::Slice> Slices;
      Reply->clear();
      if (Resp.Dump(&Slices).ok())
        for (const grpc::Slice &P : Slices)
          Reply->append(reinterpret_cast<const char *>(P.begin()), P.size());
    }
    return St;
  }

private:
  std::shared_ptr<grpc::Channel> Channel;
  std::unique_ptr<grpc::GenericStub> Stub;
};

/// Takes the next request within Timeout (a test failure otherwise).
Incoming take(ServerCore &Core, std::chrono::milliseconds Timeout = 10000ms) {
  Incoming In;
  EXPECT_EQ(Core.next(Clock::now() + Timeout, In), NextResult::Got);
  return In;
}

/// Starts `Clients` threads, each with its own connected Client making
/// `Calls` calls: Call(Client, Query, C, I) for query "C:I". The caller
/// serves the requests meanwhile and joins the threads.
template <typename F>
std::vector<std::thread> startClients(int Port, int Clients, int Calls, F Call) {
  std::vector<std::thread> Threads;
  for (int C = 0; C < Clients; ++C)
    Threads.emplace_back([=] {
      Client Cl(Port);
      if (!Cl.connect()) {
        ADD_FAILURE() << "client " << C << " could not connect";
        return;
      }
      for (int I = 0; I < Calls; ++I)
        Call(Cl, std::to_string(C) + ":" + std::to_string(I), C, I);
    });
  return Threads;
}

TEST(GrpcServerCore, ConcurrentClientsNeverGetCrossedReplies) {
  auto Core = startCore();
  ASSERT_TRUE(Core);
  constexpr int Clients = 8, Calls = 40;
  std::atomic<int> Wrong{0}, Failed{0};
  std::vector<std::thread> Threads = startClients(
      Core->port(), Clients, Calls, [&](Client &Cl, const std::string &Q, int, int) {
        std::string Reply;
        if (!Cl.call(kCall, Q, &Reply).ok())
          ++Failed;
        else if (Reply != "answer " + Q)
          ++Wrong;
      });
  for (int N = 0; N < Clients * Calls; ++N) {
    Incoming In = take(*Core);
    ASSERT_EQ(In.Kind, MethodKind::Request);
    EXPECT_EQ(In.Method, kCall);
    EXPECT_EQ(Core->answer(In.Id, "answer " + text(In)), AnswerResult::Sent);
  }
  for (std::thread &T : Threads)
    T.join();
  EXPECT_EQ(Wrong, 0);
  EXPECT_EQ(Failed, 0);
  // An id is answered once: a second answer finds nobody waiting.
  Incoming None;
  EXPECT_EQ(Core->next(Clock::now() + 10ms, None), NextResult::TimedOut);
}

TEST(GrpcServerCore, NextWaitsNoLongerThanItsDeadline) {
  auto Core = startCore();
  ASSERT_TRUE(Core);
  Incoming In;
  const auto T0 = Clock::now();
  EXPECT_EQ(Core->next(T0 + 200ms, In), NextResult::TimedOut);
  const auto Took = Clock::now() - T0;
  EXPECT_GE(Took, 200ms);
  EXPECT_LT(Took, 5s);
}

TEST(GrpcServerCore, SessionEndsAreAnsweredAtOnceAndReported) {
  auto Core = startCore();
  ASSERT_TRUE(Core);
  Client Cl(Core->port());
  std::string Reply = "not empty";
  ASSERT_TRUE(Cl.call(kEnd, "session-7", &Reply).ok());
  EXPECT_EQ(Reply, "");
  Incoming In = take(*Core);
  EXPECT_EQ(In.Kind, MethodKind::SessionEnd);
  EXPECT_EQ(text(In), "session-7");
  grpc::Status St = Cl.call("/test.Model/Other", "x");
  EXPECT_EQ(St.error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

TEST(GrpcServerCore, ACancelledCallIsNeitherHandedOutNorAnswered) {
  auto Core = startCore();
  ASSERT_TRUE(Core);
  Client Cl(Core->port());
  // Taken, then the compiler gives up: the answer finds nobody.
  grpc::ClientContext Ctx;
  auto Call = std::async(std::launch::async,
                         [&] { return Cl.call(kCall, "first", nullptr, 10000ms, &Ctx); });
  Incoming In = take(*Core);
  Ctx.TryCancel();
  EXPECT_EQ(Call.get().error_code(), grpc::StatusCode::CANCELLED);
  std::this_thread::sleep_for(500ms); // the server hears of it a moment later
  EXPECT_EQ(Core->answer(In.Id, "late"), AnswerResult::Gone);
  // Queued, then its deadline passes: next() skips it.
  EXPECT_EQ(Cl.call(kCall, "second", nullptr, 100ms).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server's copy of the deadline is relative to the call's arrival:
  // give it the transit time to pass too.
  std::this_thread::sleep_for(300ms);
  Incoming Next;
  EXPECT_EQ(Core->next(Clock::now() + 200ms, Next), NextResult::TimedOut);
}

TEST(GrpcServerCore, AnUnansweredCallEndsAtTheAnswerTimeout) {
  ServerConfig C;
  C.AnswerTimeout = 300ms;
  auto Core = startCore(C);
  ASSERT_TRUE(Core);
  Client Cl(Core->port());
  const auto T0 = Clock::now();
  auto Call = std::async(std::launch::async, [&] { return Cl.call(kCall, "q"); });
  Incoming In = take(*Core);
  grpc::Status St = Call.get();
  EXPECT_EQ(St.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(Clock::now() - T0, 5s);
  EXPECT_EQ(Core->answer(In.Id, "late"), AnswerResult::Gone);
}

TEST(GrpcServerCore, TooManyWaitingCallsAreRefused) {
  ServerConfig C;
  C.MaxPendingCalls = 1;
  auto Core = startCore(C);
  ASSERT_TRUE(Core);
  Client A(Core->port()), B(Core->port());
  auto First = std::async(std::launch::async, [&] { return A.call(kCall, "a"); });
  Incoming In = take(*Core);
  EXPECT_EQ(B.call(kCall, "b").error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(Core->answer(In.Id, "ok"), AnswerResult::Sent);
  EXPECT_TRUE(First.get().ok());
}

TEST(GrpcServerCore, APortInUseIsAnError) {
  int Fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(Fd, 0);
  sockaddr_in A{};
  A.sin_family = AF_INET;
  A.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(Fd, reinterpret_cast<sockaddr *>(&A), sizeof A), 0);
  ASSERT_EQ(::listen(Fd, 1), 0);
  socklen_t Len = sizeof A;
  ASSERT_EQ(::getsockname(Fd, reinterpret_cast<sockaddr *>(&A), &Len), 0);
  ServerConfig C;
  C.Address = "127.0.0.1:" + std::to_string(ntohs(A.sin_port));
  C.Methods = {{kCall, MethodKind::Request}};
  std::string Error;
  EXPECT_FALSE(ServerCore::start(C, Error));
  EXPECT_NE(Error.find("in use"), std::string::npos) << Error;
  ::close(Fd);
  // And a second core on the first one's port.
  auto First = startCore();
  ASSERT_TRUE(First);
  C.Address = "127.0.0.1:" + std::to_string(First->port());
  EXPECT_FALSE(ServerCore::start(C, Error));
}

TEST(GrpcServerCore, ShutdownEndsPendingCallsAndWakesNext) {
  auto Core = startCore();
  ASSERT_TRUE(Core);
  Client A(Core->port()), B(Core->port());
  auto Taken = std::async(std::launch::async, [&] { return A.call(kCall, "taken"); });
  Incoming In = take(*Core);
  auto Queued = std::async(std::launch::async, [&] { return B.call(kCall, "queued"); });
  // Wait until the second call is queued (next() would hand it out).
  std::this_thread::sleep_for(200ms);
  std::promise<NextResult> Woken;
  std::thread Waiter([&] {
    Incoming Ignored;
    Woken.set_value(Core->next(Clock::now() + 20s, Ignored));
  });
  std::this_thread::sleep_for(50ms);
  const auto T0 = Clock::now();
  Core->shutdown();
  EXPECT_LT(Clock::now() - T0, 6s);
  Waiter.join();
  const NextResult W = Woken.get_future().get();
  // The waiter took the queued call before shutdown, or was woken by it.
  EXPECT_TRUE(W == NextResult::Closed || W == NextResult::Got);
  EXPECT_EQ(Taken.get().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Queued.get().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Core->answer(In.Id, "late"), AnswerResult::Gone);
  Incoming After;
  EXPECT_EQ(Core->next(Clock::now() + 10s, After), NextResult::Closed);
  Core.reset(); // idempotent shutdown, then the last callbacks
}

TEST(GrpcServerCore, MessagesExactlyAtTheLimitPassOneByteOverIsRefused) {
  ServerConfig C;
  C.MaxMessageBytes = 1024;
  auto Core = startCore(C);
  ASSERT_TRUE(Core);
  Client Cl(Core->port());
  EXPECT_EQ(Cl.call(kCall, std::string(1025, 'x')).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  Incoming None; // never queued
  EXPECT_EQ(Core->next(Clock::now() + 100ms, None), NextResult::TimedOut);
  std::string Reply;
  auto Call = std::async(std::launch::async,
                         [&] { return Cl.call(kCall, std::string(1024, 'x'), &Reply); });
  Incoming In = take(*Core);
  EXPECT_EQ(In.size(), 1024u); // the over-limit one was never queued
  EXPECT_EQ(Core->answer(In.Id, std::string(1024, 'y')), AnswerResult::Sent);
  EXPECT_TRUE(Call.get().ok());
  EXPECT_EQ(Reply, std::string(1024, 'y'));
  auto Over = std::async(std::launch::async, [&] { return Cl.call(kCall, "q"); });
  In = take(*Core);
  EXPECT_EQ(Core->answer(In.Id, std::string(1025, 'y')), AnswerResult::TooLarge);
  EXPECT_EQ(Over.get().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST(GrpcServerCore, AnAnswerToAGoneCallNeverReachesTheNextCompiler) {
  auto Core = startCore();
  ASSERT_TRUE(Core);
  Client A(Core->port()), B(Core->port());
  // A is taken, then cancels; B's call arrives; the answer meant for A is
  // refused, and B gets only its own.
  grpc::ClientContext CtxA;
  auto CallA = std::async(std::launch::async,
                          [&] { return A.call(kCall, "a", nullptr, 10000ms, &CtxA); });
  Incoming InA = take(*Core);
  CtxA.TryCancel();
  EXPECT_EQ(CallA.get().error_code(), grpc::StatusCode::CANCELLED);
  std::string ReplyB;
  auto CallB = std::async(std::launch::async, [&] { return B.call(kCall, "b", &ReplyB); });
  Incoming InB = take(*Core);
  EXPECT_EQ(text(InB), "b");
  EXPECT_NE(InA.Id, InB.Id);
  // A's client sees CANCELLED before the server's OnCancel necessarily ran
  // (another gRPC thread), so the core may not know yet: Gone or Sent (which
  // gRPC then drops) are both right; what must hold is that it reaches
  // nobody else, and that A cannot be answered twice.
  const AnswerResult ForA = Core->answer(InA.Id, "for a");
  EXPECT_TRUE(ForA == AnswerResult::Gone || ForA == AnswerResult::Sent);
  EXPECT_FALSE(Core->fail(InA.Id, grpc::StatusCode::UNKNOWN, "for a"));
  EXPECT_EQ(Core->answer(InB.Id, "for b"), AnswerResult::Sent);
  EXPECT_TRUE(CallB.get().ok());
  EXPECT_EQ(ReplyB, "for b");
  // Answered once: again finds nobody.
  EXPECT_EQ(Core->answer(InB.Id, "again"), AnswerResult::Gone);
  EXPECT_FALSE(Core->fail(InB.Id, grpc::StatusCode::UNKNOWN, "again"));
  // Cancelled while queued: never handed out.
  grpc::ClientContext CtxQ;
  auto Queued = std::async(std::launch::async,
                           [&] { return A.call(kCall, "queued", nullptr, 10000ms, &CtxQ); });
  std::this_thread::sleep_for(200ms);
  CtxQ.TryCancel();
  EXPECT_EQ(Queued.get().error_code(), grpc::StatusCode::CANCELLED);
  std::this_thread::sleep_for(300ms); // the server hears of it a moment later
  Incoming None;
  EXPECT_EQ(Core->next(Clock::now() + 100ms, None), NextResult::TimedOut);
}

// Sixteen compilers, deadlines shorter than the queueing time of a slow
// model: expiries (sweeper, next()), cancellations and answers race on
// every call. Every reply that arrives is its own; nothing is freed twice
// (the ASan build runs this too).
TEST(GrpcServerCore, ManyCompilersOneSlowModelShortDeadlines) {
  auto Core = startCore();
  ASSERT_TRUE(Core);
  constexpr int Clients = 16, Calls = 25;
  std::atomic<int> Wrong{0}, Ok{0}, Expired{0}, Other{0};
  std::atomic<bool> Done{false};
  std::vector<std::thread> Threads = startClients(
      Core->port(), Clients, Calls, [&](Client &Cl, const std::string &Q, int C, int I) {
        std::string Reply;
        grpc::Status St =
            Cl.call(kCall, Q, &Reply, std::chrono::milliseconds(5 + (C * 7 + I * 3) % 60));
        if (St.ok())
          (Reply == "answer " + Q ? Ok : Wrong)++;
        else if (St.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
          ++Expired;
        else if (++Other == 1)
          ADD_FAILURE() << "call " << Q << ": status " << St.error_code() << " "
                        << St.error_message();
      });
  std::thread Model([&] {
    while (!Done) {
      Incoming In;
      if (Core->next(Clock::now() + 50ms, In) != NextResult::Got)
        continue;
      std::this_thread::sleep_for(2ms); // the slow policy
      Core->answer(In.Id, "answer " + text(In));
    }
  });
  for (std::thread &T : Threads)
    T.join();
  Done = true;
  Model.join();
  EXPECT_EQ(Wrong, 0);
  EXPECT_EQ(Other, 0);
  EXPECT_EQ(Ok + Expired, Clients * Calls);
  EXPECT_GT(Ok, 0);
}

TEST(GrpcServerCore, ShutdownRacingAnswersFromOtherThreads) {
  for (int Round = 0; Round < 5; ++Round) {
    auto Core = startCore();
    ASSERT_TRUE(Core);
    std::vector<std::future<grpc::Status>> Calls;
    std::vector<std::unique_ptr<Client>> Clients;
    for (int C = 0; C < 6; ++C) {
      Clients.push_back(std::make_unique<Client>(Core->port()));
      Client *Cl = Clients.back().get();
      Calls.push_back(std::async(std::launch::async, [Cl] { return Cl->call(kCall, "q"); }));
    }
    std::vector<Incoming> Taken;
    for (int C = 0; C < 3; ++C)
      Taken.push_back(take(*Core));
    std::thread Answerer([&] {
      for (Incoming &In : Taken)
        Core->answer(In.Id, "answer");
    });
    Core->shutdown();
    Answerer.join();
    int Answered = 0;
    for (auto &F : Calls) {
      grpc::Status St = F.get();
      // Waiting calls end UNAVAILABLE; one still arriving is cancelled.
      if (St.ok())
        ++Answered;
      else
        EXPECT_TRUE(St.error_code() == grpc::StatusCode::UNAVAILABLE ||
                    St.error_code() == grpc::StatusCode::CANCELLED)
            << St.error_code() << " " << St.error_message();
    }
    EXPECT_LE(Answered, 3);
  }
}

TEST(GrpcServerCore, AForkedChildLeavesTheParentsServerAlone) {
  auto Core = startCore();
  ASSERT_TRUE(Core);
  const pid_t Child = ::fork();
  ASSERT_GE(Child, 0);
  if (Child == 0) {
    // What a child's exit does to objects it inherited: shutdown and
    // destruction (without gRPC's threads, which stayed in the parent).
    Core->shutdown();
    Core.reset();
    std::_Exit(0);
  }
  int Status = 0;
  ASSERT_EQ(::waitpid(Child, &Status, 0), Child);
  EXPECT_TRUE(WIFEXITED(Status) && WEXITSTATUS(Status) == 0) << Status;
  // The parent still accepts new connections and serves.
  Client Cl(Core->port());
  std::string Reply;
  auto Call = std::async(std::launch::async, [&] { return Cl.call(kCall, "q", &Reply); });
  Incoming In = take(*Core);
  EXPECT_EQ(Core->answer(In.Id, "a"), AnswerResult::Sent);
  EXPECT_TRUE(Call.get().ok());
  EXPECT_EQ(Reply, "a");
}

TEST(GrpcServerCore, ShutdownWithACompilerStillConnectedIsQuick) {
  auto Core = startCore();
  ASSERT_TRUE(Core);
  Client Cl(Core->port()); // stays connected, as a compiler between requests does
  for (const bool Fail : {false, true}) {
    auto Call = std::async(std::launch::async, [&] { return Cl.call(kCall, "q"); });
    Incoming In = take(*Core);
    if (Fail)
      EXPECT_TRUE(Core->fail(In.Id, grpc::StatusCode::UNKNOWN, "no"));
    else
      EXPECT_EQ(Core->answer(In.Id, "a"), AnswerResult::Sent);
    EXPECT_EQ(Call.get().ok(), !Fail);
  }
  const auto T0 = Clock::now();
  Core->shutdown();
  EXPECT_LT(Clock::now() - T0, 1s);
}

} // namespace
