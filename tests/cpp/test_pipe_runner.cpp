// PipeModelRunner against a fault-injecting C++ peer on real FIFOs: dead,
// silent, absent and garbage-speaking models must give a clear error in
// bounded time, never a hang, a crash or a SIGPIPE.
#include "mlbridge/c/mlbridge.h"
#include "mlbridge/pipe_model_runner.h"

#include "stream_test_util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlbridge;
using namespace std::chrono_literals;
using mlbridge::test::PythonProcess;
using mlbridge::test::secondsSince;
using mlbridge::test::Watchdog;
using Clock = std::chrono::steady_clock;

namespace {

/// Blocking-with-deadline reads from a raw fd (the peer's side).
class FdSource : public ByteSource {
public:
  explicit FdSource(int Fd) : Fd(Fd) {}
  Status readExact(void *Dst, size_t N) override {
    char *P = static_cast<char *>(Dst);
    while (N) {
      if (!waitReadable())
        return Status(ErrorCode::Timeout, "peer read timeout");
      ssize_t R = ::read(Fd, P, N);
      if (R == 0)
        return Status(ErrorCode::PeerClosed, "eof");
      if (R < 0) {
        if (errno == EAGAIN || errno == EINTR)
          continue;
        return Status(ErrorCode::IOError, "read");
      }
      P += R;
      N -= static_cast<size_t>(R);
    }
    return Status::ok();
  }
  Status readLine(std::string &Line, size_t MaxBytes) override {
    Line.clear();
    char C;
    for (;;) {
      if (Status S = readExact(&C, 1); !S.isOk())
        return S;
      if (C == '\n')
        return Status::ok();
      if (Line.size() >= MaxBytes)
        return Status(ErrorCode::TooLarge, "line");
      Line += C;
    }
  }

private:
  bool waitReadable() {
    struct pollfd P = {Fd, POLLIN, 0};
    return ::poll(&P, 1, 5000) > 0;
  }
  int Fd;
};

/// A fault-injecting model peer: creates the FIFOs and runs Script in a
/// thread with the two fds (advice-out, observations-in) open.
class FakeModelPeer {
public:
  using Script = std::function<void(int AdviceFd, int ObsFd)>;

  FakeModelPeer() {
    char T[] = "/tmp/mlbridge-test-XXXXXX";
    EXPECT_NE(::mkdtemp(T), nullptr);
    Dir = T;
    Base = Dir + "/ch";
  }
  ~FakeModelPeer() {
    if (Thread.joinable())
      Thread.join();
    ::unlink((Base + ".in").c_str());
    ::unlink((Base + ".out").c_str());
    ::rmdir(Dir.c_str());
  }
  void makeFifos() {
    ASSERT_EQ(::mkfifo((Base + ".in").c_str(), 0600), 0);
    ASSERT_EQ(::mkfifo((Base + ".out").c_str(), 0600), 0);
  }
  /// Opens like a model host (B.in for writing, then B.out) and runs S.
  void run(Script S) {
    makeFifos();
    Thread = std::thread([this, S] {
      // A fake model may answer a compiler that already gave up: EPIPE
      // then, not a SIGPIPE that would kill the test program.
      sigset_t Pipe;
      sigemptyset(&Pipe);
      sigaddset(&Pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &Pipe, nullptr);
      int AdviceFd = -1;
      auto Until = Clock::now() + 5s;
      while (AdviceFd < 0 && Clock::now() < Until) {
        AdviceFd = ::open((Base + ".in").c_str(), O_WRONLY | O_NONBLOCK);
        if (AdviceFd < 0)
          std::this_thread::sleep_for(1ms);
      }
      int ObsFd = ::open((Base + ".out").c_str(), O_RDONLY);
      S(AdviceFd, ObsFd);
      if (AdviceFd >= 0)
        ::close(AdviceFd);
      if (ObsFd >= 0)
        ::close(ObsFd);
    });
  }

  std::string Dir, Base;
  std::thread Thread;
};

/// What a model side remembers to frame its replies (protocol §5.1).
struct PeerSession {
  uint64_t Id = 0;
  uint64_t Requests = 0;

  void note(const CompilerMessage &Msg) {
    if (Msg.Type == CompilerMessage::Kind::Header && !Msg.ContinuesSession) {
      Id = Msg.SessionId;
      Requests = 0;
    }
  }
  /// Reply bytes, framed when the session asked for it.
  std::string frame(const std::string &Reply) {
    return Id ? frameFor(Id, Requests++, Reply) : Reply;
  }
  static std::string frameFor(uint64_t Id, uint64_t Request,
                              const std::string &Reply) {
    char Raw[ReplyFrame::Bytes];
    ReplyFrame{Id, Request, Reply.size()}.encode(Raw);
    return std::string(Raw, sizeof Raw) + Reply;
  }
};

bool writeAll(int Fd, const std::string &Bytes) {
  return ::write(Fd, Bytes.data(), Bytes.size()) ==
         static_cast<ssize_t>(Bytes.size());
}

/// The model's end of one stream in a fake peer: decodes what the runner
/// sends, and frames replies as the session asked (protocol §5.1).
struct PeerStream {
  PeerStream(int Out, int In, SerDesKind Kind = SerDesKind::Bitstream)
      : Out(Out), Src(In), Codec(createSerDes(Kind)) {}

  /// Reads messages until an observation arrives.
  bool nextObservation() {
    SerDesLimits Limits;
    while (Codec->decodeMessage(Src, Limits, Specs, Advice, Msg).isOk()) {
      Session.note(Msg);
      if (Msg.Type == CompilerMessage::Kind::Observation)
        return true;
    }
    return false;
  }
  int64_t feature() const { return *Msg.Features[0].dataAs<int64_t>(); }
  /// Sends Reply, framed when the session asked for it.
  bool reply(const std::string &Reply) {
    return writeAll(Out, Session.frame(Reply));
  }
  bool replyInt(int64_t V) { return reply(intBytes(V)); }
  static std::string intBytes(int64_t V) {
    return std::string(reinterpret_cast<const char *>(&V), sizeof V);
  }

  int Out;
  FdSource Src;
  std::unique_ptr<SerDes> Codec;
  CompilerMessage Msg;
  std::vector<TensorSpec> Specs;
  TensorSpec Advice;
  PeerSession Session;
};

PipeOptions fastOptions(SerDesKind Kind = SerDesKind::Bitstream) {
  PipeOptions O;
  O.Format = Kind;
  O.OpenTimeout = 500ms;
  O.ReplyTimeout = 500ms;
  return O;
}

std::unique_ptr<PipeModelRunner> makeRunner(const std::string &Base,
                                            PipeOptions O) {
  return test::makeRunner<PipeModelRunner>(Base, O);
}

} // namespace

class PipeRunnerBothFormats : public ::testing::TestWithParam<SerDesKind> {};

TEST_P(PipeRunnerBothFormats, ServesRequestsContextsAndSessions) {
  FakeModelPeer Peer;
  std::vector<int64_t> SeenIndices;
  std::vector<std::string> SeenContexts;
  int Headers = 0;
  const SerDesKind Kind = GetParam();
  Peer.run([&](int Out, int In) {
    PeerStream S(Out, In, Kind);
    SerDesLimits Limits;
    WireMessage Reply;
    while (S.Codec->decodeMessage(S.Src, Limits, S.Specs, S.Advice, S.Msg)
               .isOk()) {
      S.Session.note(S.Msg);
      if (S.Msg.Type == CompilerMessage::Kind::Header) {
        ++Headers;
        continue;
      }
      if (S.Msg.Type == CompilerMessage::Kind::Context) {
        SeenContexts.push_back(S.Msg.Context);
        continue;
      }
      SeenIndices.push_back(S.Msg.ObservationIndex);
      TensorValue A(S.Advice);
      *A.dataAs<int64_t>() = 2 * S.feature();
      Reply.clear();
      ASSERT_TRUE(S.Codec->encodeAdvice(S.Advice, A, Reply).isOk());
      ASSERT_TRUE(S.reply(Reply.flatten()));
    }
  });
  auto R = makeRunner(Peer.Base, fastOptions(Kind));
  ASSERT_TRUE(R->switchContext("f").isOk());
  for (int64_t K = 0; K < 3; ++K) {
    *R->getTensor<int64_t>(0) = K + 10;
    Expected<int64_t> A = R->evaluate<int64_t>();
    ASSERT_TRUE(A) << A.status().toString();
    EXPECT_EQ(*A, 2 * (K + 10));
  }
  ASSERT_TRUE(R->switchContext("g").isOk());
  ASSERT_TRUE(R->evaluate<int64_t>());
  R.reset(); // end of session: the peer sees EOF
  Peer.Thread.join();
  EXPECT_EQ(Headers, 1);
  EXPECT_EQ(SeenContexts, (std::vector<std::string>{"f", "g"}));
  EXPECT_EQ(SeenIndices, (std::vector<int64_t>{0, 1, 2, 0}));
}

INSTANTIATE_TEST_SUITE_P(Formats, PipeRunnerBothFormats,
                         ::testing::Values(SerDesKind::Bitstream,
                                           SerDesKind::Json),
                         [](const auto &Info) {
                           return std::string(serdesKindName(Info.param));
                         });

TEST(PipeRunner, MissingFifoFailsWithinTheOpenDeadline) {
  auto R = makeRunner("/tmp/mlbridge-no-such-dir/ch", fastOptions());
  auto Start = Clock::now();
  Expected<int64_t> A = R->evaluate<int64_t>();
  ASSERT_FALSE(A);
  EXPECT_EQ(A.status().code(), ErrorCode::NotFound);
  EXPECT_NE(A.status().message().find("does not exist"), std::string::npos);
  EXPECT_LT(secondsSince(Start), 2.0);
  // Unavailable from now on, at once: no second 500 ms wait per call site.
  Start = Clock::now();
  A = R->evaluate<int64_t>();
  EXPECT_EQ(A.status().code(), ErrorCode::Unavailable);
  EXPECT_LT(secondsSince(Start), 0.05);
}

TEST(PipeRunner, PeerThatNeverOpensTimesOut) {
  FakeModelPeer Peer;
  Peer.makeFifos();
  auto R = makeRunner(Peer.Base, fastOptions());
  auto Start = Clock::now();
  Expected<int64_t> A = R->evaluate<int64_t>();
  ASSERT_FALSE(A);
  EXPECT_EQ(A.status().code(), ErrorCode::Timeout);
  EXPECT_LT(secondsSince(Start), 2.0);
}

TEST(PipeRunner, PeerClosingMidRequestIsPeerClosed) {
  FakeModelPeer Peer;
  Peer.run([](int Out, int In) {
    (void)PeerStream(Out, In).nextObservation();
    // ...and exit without answering (fds closed by the harness).
  });
  PipeOptions O = fastOptions();
  O.ReplyTimeout = 5s; // EOF must be noticed long before this
  auto R = makeRunner(Peer.Base, O);
  auto Start = Clock::now();
  Expected<int64_t> A = R->evaluate<int64_t>();
  ASSERT_FALSE(A);
  EXPECT_EQ(A.status().code(), ErrorCode::PeerClosed) << A.status().toString();
  EXPECT_LT(secondsSince(Start), 2.0);
}

TEST(PipeRunner, SilentPeerTimesOutAndRunnerFailsFastAfter) {
  FakeModelPeer Peer;
  std::atomic<bool> Done{false};
  Peer.run([&](int Out, int In) {
    (void)PeerStream(Out, In).nextObservation();
    while (!Done)
      std::this_thread::sleep_for(5ms);
  });
  auto R = makeRunner(Peer.Base, fastOptions());
  auto Start = Clock::now();
  Expected<int64_t> A = R->evaluate<int64_t>();
  double Took = secondsSince(Start);
  ASSERT_FALSE(A);
  EXPECT_EQ(A.status().code(), ErrorCode::Timeout);
  EXPECT_GE(Took, 0.45);
  EXPECT_LT(Took, 2.0);
  EXPECT_TRUE(R->isUnavailable());
  EXPECT_EQ(R->evaluateOr<int64_t>(-1), -1);
  Done = true;
}

/// An 8 MiB request to a peer that opens both ends and closes them at once.
/// The open may succeed or not depending on timing; in both cases the
/// process must survive and get an error value.
Expected<int64_t> bigRequestToAPeerThatLeft() {
  FakeModelPeer Peer;
  Peer.run([](int, int) {});
  std::vector<int64_t> Big(1 << 20, 1);
  auto V = PipeModelRunner::create(Peer.Base, {}, std::nullopt, fastOptions());
  if (!V)
    return V.status();
  (*V)->setFeature("big", Big);
  return (*V)->evaluate<int64_t>();
}

TEST(PipeRunner, ReaderGoneIsEpipeNotSigpipe) {
  Expected<int64_t> A = bigRequestToAPeerThatLeft();
  ASSERT_FALSE(A);
  EXPECT_TRUE(A.status().code() == ErrorCode::PeerClosed ||
              A.status().code() == ErrorCode::Timeout)
      << A.status().toString();
}

// Writing blocks SIGPIPE around each write: the thread's mask and a SIGPIPE
// already pending for it (sent by the program itself) are as they were.
TEST(PipeRunner, SigpipeMaskAndPendingSigpipeAreLeftAsFound) {
  for (bool BlockedBefore : {false, true}) {
    SCOPED_TRACE(BlockedBefore ? "SIGPIPE blocked and pending before"
                               : "SIGPIPE unblocked before");
    sigset_t Pipe;
    sigemptyset(&Pipe);
    sigaddset(&Pipe, SIGPIPE);
    if (BlockedBefore) {
      ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &Pipe, nullptr), 0);
      ASSERT_EQ(pthread_kill(pthread_self(), SIGPIPE), 0);
    }
    EXPECT_FALSE(bigRequestToAPeerThatLeft());

    sigset_t Mask, Pending;
    ASSERT_EQ(pthread_sigmask(SIG_SETMASK, nullptr, &Mask), 0);
    ASSERT_EQ(sigpending(&Pending), 0);
    EXPECT_EQ(sigismember(&Mask, SIGPIPE), BlockedBefore ? 1 : 0);
    EXPECT_EQ(sigismember(&Pending, SIGPIPE), BlockedBefore ? 1 : 0);
    if (BlockedBefore) { // take our signal back, unblock
      struct timespec Zero = {0, 0};
      EXPECT_EQ(sigtimedwait(&Pipe, nullptr, &Zero), SIGPIPE);
      ASSERT_EQ(pthread_sigmask(SIG_UNBLOCK, &Pipe, nullptr), 0);
    }
  }
}

/// A JSON runner whose peer answers its observations with Replies, in
/// order.
std::unique_ptr<PipeModelRunner>
jsonRunnerAnsweredWith(FakeModelPeer &Peer, std::vector<std::string> Replies) {
  Peer.run([Replies](int Out, int In) {
    PeerStream S(Out, In, SerDesKind::Json);
    for (const std::string &Reply : Replies)
      if (!S.nextObservation() || !S.reply(Reply))
        return;
  });
  return makeRunner(Peer.Base, fastOptions(SerDesKind::Json));
}

TEST(PipeRunner, GarbageJsonReplyIsMalformed) {
  FakeModelPeer Peer;
  auto R = jsonRunnerAnsweredWith(Peer, {"this is not json\n"});
  Expected<int64_t> A = R->evaluate<int64_t>();
  ASSERT_FALSE(A);
  EXPECT_EQ(A.status().code(), ErrorCode::Malformed) << A.status().toString();
}

TEST(PipeRunner, ModelReportedErrorKeepsTheRunnerUsable) {
  FakeModelPeer Peer;
  auto R = jsonRunnerAnsweredWith(
      Peer, {"{\"error\":\"cannot decide\"}\n", "{\"advice\":4}\n"});
  Expected<int64_t> A = R->evaluate<int64_t>();
  ASSERT_FALSE(A);
  EXPECT_NE(A.status().message().find("cannot decide"), std::string::npos);
  EXPECT_FALSE(R->isUnavailable()) << "the stream is still in step";
  A = R->evaluate<int64_t>();
  ASSERT_TRUE(A) << A.status().toString();
  EXPECT_EQ(*A, 4);
}

TEST(PipeRunner, CreateFifosOptionMakesPrivateFifos) {
  char T[] = "/tmp/mlbridge-test-XXXXXX";
  ASSERT_NE(::mkdtemp(T), nullptr);
  std::string Base = std::string(T) + "/own";
  {
    PipeOptions O = fastOptions();
    O.CreateFifos = true;
    auto R = makeRunner(Base, O);
    Expected<int64_t> A = R->evaluate<int64_t>(); // nobody listens
    EXPECT_EQ(A.status().code(), ErrorCode::Timeout);
    struct stat St;
    ASSERT_EQ(::stat((Base + ".in").c_str(), &St), 0);
    EXPECT_TRUE(S_ISFIFO(St.st_mode));
    EXPECT_EQ(St.st_mode & 0777, 0600u);
  }
  struct stat St;
  EXPECT_NE(::stat((Base + ".in").c_str(), &St), 0) << "removed on destroy";
  ::rmdir(T);
}

TEST(PipeRunner, InvalidArgumentsAreRejectedAtCreate) {
  EXPECT_FALSE(PipeModelRunner::create(""));
  PipeOptions O;
  O.ReplyTimeout = 0ms;
  EXPECT_FALSE(PipeModelRunner::create("/tmp/x", {}, std::nullopt, O));
  auto Dup = PipeModelRunner::create(
      "/tmp/x", {TensorSpec::create<float>("a"), TensorSpec::create<float>("a")});
  ASSERT_FALSE(Dup);
  EXPECT_NE(Dup.status().message().find("declared twice"), std::string::npos);
}

// ---- reliability: no answer reaches the wrong request (issue 16), FIFOs
// ---- the runner takes (issue 23) ------------------------------------------

TEST(PipeReliability, LateReplyOfAnEarlierSessionIsSkipped) {
  FakeModelPeer Peer;
  std::atomic<bool> FirstGaveUp{false};
  Peer.run([&](int Out, int In) {
    // Keep B.out open for writing, as a host that survives sessions does,
    // so the second compiler's bytes continue this stream.
    int Keep = ::open((Peer.Base + ".out").c_str(), O_WRONLY | O_NONBLOCK);
    PeerStream S(Out, In);
    ASSERT_TRUE(S.nextObservation());
    PeerSession First = S.Session;
    while (!FirstGaveUp)
      std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(S.nextObservation());
    ASSERT_NE(First.Id, S.Session.Id);
    // The first compiler's answer arrives late, then the second's.
    (void)writeAll(Out, First.frame(PeerStream::intBytes(111)));
    (void)S.replyInt(2 * S.feature());
    ::close(Keep);
  });
  PipeOptions Quick = fastOptions();
  Quick.ReplyTimeout = 200ms;
  auto A = makeRunner(Peer.Base, Quick);
  *A->getTensor<int64_t>(0) = 7;
  EXPECT_EQ(A->evaluate<int64_t>().status().code(), ErrorCode::Timeout);
  A.reset();
  FirstGaveUp = true;
  PipeOptions Patient = fastOptions();
  Patient.ReplyTimeout = 5s;
  auto B = makeRunner(Peer.Base, Patient);
  *B->getTensor<int64_t>(0) = 21;
  Expected<int64_t> Answer = B->evaluate<int64_t>();
  ASSERT_TRUE(Answer) << Answer.status().toString();
  EXPECT_EQ(*Answer, 42) << "a late answer meant for the first compiler";
}

TEST(PipeReliability, ASecondReplyToOneRequestIsAnErrorNotTheNextAnswer) {
  FakeModelPeer Peer;
  Peer.run([](int Out, int In) {
    PeerStream S(Out, In, SerDesKind::Json);
    if (!S.nextObservation())
      return;
    const std::string Reply = "{\"advice\":2}\n";
    (void)writeAll(Out, PeerSession::frameFor(S.Session.Id, 0, Reply));
    (void)writeAll(Out, PeerSession::frameFor(S.Session.Id, 0, Reply));
    if (S.nextObservation())
      (void)writeAll(Out, PeerSession::frameFor(S.Session.Id, 1,
                                                "{\"advice\":4}\n"));
  });
  auto R = makeRunner(Peer.Base, fastOptions(SerDesKind::Json));
  // The duplicate is caught with the first answer if it is already there,
  // else by its request number when the second request reads it.
  *R->getTensor<int64_t>(0) = 1;
  Expected<int64_t> Answer = R->evaluate<int64_t>();
  if (Answer) {
    EXPECT_EQ(*Answer, 2);
    *R->getTensor<int64_t>(0) = 2;
    Answer = R->evaluate<int64_t>();
    ASSERT_FALSE(Answer) << "got " << *Answer << ": the duplicate reply";
  }
  EXPECT_EQ(Answer.status().code(), ErrorCode::Malformed);
  EXPECT_NE(Answer.status().message().find("more than one reply"),
            std::string::npos)
      << Answer.status().toString();
}

// A model host that does not frame replies (e.g. LLVM's interactive_host.py)
// gets LLVM's exact bytes; extra reply bytes are still refused.
TEST(PipeReliability, ExtraReplyLinesAreRefusedWithoutSessionIds) {
  FakeModelPeer Peer;
  Peer.run([](int Out, int In) {
    PeerStream S(Out, In, SerDesKind::Json);
    if (!S.nextObservation())
      return;
    EXPECT_EQ(S.Session.Id, 0u);
    (void)S.reply("{\"advice\":2}\n");
    std::this_thread::sleep_for(50ms); // arrives after the first answer
    (void)S.reply("{\"advice\":2}\n");
    if (S.nextObservation())
      (void)S.reply("{\"advice\":4}\n");
  });
  PipeOptions O = fastOptions(SerDesKind::Json);
  O.SessionIds = false;
  auto R = makeRunner(Peer.Base, O);
  *R->getTensor<int64_t>(0) = 1;
  Expected<int64_t> First = R->evaluate<int64_t>();
  ASSERT_TRUE(First) << First.status().toString();
  EXPECT_EQ(*First, 2);
  std::this_thread::sleep_for(150ms);
  *R->getTensor<int64_t>(0) = 2;
  Expected<int64_t> Second = R->evaluate<int64_t>();
  ASSERT_FALSE(Second) << "got " << *Second << ": the extra reply line";
  EXPECT_EQ(Second.status().code(), ErrorCode::Malformed);
}

// Session ids are offered only when asked, through PipeOptions::SessionIds
// or the C API's mlb_pipe_runner_set_session_ids.
class PipeSessionIds
    : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(PipeSessionIds, HeaderCarriesASessionIdOnlyWhenAsked) {
  const auto [Ids, ThroughCApi] = GetParam();
  FakeModelPeer Peer;
  uint64_t Seen = 0;
  Peer.run([&](int Out, int In) {
    PeerStream S(Out, In);
    if (!S.nextObservation())
      return;
    Seen = S.Session.Id;
    (void)S.replyInt(5);
  });
  if (ThroughCApi) {
    mlb_pipe_options O;
    mlb_pipe_options_init(&O);
    O.open_timeout_ms = O.reply_timeout_ms = 500;
    mlb_runner *R = nullptr;
    ASSERT_EQ(mlb_pipe_runner_create(Peer.Base.c_str(), MLB_SERDES_BITSTREAM,
                                     &O, &R),
              MLB_OK)
        << mlb_last_error();
    ASSERT_EQ(mlb_pipe_runner_set_session_ids(R, Ids), MLB_OK);
    ASSERT_EQ(mlb_set_int64(R, "i", 3), MLB_OK);
    int64_t A = 0;
    EXPECT_EQ(mlb_evaluate_int64(R, &A), MLB_OK) << mlb_last_error();
    EXPECT_EQ(A, 5);
    mlb_runner_destroy(R);
  } else {
    PipeOptions O = fastOptions();
    O.SessionIds = Ids;
    auto R = makeRunner(Peer.Base, O);
    Expected<int64_t> A = R->evaluate<int64_t>();
    ASSERT_TRUE(A) << A.status().toString();
    EXPECT_EQ(*A, 5);
  }
  Peer.Thread.join();
  EXPECT_EQ(Seen != 0, Ids);
}

INSTANTIATE_TEST_SUITE_P(
    OnOff, PipeSessionIds,
    ::testing::Combine(::testing::Bool(), ::testing::Bool()),
    [](const auto &Info) {
      return std::string(std::get<0>(Info.param) ? "On" : "Off") +
             (std::get<1>(Info.param) ? "ThroughCApi" : "ThroughOptions");
    });

TEST(PipeReliability, CApiRefusesNoRunner) {
  EXPECT_EQ(mlb_pipe_runner_set_session_ids(nullptr, 0),
            MLB_ERR_INVALID_ARGUMENT);
}

TEST(PipeReliability, SecondCompilerOnOneChannelIsRefused) {
  FakeModelPeer Peer;
  std::atomic<bool> Done{false};
  Peer.run([&](int, int) {
    while (!Done)
      std::this_thread::sleep_for(1ms);
  });
  auto First = makeRunner(Peer.Base, fastOptions());
  ASSERT_TRUE(First->connect().isOk());
  auto Second = makeRunner(Peer.Base, fastOptions());
  Status S = Second->connect();
  Done = true;
  ASSERT_FALSE(S.isOk()) << "two compilers would read each other's answers";
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(S.message().find("in use by another compiler"), std::string::npos)
      << S.toString();
}

TEST(PipeReliability, DanglingSymlinkWithCreateFifosFailsAtOnce) {
  FakeModelPeer Peer;
  ASSERT_EQ(::symlink((Peer.Dir + "/nowhere").c_str(),
                      (Peer.Base + ".in").c_str()),
            0);
  PipeOptions O = fastOptions();
  O.CreateFifos = true;
  auto R = makeRunner(Peer.Base, O);
  Watchdog Dog(10s);
  auto Start = Clock::now();
  Status S = R->connect();
  EXPECT_LT(secondsSince(Start), 2.0);
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument) << S.toString();
  EXPECT_NE(S.message().find("symbolic link"), std::string::npos)
      << S.toString();
  R.reset();
  ::unlink((Peer.Dir + "/nowhere").c_str());
}

// Whoever can write a FIFO can answer in the model's place.
TEST(PipeReliability, FifosOthersCanWriteAreRefused) {
  for (mode_t Mode : {0666, 0620, 0602}) {
    FakeModelPeer Peer;
    Peer.makeFifos();
    ASSERT_EQ(::chmod((Peer.Base + ".in").c_str(), Mode), 0);
    auto R = makeRunner(Peer.Base, fastOptions());
    Status S = R->connect();
    char Expected[16];
    std::snprintf(Expected, sizeof Expected, "mode %04o", unsigned(Mode));
    EXPECT_EQ(S.code(), ErrorCode::InvalidArgument) << S.toString();
    EXPECT_NE(S.message().find(Expected), std::string::npos) << S.toString();
    EXPECT_NE(S.message().find("could write to it"), std::string::npos)
        << S.toString();
  }
}

// LLVM's own model host (llvm/lib/Analysis/models/interactive_host.py),
// played in Python as it does it: os.mkfifo with the default mode (0644
// under umask 022), unframed replies. docs/pipes.md tells its users to
// turn SessionIds off; the runner must then take its FIFOs.
const char *const kLlvmLikeHost = R"(
import json, os, struct, sys
os.umask(0o022)
to_compiler, from_compiler = sys.argv[1] + ".in", sys.argv[1] + ".out"
os.mkfifo(to_compiler)
os.mkfifo(from_compiler)
print("ready", flush=True)
with open(to_compiler, "wb") as tc, open(from_compiler, "rb") as fc:
    json.loads(fc.readline())  # the header
    while line := fc.readline():
        if "observation" not in json.loads(line):
            continue
        (value,) = struct.unpack("<q", fc.read(8))
        assert fc.read(1) == b"\n"
        tc.write(struct.pack("<q", 2 * value))
        tc.flush()
)";

TEST(PipeReliability, FifosOfLlvmsOwnHostAreAccepted) {
  FakeModelPeer Peer; // for its directory
  PythonProcess Host(kLlvmLikeHost, {Peer.Base});
  ASSERT_EQ(Host.readLine(), "ready");
  struct stat St;
  ASSERT_EQ(::stat((Peer.Base + ".in").c_str(), &St), 0);
  ASSERT_EQ(St.st_mode & 0777, 0644u) << "the host must make what LLVM's makes";
  PipeOptions O = fastOptions();
  O.SessionIds = false;
  O.OpenTimeout = O.ReplyTimeout = 10s;
  auto R = makeRunner(Peer.Base, O);
  for (int64_t K = 1; K <= 3; ++K) {
    *R->getTensor<int64_t>(0) = K;
    Expected<int64_t> A = R->evaluate<int64_t>();
    ASSERT_TRUE(A) << A.status().toString();
    EXPECT_EQ(*A, 2 * K);
  }
}

TEST(PipeReliability, FifosOfAnotherUserAreRefused) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root to make a FIFO owned by another user";
  FakeModelPeer Peer;
  Peer.makeFifos();
  ASSERT_EQ(::chown((Peer.Base + ".out").c_str(), 65534, 65534), 0);
  auto R = makeRunner(Peer.Base, fastOptions());
  Status S = R->connect();
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument) << S.toString();
  EXPECT_NE(S.message().find("belongs to user 65534"), std::string::npos)
      << S.toString();
}

// A runner serves one thread at a time; a second thread inside it at once
// gets a clear error (and the first thread its own answer), not a torn
// request.
TEST(PipeReliability, TwoThreadsInOneRunnerAtOnceIsAnError) {
  FakeModelPeer Peer;
  std::atomic<bool> Asked{false}, SecondDone{false};
  Peer.run([&](int Out, int In) {
    PeerStream S(Out, In);
    if (!S.nextObservation())
      return;
    Asked = true;
    while (!SecondDone) // hold the first request until the second is refused
      std::this_thread::sleep_for(1ms);
    (void)S.replyInt(2 * S.feature());
  });
  auto R = makeRunner(Peer.Base, fastOptions());
  *R->getTensor<int64_t>(0) = 21;
  Expected<int64_t> First = Status(ErrorCode::Internal, "not run");
  std::thread T([&] { First = R->evaluate<int64_t>(); });
  while (!Asked)
    std::this_thread::sleep_for(1ms);
  Expected<int64_t> Second = R->evaluate<int64_t>();
  Status Switch = R->switchContext("other");
  SecondDone = true;
  T.join();
  ASSERT_FALSE(Second);
  EXPECT_EQ(Second.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(Second.status().message().find("in use by another thread"),
            std::string::npos)
      << Second.status().toString();
  EXPECT_EQ(Switch.code(), ErrorCode::InvalidArgument);
  ASSERT_TRUE(First) << First.status().toString();
  EXPECT_EQ(*First, 42);
  EXPECT_FALSE(R->isUnavailable());
}
