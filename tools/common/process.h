//===- process.h - Start, watch and stop a child process (tools) ----------===//
#ifndef MLBRIDGE_TOOLS_PROCESS_H
#define MLBRIDGE_TOOLS_PROCESS_H

#include "mlbridge/status.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace mlbridge {

/// A child process that is killed if still running when this is destroyed.
class ChildProcess {
public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess &) = delete;
  ChildProcess &operator=(const ChildProcess &) = delete;
  ~ChildProcess();

  /// Starts Argv[0] (searched in PATH) with extra environment variables
  /// (prepended to existing PATH-like values is the caller's business).
  Status spawn(const std::vector<std::string> &Argv,
               const std::vector<std::pair<std::string, std::string>> &Env);
  pid_t pid() const { return Pid; }
  /// Waits up to Timeout for exit; returns the exit status (128+signal for
  /// a signal). On timeout the child is killed and Timeout is returned.
  Expected<int> wait(std::chrono::milliseconds Timeout);
  /// Sends SIGKILL and reaps the child.
  void kill();

private:
  pid_t Pid = -1;
};

} // namespace mlbridge

#endif // MLBRIDGE_TOOLS_PROCESS_H
