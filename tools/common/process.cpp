#include "process.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace mlbridge {

namespace {
// The children of live ChildProcess objects, for killAllChildren().
std::mutex RegistryLock;
std::vector<pid_t> Registry;

void registerChild(pid_t P) {
  std::lock_guard<std::mutex> G(RegistryLock);
  Registry.push_back(P);
}
void unregisterChild(pid_t P) {
  std::lock_guard<std::mutex> G(RegistryLock);
  Registry.erase(std::remove(Registry.begin(), Registry.end(), P),
                 Registry.end());
}
} // namespace

void killAllChildren() {
  std::unique_lock<std::mutex> G(RegistryLock, std::try_to_lock);
  if (!G.owns_lock())
    return;
  for (pid_t P : Registry)
    ::kill(P, SIGKILL);
  for (pid_t P : Registry)
    while (::waitpid(P, nullptr, 0) < 0 && errno == EINTR) {
    }
  Registry.clear();
}

ChildProcess::ChildProcess(ChildProcess &&O) noexcept
    : Pid(std::exchange(O.Pid, -1)), In(std::exchange(O.In, -1)),
      Out(std::exchange(O.Out, -1)) {}

ChildProcess &ChildProcess::operator=(ChildProcess &&O) noexcept {
  if (this != &O) {
    kill();
    closePipes();
    Pid = std::exchange(O.Pid, -1);
    In = std::exchange(O.In, -1);
    Out = std::exchange(O.Out, -1);
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  kill();
  closePipes();
}

Status ChildProcess::spawn(
    const std::vector<std::string> &Argv,
    const std::vector<std::pair<std::string, std::string>> &Env, Stdio Io) {
  if (Argv.empty())
    return Status(ErrorCode::InvalidArgument, "empty command");
  if (Pid > 0)
    return Status(ErrorCode::InvalidArgument, "a child is already running");
  std::vector<char *> CArgs;
  for (const std::string &A : Argv)
    CArgs.push_back(const_cast<char *>(A.c_str()));
  CArgs.push_back(nullptr);

  std::vector<std::string> EnvStrings;
  for (char **E = environ; *E; ++E) {
    bool Overridden = false;
    for (const auto &KV : Env)
      if (std::strncmp(*E, (KV.first + "=").c_str(), KV.first.size() + 1) ==
          0)
        Overridden = true;
    if (!Overridden)
      EnvStrings.emplace_back(*E);
  }
  for (const auto &KV : Env)
    EnvStrings.push_back(KV.first + "=" + KV.second);
  std::vector<char *> CEnv;
  for (std::string &E : EnvStrings)
    CEnv.push_back(E.data());
  CEnv.push_back(nullptr);

  // Pipes are close-on-exec; the child gets its ends as fds 0 and 1.
  int ToChild[2] = {-1, -1}, FromChild[2] = {-1, -1};
  posix_spawn_file_actions_t FA;
  posix_spawn_file_actions_init(&FA);
  if (Io == Stdio::Pipes) {
    if (::pipe2(ToChild, O_CLOEXEC) || ::pipe2(FromChild, O_CLOEXEC)) {
      int Err = errno;
      for (int Fd : {ToChild[0], ToChild[1]})
        if (Fd >= 0)
          ::close(Fd);
      posix_spawn_file_actions_destroy(&FA);
      return Status(ErrorCode::IOError,
                    std::string("pipe: ") + std::strerror(Err));
    }
    posix_spawn_file_actions_adddup2(&FA, ToChild[0], 0);
    posix_spawn_file_actions_adddup2(&FA, FromChild[1], 1);
  }
  int Err = ::posix_spawnp(&Pid, CArgs[0], &FA, nullptr, CArgs.data(),
                           CEnv.data());
  posix_spawn_file_actions_destroy(&FA);
  if (Io == Stdio::Pipes) {
    ::close(ToChild[0]);
    ::close(FromChild[1]);
    In = ToChild[1];
    Out = FromChild[0];
  }
  if (Err != 0) {
    Pid = -1;
    closePipes();
    return Status(ErrorCode::IOError,
                  "cannot run '" + Argv[0] + "': " + std::strerror(Err));
  }
  registerChild(Pid);
  return Status::ok();
}

void ChildProcess::adopt(pid_t Child) {
  kill();
  Pid = Child;
  registerChild(Pid);
}

void ChildProcess::closeInput() {
  if (In >= 0)
    ::close(In);
  In = -1;
}

void ChildProcess::closePipes() {
  closeInput();
  if (Out >= 0)
    ::close(Out);
  Out = -1;
}

Expected<std::string> ChildProcess::readLine(std::chrono::milliseconds Timeout) {
  if (Out < 0)
    return Status(ErrorCode::InvalidArgument, "the child's stdout is not a pipe");
  std::string Line;
  auto Until = std::chrono::steady_clock::now() + Timeout;
  for (;;) {
    auto Left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    Until - std::chrono::steady_clock::now())
                    .count();
    if (Left <= 0)
      return Status(ErrorCode::Timeout, "no line from the child in time");
    pollfd P{Out, POLLIN, 0};
    int R = ::poll(&P, 1, int(Left));
    if (R < 0 && errno == EINTR)
      continue;
    if (R < 0)
      return Status(ErrorCode::IOError,
                    std::string("poll: ") + std::strerror(errno));
    if (R == 0)
      continue; // the deadline check above ends the wait
    char C;
    ssize_t K = ::read(Out, &C, 1);
    if (K < 0 && errno == EINTR)
      continue;
    if (K <= 0)
      return Status(ErrorCode::PeerClosed, "the child closed its stdout");
    if (C == '\n')
      return Line;
    Line += C;
  }
}

Expected<int> ChildProcess::wait(std::chrono::milliseconds Timeout) {
  if (Pid <= 0)
    return Status(ErrorCode::InvalidArgument, "no child process");
  auto Until = std::chrono::steady_clock::now() + Timeout;
  for (;;) {
    int WStatus = 0;
    pid_t R = ::waitpid(Pid, &WStatus, WNOHANG);
    if (R == Pid) {
      unregisterChild(Pid);
      Pid = -1;
      if (WIFEXITED(WStatus))
        return WEXITSTATUS(WStatus);
      return 128 + WTERMSIG(WStatus);
    }
    if (R < 0 && errno != EINTR) {
      unregisterChild(Pid);
      Pid = -1;
      return Status(ErrorCode::IOError,
                    std::string("waitpid: ") + std::strerror(errno));
    }
    if (std::chrono::steady_clock::now() >= Until) {
      kill();
      return Status(ErrorCode::Timeout, "child did not exit in time");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void ChildProcess::kill() {
  if (Pid <= 0)
    return;
  ::kill(Pid, SIGKILL);
  int WStatus;
  while (::waitpid(Pid, &WStatus, 0) < 0 && errno == EINTR) {
  }
  unregisterChild(Pid);
  Pid = -1;
}

} // namespace mlbridge
