// ShmModelRunner from C++: argument checks, a missing model, and two
// runners on two threads against one real Python model process (one
// ShmCompilerInterface per channel). Named threads.* for ThreadSanitizer.
#include "mlbridge/shm_model_runner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using namespace mlbridge;
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

/// A Python model process; killed (if still there) on destruction.
class PythonModel {
public:
  PythonModel() {
    int In[2], Out[2];
    if (::pipe(In) || ::pipe(Out))
      return;
    posix_spawn_file_actions_t FA;
    posix_spawn_file_actions_init(&FA);
    posix_spawn_file_actions_adddup2(&FA, In[0], 0);
    posix_spawn_file_actions_adddup2(&FA, Out[1], 1);
    posix_spawn_file_actions_addclose(&FA, In[1]);
    posix_spawn_file_actions_addclose(&FA, Out[0]);
    std::string Env = "PYTHONPATH=" MLBRIDGE_TEST_SOURCE_DIR "/python";
    std::vector<char *> Envp;
    for (char **E = environ; *E; ++E)
      Envp.push_back(*E);
    Envp.push_back(Env.data());
    Envp.push_back(nullptr);
    const char *Argv[] = {MLBRIDGE_TEST_PYTHON, "-c", kModel, nullptr};
    if (posix_spawn(&Pid, Argv[0], &FA, nullptr, const_cast<char **>(Argv),
                    Envp.data()) != 0)
      Pid = -1;
    posix_spawn_file_actions_destroy(&FA);
    ::close(In[0]);
    ::close(Out[1]);
    Stdin = In[1];
    Stdout = Out[0];
  }
  ~PythonModel() {
    if (Stdin >= 0)
      ::close(Stdin);
    if (Stdout >= 0)
      ::close(Stdout);
    if (Pid > 0) {
      ::kill(Pid, SIGKILL);
      ::waitpid(Pid, nullptr, 0);
    }
  }
  /// The socket paths the model printed (empty after 30 s without).
  std::vector<std::string> paths() {
    std::string Line;
    char C;
    struct pollfd P = {Stdout, POLLIN, 0};
    while (::poll(&P, 1, 30000) == 1 && ::read(Stdout, &C, 1) == 1 && C != '\n')
      Line += C;
    std::vector<std::string> Paths;
    for (size_t At = 0; At < Line.size();) {
      size_t Space = Line.find(' ', At);
      Paths.push_back(Line.substr(At, Space - At));
      At = Space == std::string::npos ? Line.size() : Space + 1;
    }
    return Paths;
  }

private:
  pid_t Pid = -1;
  int Stdin = -1, Stdout = -1;
};

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
  PythonModel Model;
  std::vector<std::string> Paths = Model.paths();
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
