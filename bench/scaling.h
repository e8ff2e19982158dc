//===- bench/scaling.h - K compiler processes against one Python model -----===//
#ifndef MLBRIDGE_BENCH_SCALING_H
#define MLBRIDGE_BENCH_SCALING_H

#include <string>

namespace bench {

/// Throughput of 1, 2, 4 and 8 worker processes (this program with
/// --worker) sending 1000-float requests to one Python model of Kind
/// (pipe: one channel each, one event loop; shm: one socket; grpc: one
/// server). Writes the scaling rows.
void scaling(const std::string &Kind, const std::string &Serdes);

/// `mlbridge-bench --worker KIND --target T --serdes S --n N --count C`:
/// connects, says "ready", waits for a byte on stdin, sends C requests and
/// prints {"start_us":...,"end_us":...,"count":C}.
int workerMain(int Argc, char **Argv);

} // namespace bench

#endif // MLBRIDGE_BENCH_SCALING_H
