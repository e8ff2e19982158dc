// ShmModelRunner from C++: argument checks, a missing model, a model that
// does not accept, a corrupt reply ring (against a C++ fake model side),
// and two runners on two threads against one real Python model process
// (one ShmCompilerInterface per channel). Named threads.* for
// ThreadSanitizer.
#include "mlbridge/shm_model_runner.h"

#include "stream_test_util.h"
#include "transport/shm_layout.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

using namespace mlbridge;
using mlbridge::test::PythonProcess;
using mlbridge::test::Watchdog;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// The model: one interface per channel, each served by its own thread,
// answering 2*i; prints the socket paths, exits when stdin closes.
const char *const kModel = R"(
import sys, threading
from mlbridge import ShmCompilerInterface
ifaces = [ShmCompilerInterface(timeout=30) for _ in range(2)]
for iface in ifaces:
    threading.Thread(target=iface.serve, args=(lambda o: 2 * int(o["i"][0]),),
                     kwargs={"sessions": 1}, daemon=True).start()
print(" ".join(i.path for i in ifaces), flush=True)
sys.stdin.read()
)";

} // namespace

TEST(ShmRunner, InvalidArgumentsAreReportedByCreate) {
  EXPECT_EQ(ShmModelRunner::create("").status().code(),
            ErrorCode::InvalidArgument);
  ShmOptions O;
  O.Spin = -1us;
  EXPECT_EQ(ShmModelRunner::create("/tmp/x.sock", {}, std::nullopt, O)
                .status()
                .code(),
            ErrorCode::InvalidArgument);
}

TEST(ShmRunner, NoModelIsNotFoundWithinTheOpenDeadline) {
  ShmOptions O;
  O.OpenTimeout = 200ms;
  auto R = ShmModelRunner::create("/tmp/mlbridge-test-absent.sock",
                                  {TensorSpec::create<int64_t>("i")},
                                  TensorSpec::create<int64_t>("a"), O);
  ASSERT_TRUE(R);
  auto Start = Clock::now();
  Expected<int64_t> A = (*R)->evaluate<int64_t>();
  ASSERT_FALSE(A);
  EXPECT_EQ(A.status().code(), ErrorCode::NotFound) << A.status().toString();
  EXPECT_LT(Clock::now() - Start, 2s);
  // Unavailable from now on, at once.
  Start = Clock::now();
  EXPECT_EQ((*R)->evaluate<int64_t>().status().code(), ErrorCode::Unavailable);
  EXPECT_LT(Clock::now() - Start, 50ms);
}

TEST(ShmRunner, TwoRunnersOnTwoThreadsAgainstOnePythonModel) {
  PythonProcess Model(kModel);
  std::vector<std::string> Paths;
  const std::string Line = Model.readLine();
  for (size_t At = 0; At < Line.size();) {
    size_t Space = Line.find(' ', At);
    Paths.push_back(Line.substr(At, Space - At));
    At = Space == std::string::npos ? Line.size() : Space + 1;
  }
  ASSERT_EQ(Paths.size(), 2u) << "the Python model did not start";
  std::vector<std::string> Failures(2);
  auto Compile = [&](size_t T) {
    ShmOptions O;
    O.ReplyTimeout = 20s;
    auto R = ShmModelRunner::create(Paths[T], {TensorSpec::create<int64_t>("i")},
                                    TensorSpec::create<int64_t>("a"), O);
    if (!R) {
      Failures[T] = R.status().toString();
      return;
    }
    for (int64_t I = 0; I < 300; ++I) {
      *(*R)->getTensor<int64_t>(0) = I;
      Expected<int64_t> A = (*R)->evaluate<int64_t>();
      if (!A || *A != 2 * I) {
        Failures[T] = A ? "wrong answer for " + std::to_string(I)
                        : A.status().toString();
        return;
      }
    }
  };
  std::thread A(Compile, 0), B(Compile, 1);
  A.join();
  B.join();
  EXPECT_EQ(Failures[0], "");
  EXPECT_EQ(Failures[1], "");
}

// ---- reliability: deadlines kept against a model that misbehaves (issue 23)

namespace {

/// The model side of docs/shm.md in C++, as little as a fault needs: it
/// listens (with the given listen queue), and on accept() sends the hello
/// and gives the test the mapping to write (or corrupt) itself.
class FakeShmModel {
public:
  explicit FakeShmModel(int Backlog = 1) {
    char T[] = "/tmp/mlbridge-shm-test-XXXXXX";
    EXPECT_NE(::mkdtemp(T), nullptr);
    Dir = T;
    Path = Dir + "/model.sock";
    Listener = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un Addr = address();
    EXPECT_EQ(::bind(Listener, reinterpret_cast<struct sockaddr *>(&Addr),
                     sizeof Addr),
              0);
    EXPECT_EQ(::listen(Listener, Backlog), 0);
  }
  ~FakeShmModel() {
    for (int Fd : {Conn, Memfd, WakeModel, WakeCompiler, Listener})
      if (Fd >= 0)
        ::close(Fd);
    if (Region)
      ::munmap(Region, shm_layout::kControlBytes + 2 * Capacity);
    ::unlink(Path.c_str());
    ::rmdir(Dir.c_str());
  }

  struct sockaddr_un address() const {
    struct sockaddr_un Addr = {};
    Addr.sun_family = AF_UNIX;
    std::memcpy(Addr.sun_path, Path.c_str(), Path.size());
    return Addr;
  }

  /// Accepts one compiler and sends it the hello of a fresh region.
  bool accept() {
    using namespace shm_layout;
    struct pollfd P = {Listener, POLLIN, 0};
    if (::poll(&P, 1, 5000) != 1)
      return false;
    Conn = ::accept4(Listener, nullptr, nullptr, SOCK_CLOEXEC);
    Memfd = ::memfd_create("mlbridge-shm-test", MFD_CLOEXEC);
    const size_t Bytes = kControlBytes + 2 * Capacity;
    if (Conn < 0 || Memfd < 0 || ::ftruncate(Memfd, Bytes) != 0)
      return false;
    void *M = ::mmap(nullptr, Bytes, PROT_READ | PROT_WRITE, MAP_SHARED, Memfd, 0);
    if (M == MAP_FAILED)
      return false;
    Region = static_cast<unsigned char *>(M);
    setWord(kMagicOffset, kMagic);
    setWord(kVersionOffset, kVersion);
    setWord(kCapacityOffset, Capacity);
    WakeModel = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    WakeCompiler = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    const uint64_t Hello[3] = {kMagic, kVersion, Capacity};
    static_assert(sizeof Hello == kHelloBytes, "magic, version and flags, capacity");
    const int Fds[3] = {Memfd, WakeModel, WakeCompiler};
    alignas(struct cmsghdr) char Control[CMSG_SPACE(sizeof Fds)] = {};
    struct iovec Iov = {const_cast<uint64_t *>(Hello), sizeof Hello};
    struct msghdr Msg = {};
    Msg.msg_iov = &Iov;
    Msg.msg_iovlen = 1;
    Msg.msg_control = Control;
    Msg.msg_controllen = sizeof Control;
    struct cmsghdr *C = CMSG_FIRSTHDR(&Msg);
    C->cmsg_level = SOL_SOCKET;
    C->cmsg_type = SCM_RIGHTS;
    C->cmsg_len = CMSG_LEN(sizeof Fds);
    std::memcpy(CMSG_DATA(C), Fds, sizeof Fds);
    return ::sendmsg(Conn, &Msg, MSG_NOSIGNAL) == sizeof Hello;
  }

  /// Waits (up to 5 s) until the compiler has published a request.
  bool awaitRequest() {
    auto Until = Clock::now() + std::chrono::seconds(5);
    while (word(shm_layout::kRequestHead) == 0)
      if (Clock::now() > Until)
        return false;
      else
        std::this_thread::sleep_for(1ms);
    return true;
  }

  uint64_t word(size_t Offset) const {
    return __atomic_load_n(reinterpret_cast<uint64_t *>(Region + Offset),
                           __ATOMIC_ACQUIRE);
  }
  void setWord(size_t Offset, uint64_t V) {
    __atomic_store_n(reinterpret_cast<uint64_t *>(Region + Offset), V,
                     __ATOMIC_RELEASE);
  }
  unsigned char *replyRing() {
    return Region + shm_layout::kControlBytes + Capacity;
  }
  /// Publishes the reply ring up to Head and wakes the compiler.
  void publishReplies(uint64_t Head) {
    setWord(shm_layout::kReplyHead, Head);
    const uint64_t One = 1;
    (void)!::write(WakeCompiler, &One, sizeof One);
  }

  const uint64_t Capacity = shm_layout::kMinCapacity;
  std::string Dir, Path;
  int Listener = -1, Conn = -1, Memfd = -1, WakeModel = -1, WakeCompiler = -1;
  unsigned char *Region = nullptr;
};

std::unique_ptr<ShmModelRunner> makeRunner(const std::string &Path,
                                           ShmOptions O) {
  return test::makeRunner<ShmModelRunner>(Path, O);
}

/// One evaluation under a watchdog; Took: how long it took, in seconds.
Expected<int64_t> evaluateTimed(ShmModelRunner &R, double &Took) {
  Watchdog Dog(10s);
  auto Start = Clock::now();
  Expected<int64_t> A = R.evaluate<int64_t>();
  Took = test::secondsSince(Start);
  return A;
}

} // namespace

// A blocking connect() to a listener whose queue is full waits in the
// kernel until the model accepts: forever, for a model that is stopped or
// stuck. The open deadline must hold.
TEST(ShmReliability, FullListenQueueIsATimeoutAtTheOpenDeadline) {
  FakeShmModel Model(/*Backlog=*/0); // never accepts
  std::vector<int> Queued;
  for (int I = 0; I < 64; ++I) {
    int S = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_un Addr = Model.address();
    if (::connect(S, reinterpret_cast<struct sockaddr *>(&Addr), sizeof Addr) != 0) {
      EXPECT_EQ(errno, EAGAIN) << std::strerror(errno);
      ::close(S);
      break;
    }
    Queued.push_back(S);
  }
  ASSERT_FALSE(Queued.empty());
  ASSERT_LT(Queued.size(), 64u) << "the listen queue never filled";
  ShmOptions O;
  O.OpenTimeout = 300ms;
  auto R = makeRunner(Model.Path, O);
  double Took;
  Expected<int64_t> A = evaluateTimed(*R, Took);
  for (int S : Queued)
    ::close(S);
  ASSERT_FALSE(A);
  EXPECT_EQ(A.status().code(), ErrorCode::Timeout) << A.status().toString();
  EXPECT_NE(A.status().message().find("listen queue is full"), std::string::npos)
      << A.status().toString();
  EXPECT_GE(Took, 0.29);
  EXPECT_LT(Took, 2.0);
}

namespace {

/// A corruption of the reply ring, written by the model once the
/// compiler's first request is there.
struct RingFault {
  const char *Name;
  const char *Problem; // what the error must say
  std::function<void(FakeShmModel &)> Write;
};

void PrintTo(const RingFault &F, std::ostream *OS) { *OS << F.Name; }

class ShmCorruptReplyRing : public ::testing::TestWithParam<RingFault> {};

} // namespace

// The compiler must report a corrupt ring at once, precisely, and never
// walk it (a reader that follows every wrap marker under a head 2^62 bytes
// ahead spins for hours) nor wait for bytes a marker promised.
TEST_P(ShmCorruptReplyRing, IsMalformedAtOnce) {
  FakeShmModel Model;
  std::thread Fake([&] {
    if (Model.accept() && Model.awaitRequest())
      GetParam().Write(Model);
  });
  ShmOptions O;
  O.ReplyTimeout = 3s;
  auto R = makeRunner(Model.Path, O);
  double Took;
  Expected<int64_t> A = evaluateTimed(*R, Took);
  Fake.join();
  ASSERT_FALSE(A) << "got " << *A;
  EXPECT_EQ(A.status().code(), ErrorCode::Malformed) << A.status().toString();
  EXPECT_NE(A.status().message().find("corrupt reply ring"), std::string::npos)
      << A.status().toString();
  EXPECT_NE(A.status().message().find(GetParam().Problem), std::string::npos)
      << A.status().toString();
  EXPECT_LT(Took, 2.0);
  EXPECT_TRUE(R->isUnavailable());
}

INSTANTIATE_TEST_SUITE_P(
    Faults, ShmCorruptReplyRing,
    ::testing::Values(
        RingFault{"HeadFarAheadOverWrapMarkers", "more than the ring's capacity",
                  [](FakeShmModel &M) {
                    std::memset(M.replyRing(), 0xFF, M.Capacity);
                    M.publishReplies(uint64_t(1) << 62);
                  }},
        RingFault{"WrapMarkerAtTheRingsStart", "wrap marker at the ring's start",
                  [](FakeShmModel &M) {
                    std::memset(M.replyRing(), 0xFF, 8);
                    M.publishReplies(M.Capacity);
                  }},
        RingFault{"LengthPastTheRingsEnd", "past the ring's end",
                  [](FakeShmModel &M) {
                    const uint64_t Length = M.Capacity;
                    std::memcpy(M.replyRing(), &Length, 8);
                    M.publishReplies(64);
                  }}),
    [](const auto &Info) { return std::string(Info.param.Name); });
