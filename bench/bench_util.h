//===- bench/bench_util.h - What every part of mlbridge-bench shares -------===//
//
// The configuration (command line), timing and statistics, the human
// output, error exits, temporary directories and child processes of
// mlbridge-bench. Children are tools/common's ChildProcess: killed on any
// exit (die(), a signal, the end of main); every wait has a deadline.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_BENCH_UTIL_H
#define MLBRIDGE_BENCH_UTIL_H

#include "process.h"

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace bench {

constexpr int kMaxN = 50000; ///< the largest vector of the sweep

struct Config {
  bool Quick = false;
  bool Json = false; ///< rows as JSON lines on stdout, the rest on stderr
  bool Scaling = true;
  bool Memory = true;
  int Reps = 0; ///< 0: default for the mode
  std::string OutDir = "bench-results";
  std::string Python = MLBRIDGE_BENCH_PYTHON;
  std::string BenchDir = MLBRIDGE_BENCH_SOURCE_DIR;
  std::string FcDir = MLBRIDGE_BENCH_FC_DIR; ///< fc_<n>.onnx
  std::string Self;                          ///< this program
  std::string Only; ///< --only A,B: runners whose "name+serdes" has A or B
};
extern Config Cfg;

/// The vector sizes of the sweep and the samples per size.
std::vector<int> sizes();
int reps();
/// --only: whether a runner named "name+serdes" is measured.
bool selected(const std::string &Name);

double nowUs();
double median(std::vector<double> V);
double pct(std::vector<double> V, double P);

/// Human output: stdout, or stderr with --json (stdout is JSON then).
void say(const char *Fmt, ...) __attribute__((format(printf, 1, 2)));

/// Prints the message, kills the children, removes the temporary
/// directories and exits with status 1.
[[noreturn]] void die(const std::string &Msg);
/// Kills the children on SIGINT/SIGTERM and removes the temporary
/// directories and children on exit.
void cleanUpOnExit();
/// A private directory under /tmp, removed on exit.
std::string makeTmpDir(const char *Prefix);

/// All N bytes, retrying after EINTR; on a non-blocking fd they spin
/// (cpuRelax) until the bytes are there. False at EOF or on an error.
bool readAll(int Fd, void *B, size_t N);
bool writeAll(int Fd, const void *B, size_t N);
/// A pause for spin loops (the CPU's spin-wait hint).
void cpuRelax();

/// Starts Argv with its stdin and stdout piped to us; dies if it cannot.
mlbridge::ChildProcess spawnPiped(const std::vector<std::string> &Argv);
/// One line of the child's stdout within Timeout ("" on timeout or EOF).
std::string readLine(mlbridge::ChildProcess &C,
                     std::chrono::milliseconds Timeout);
/// Closes the child's stdin (our children exit on EOF) and waits up to
/// Timeout; the exit status, or -1 when it had to be killed.
int finish(mlbridge::ChildProcess &C, std::chrono::milliseconds Timeout);

/// VmRSS (or another "<Field>: N kB" line of /proc/<P>/status; P = 0:
/// this process) in kB, or -1.
long statusKb(pid_t P, const std::string &Field);
inline long rssKb() { return statusKb(0, "VmRSS"); }

} // namespace bench

#endif // MLBRIDGE_BENCH_UTIL_H
