//===- bench/sweep.h - The round-trip sweep against the floors -------------===//
//
// The paper's workload: for every vector size, the runners' round-trip
// times next to the floors of their transports (bench/floors.h) and of
// the in-process runners (the layer as a hand-written loop), measured in
// the same run. Writes the rtt and total rows and the tables.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_BENCH_SWEEP_H
#define MLBRIDGE_BENCH_SWEEP_H

#include "runners.h"

#include <string>
#include <vector>

namespace bench {

/// Measures the floors and every runner of Defs; returns the runners that
/// beat their floor beyond noise (a broken floor; empty when all is well).
std::vector<std::string> sweep(const std::vector<RunnerDef> &Defs);

/// The workload's input of N floats (the same in every process).
std::vector<float> input(int N);

} // namespace bench

#endif // MLBRIDGE_BENCH_SWEEP_H
