#include "process.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace mlbridge {

ChildProcess::~ChildProcess() { kill(); }

Status ChildProcess::spawn(
    const std::vector<std::string> &Argv,
    const std::vector<std::pair<std::string, std::string>> &Env) {
  if (Argv.empty())
    return Status(ErrorCode::InvalidArgument, "empty command");
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

  int Err = ::posix_spawnp(&Pid, CArgs[0], nullptr, nullptr, CArgs.data(),
                           CEnv.data());
  if (Err != 0) {
    Pid = -1;
    return Status(ErrorCode::IOError,
                  "cannot run '" + Argv[0] + "': " + std::strerror(Err));
  }
  return Status::ok();
}

Expected<int> ChildProcess::wait(std::chrono::milliseconds Timeout) {
  if (Pid <= 0)
    return Status(ErrorCode::InvalidArgument, "no child process");
  auto Until = std::chrono::steady_clock::now() + Timeout;
  for (;;) {
    int WStatus = 0;
    pid_t R = ::waitpid(Pid, &WStatus, WNOHANG);
    if (R == Pid) {
      Pid = -1;
      if (WIFEXITED(WStatus))
        return WEXITSTATUS(WStatus);
      return 128 + WTERMSIG(WStatus);
    }
    if (R < 0 && errno != EINTR) {
      Pid = -1;
      return Status(ErrorCode::IOError,
                    std::string("waitpid: ") + std::strerror(errno));
    }
    if (std::chrono::steady_clock::now() >= Until) {
      kill();
      return Status(ErrorCode::Timeout, "child did not exit in time");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void ChildProcess::kill() {
  if (Pid <= 0)
    return;
  ::kill(Pid, SIGKILL);
  int WStatus;
  while (::waitpid(Pid, &WStatus, 0) < 0 && errno == EINTR) {
  }
  Pid = -1;
}

} // namespace mlbridge
