// Helpers of the stream runners' tests (test_pipe_runner.cpp,
// test_shm_runner.cpp): a runner with one int64 feature, a watchdog for
// calls that could hang, and a Python process playing the model side.
#ifndef MLBRIDGE_TESTS_CPP_STREAM_TEST_UTIL_H
#define MLBRIDGE_TESTS_CPP_STREAM_TEST_UTIL_H

#include "mlbridge/stream_model_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace mlbridge::test {

/// A runner of feature "i" and advice "twice" (both int64) for Where.
template <typename Runner, typename Options>
std::unique_ptr<Runner> makeRunner(const std::string &Where, Options O) {
  auto R = Runner::create(Where, {TensorSpec::create<int64_t>("i")},
                          TensorSpec::create<int64_t>("twice"), O);
  EXPECT_TRUE(R) << R.status().toString();
  return R ? std::move(*R) : nullptr;
}

inline double secondsSince(std::chrono::steady_clock::time_point T) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - T)
      .count();
}

/// Fails the whole test program if a call hangs (a spinning loop, or a
/// call blocked in the kernel, cannot be interrupted from inside the test).
class Watchdog {
public:
  explicit Watchdog(std::chrono::seconds Limit)
      : Thread([this, Limit] {
          auto Until = std::chrono::steady_clock::now() + Limit;
          while (!Done && std::chrono::steady_clock::now() < Until)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          if (!Done) {
            std::fprintf(stderr, "watchdog: the call did not return\n");
            std::_Exit(1);
          }
        }) {}
  ~Watchdog() {
    Done = true;
    Thread.join();
  }

private:
  std::atomic<bool> Done{false};
  std::thread Thread;
};

#if defined(MLBRIDGE_TEST_PYTHON) && defined(MLBRIDGE_TEST_SOURCE_DIR)
/// `python -c Script Args...` with mlbridge on its path; stdin and stdout
/// are pipes to the test. Killed (if still there) on destruction.
class PythonProcess {
public:
  PythonProcess(const char *Script, std::vector<std::string> Args = {}) {
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
    std::vector<char *> Argv = {const_cast<char *>(MLBRIDGE_TEST_PYTHON),
                                const_cast<char *>("-c"),
                                const_cast<char *>(Script)};
    for (std::string &A : Args)
      Argv.push_back(A.data());
    Argv.push_back(nullptr);
    if (posix_spawn(&Pid, Argv[0], &FA, nullptr, Argv.data(), Envp.data()) != 0)
      Pid = -1;
    posix_spawn_file_actions_destroy(&FA);
    ::close(In[0]);
    ::close(Out[1]);
    Stdin = In[1];
    Stdout = Out[0];
  }
  ~PythonProcess() {
    closeStdin();
    if (Stdout >= 0)
      ::close(Stdout);
    if (Pid > 0) {
      ::kill(Pid, SIGKILL);
      ::waitpid(Pid, nullptr, 0);
    }
  }
  /// The next line the process printed (empty after 30 s without one).
  std::string readLine() {
    std::string Line;
    char C;
    struct pollfd P = {Stdout, POLLIN, 0};
    while (::poll(&P, 1, 30000) == 1 && ::read(Stdout, &C, 1) == 1 && C != '\n')
      Line += C;
    return Line;
  }
  /// Ends the process's input (a model waiting on stdin exits).
  void closeStdin() {
    if (Stdin >= 0)
      ::close(Stdin);
    Stdin = -1;
  }

private:
  pid_t Pid = -1;
  int Stdin = -1, Stdout = -1;
};
#endif

} // namespace mlbridge::test

#endif // MLBRIDGE_TESTS_CPP_STREAM_TEST_UTIL_H
