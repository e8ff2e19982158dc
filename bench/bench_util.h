//===- bench/bench_util.h - Helpers shared by mlbridge-bench's files -------===//
//
// Timing, statistics and child-process handling of mlbridge-bench
// (defined in mlbridge_bench.cpp). Every child is tracked and killed on any
// exit; every wait on one has a deadline.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_BENCH_UTIL_H
#define MLBRIDGE_BENCH_UTIL_H

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include <sys/types.h>

namespace bench {

double nowUs();
double median(std::vector<double> V);
double pct(std::vector<double> V, double P);

/// Prints the message, kills the children and exits with status 1.
[[noreturn]] void die(const std::string &Msg);
/// Registers a child to kill on exit.
void track(pid_t P);
/// Waits up to Timeout for P (killed after that); returns its wait status.
int reap(pid_t P, std::chrono::milliseconds Timeout);
/// A private directory under /tmp, removed on exit.
std::string makeTmpDir(const char *Prefix);

bool readAll(int Fd, void *B, size_t N);
bool writeAll(int Fd, const void *B, size_t N);

struct Spawned {
  pid_t Pid = -1;
  int In = -1;  // child's stdin (we write; closing it tells the child to exit)
  int Out = -1; // child's stdout
};
Spawned spawn(const std::vector<std::string> &Argv);
/// One line from Fd within Timeout ("" on timeout or EOF).
std::string readLine(int Fd, std::chrono::milliseconds Timeout);

} // namespace bench

#endif // MLBRIDGE_BENCH_UTIL_H
