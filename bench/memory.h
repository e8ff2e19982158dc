//===- bench/memory.h - Small messages and memory growth -------------------===//
#ifndef MLBRIDGE_BENCH_MEMORY_H
#define MLBRIDGE_BENCH_MEMORY_H

#include "runners.h"

namespace bench {

/// One float in, one int out (the in-process models: one float out),
/// N2 times: the small-message latency and the RSS of this process (and of
/// the Python model) after N1 calls, half-way and after N2 calls. Writes
/// the small and memory rows.
void smallAndMemory(const RunnerDef &D);

} // namespace bench

#endif // MLBRIDGE_BENCH_MEMORY_H
