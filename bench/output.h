//===- bench/output.h - mlbridge-bench's result rows and files -------------===//
//
// Every measurement is a Row: printed as a JSON line with --json, and
// written at the end to <out-dir>/results.jsonl and results.csv (plus
// rtt.png when matplotlib is there). docs/performance.md names the fields.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_BENCH_OUTPUT_H
#define MLBRIDGE_BENCH_OUTPUT_H

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace bench {

struct Row {
  std::string Section; ///< machine, rtt, small, scaling, memory, total
  std::string Runner, Serdes;
  long N = 0; ///< floats per request (rtt), calls (memory), ...
  double MedianUs = NAN, P90Us = NAN;
  std::string Floor; ///< floor name
  double FloorUs = NAN;
  std::vector<std::pair<std::string, double>> Extra;
};

/// Records R (and prints it with --json).
void add(Row R);
/// Records R for the files only (the machine row).
void record(Row R);
/// results.jsonl, results.csv and the plot under Cfg.OutDir.
void writeOutputs();

} // namespace bench

#endif // MLBRIDGE_BENCH_OUTPUT_H
