//===- bench/output.cpp - mlbridge-bench's result rows and files -----------===//
#include "output.h"

#include "bench_util.h"
#include "support/json.h"

#include <cstdio>
#include <fstream>
#include <sys/stat.h>

namespace bench {

namespace {
std::vector<Row> Rows;

/// Three decimals, as the CSV; NaN (not measured) is null.
void appendNumber(std::string &Out, double V) {
  if (std::isnan(V)) {
    Out += "null";
    return;
  }
  mlbridge::json::appendDouble(Out, std::round(V * 1000) / 1000);
}

std::string jsonRow(const Row &R) {
  using namespace mlbridge::json;
  std::string O = "{";
  // Starts the member K (after a comma unless it is the first); returns
  // the text, for the value.
  auto Key = [&O](std::string_view K) -> std::string & {
    if (O.size() > 1)
      O += ',';
    appendQuoted(O, K);
    O += ':';
    return O;
  };
  appendQuoted(Key("section"), R.Section);
  appendQuoted(Key("runner"), R.Runner);
  appendQuoted(Key("serdes"), R.Serdes);
  appendInteger(Key("n"), R.N);
  appendNumber(Key("median_us"), R.MedianUs);
  appendNumber(Key("p90_us"), R.P90Us);
  Key("floor");
  if (R.Floor.empty())
    O += "null";
  else
    appendQuoted(O, R.Floor);
  appendNumber(Key("floor_us"), R.FloorUs);
  appendNumber(Key("ratio"), R.MedianUs / R.FloorUs);
  for (auto &[K, V] : R.Extra)
    appendNumber(Key(K), V);
  O += '}';
  return O;
}

std::string csvNumber(double V) {
  if (std::isnan(V))
    return "null";
  char B[64];
  std::snprintf(B, sizeof B, "%.3f", V);
  return B;
}
} // namespace

void add(Row R) {
  if (Cfg.Json) {
    std::printf("%s\n", jsonRow(R).c_str());
    std::fflush(stdout);
  }
  Rows.push_back(std::move(R));
}

void record(Row R) { Rows.push_back(std::move(R)); }

void writeOutputs() {
  ::mkdir(Cfg.OutDir.c_str(), 0755);
  std::ofstream J(Cfg.OutDir + "/results.jsonl");
  for (auto &R : Rows)
    J << jsonRow(R) << "\n";
  std::ofstream C(Cfg.OutDir + "/results.csv");
  C << "section,runner,serdes,n,median_us,p90_us,floor,floor_us,ratio\n";
  for (auto &R : Rows)
    C << R.Section << "," << R.Runner << "," << R.Serdes << "," << R.N << ","
      << csvNumber(R.MedianUs) << "," << csvNumber(R.P90Us) << "," << R.Floor
      << "," << csvNumber(R.FloorUs) << ","
      << csvNumber(R.MedianUs / R.FloorUs) << "\n";
  C.close();
  // The plot: matplotlib, through the project's Python (optional).
  mlbridge::ChildProcess P =
      spawnPiped({Cfg.Python, Cfg.BenchDir + "/plot_rtt.py",
                  Cfg.OutDir + "/results.csv", Cfg.OutDir + "/rtt.png"});
  P.closeInput();
  readLine(P, std::chrono::seconds(120));
  int St = finish(P, std::chrono::seconds(30));
  if (FILE *F = std::fopen("/proc/loadavg", "r")) {
    char B[128] = {0};
    if (std::fgets(B, sizeof B, F))
      say("load average at the end: %s", B);
    std::fclose(F);
  }
  say("outputs: %s/results.jsonl, %s/results.csv%s\n", Cfg.OutDir.c_str(),
      Cfg.OutDir.c_str(),
      St == 0 ? (", " + Cfg.OutDir + "/rtt.png").c_str()
              : " (no plot: matplotlib missing?)");
}

} // namespace bench
