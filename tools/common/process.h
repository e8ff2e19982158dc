//===- process.h - Start, watch and stop a child process (tools) ----------===//
//
// The one child-process helper of the project's programs (the demo, the
// benchmark). Every child is killed if still running when its ChildProcess
// is destroyed, and killAllChildren() kills every child still running (for
// a program's error exit or signal handler); every wait has a deadline.
//
//===----------------------------------------------------------------------===//
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
  /// Inherit: the child shares this process's stdin and stdout. Pipes: its
  /// stdin and stdout are pipes to this process (input(), output()).
  enum class Stdio { Inherit, Pipes };

  ChildProcess() = default;
  ChildProcess(ChildProcess &&O) noexcept;
  ChildProcess &operator=(ChildProcess &&O) noexcept;
  ChildProcess(const ChildProcess &) = delete;
  ChildProcess &operator=(const ChildProcess &) = delete;
  ~ChildProcess();

  /// Starts Argv[0] (searched in PATH) with extra environment variables
  /// (prepended to existing PATH-like values is the caller's business).
  Status spawn(const std::vector<std::string> &Argv,
               const std::vector<std::pair<std::string, std::string>> &Env =
                   {},
               Stdio Io = Stdio::Inherit);
  /// Takes over a child made by fork(): killed and reaped as if spawned.
  void adopt(pid_t Child);
  pid_t pid() const { return Pid; }

  /// The write end of the child's stdin and the read end of its stdout
  /// (Stdio::Pipes), or -1.
  int input() const { return In; }
  int output() const { return Out; }
  /// Closes the child's stdin: EOF, the usual "please exit".
  void closeInput();
  /// One line of the child's stdout without its newline, within Timeout.
  /// Timeout on timeout, PeerClosed on EOF before a newline.
  Expected<std::string> readLine(std::chrono::milliseconds Timeout);

  /// Waits up to Timeout for exit; returns the exit status (128+signal for
  /// a signal). On timeout the child is killed and Timeout is returned.
  Expected<int> wait(std::chrono::milliseconds Timeout);
  /// Sends SIGKILL and reaps the child.
  void kill();

private:
  void closePipes();
  pid_t Pid = -1;
  int In = -1, Out = -1;
};

/// Sends SIGKILL to every child of a live ChildProcess and reaps them.
/// Safe in a signal handler only as a best effort (it skips the work when
/// another thread holds the registry).
void killAllChildren();

} // namespace mlbridge

#endif // MLBRIDGE_TOOLS_PROCESS_H
