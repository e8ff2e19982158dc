// mlbridge-demo: the project's main job in one program. It plays a compiler
// pass that asks a Python model for advice over named pipes, once with each
// SerDes, starting the model process itself (no server to start by hand).
#include "mlbridge/pipe_model_runner.h"
#include "process.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

using namespace mlbridge;

namespace {

struct Args {
  std::string Python = MLBRIDGE_DEFAULT_PYTHON;
  std::string PackageDir = MLBRIDGE_PYTHON_PACKAGE_DIR;
  std::vector<SerDesKind> Formats = {SerDesKind::Bitstream, SerDesKind::Json};
  bool Verbose = false;
};

void usage() {
  std::fprintf(stderr,
               "usage: mlbridge-demo [--serdes bitstream|json|both] "
               "[--python PATH] [--verbose]\n");
}

bool parseArgs(int Argc, char **Argv, Args &A) {
  for (int I = 1; I < Argc; ++I) {
    std::string Arg = Argv[I];
    if (Arg == "--python" && I + 1 < Argc) {
      A.Python = Argv[++I];
    } else if (Arg == "--serdes" && I + 1 < Argc) {
      std::string V = Argv[++I];
      if (V == "both")
        continue;
      Expected<SerDesKind> K = serdesKindFromName(V);
      if (!K) {
        std::fprintf(stderr, "mlbridge-demo: %s\n",
                     K.status().message().c_str());
        return false;
      }
      A.Formats = {*K};
    } else if (Arg == "--verbose") {
      A.Verbose = true;
    } else {
      usage();
      return false;
    }
  }
  return true;
}

double millisSince(std::chrono::steady_clock::time_point T) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - T)
      .count();
}

// Session 1, LLVM style: declared specs, buffers written in place.
bool runDeclaredSession(const std::string &Base, const PipeOptions &Opts) {
  std::vector<TensorSpec> Specs = {
      TensorSpec::create<int64_t>("callee_size"),
      TensorSpec::create<int64_t>("caller_size"),
      TensorSpec::create<int32_t>("loop_depth"),
      TensorSpec::create<float>("call_site_hotness"),
      TensorSpec::create<float>("arg_kinds", {4}),
      TensorSpec("callee_name", DType::String, {kDynamicDim}),
  };
  auto Runner = PipeModelRunner::create(
      Base, Specs, TensorSpec::create<int64_t>("inline_decision"), Opts);
  if (!Runner) {
    std::printf("  error: %s\n", Runner.status().toString().c_str());
    return false;
  }
  ModelRunner &R = **Runner;
  const char *Functions[] = {"main", "parse_args", "compute"};
  const char *Callees[] = {"strlen", "helper", "square"};
  int Requests = 0;
  double FirstMs = 0; // includes waiting for the Python model to start
  auto Start = std::chrono::steady_clock::now();
  for (int F = 0; F < 3; ++F) {
    if (Status S = R.switchContext(Functions[F]); !S.isOk())
      return false;
    for (int Site = 0; Site < 2; ++Site) {
      *R.getTensor<int64_t>(0) = 10 + 7 * F + Site;     // callee_size
      *R.getTensor<int64_t>(1) = 120 - 13 * F;          // caller_size
      *R.getTensor<int32_t>(2) = Site;                  // loop_depth
      *R.getTensor<float>(3) = 0.25f * float(F + Site); // hotness
      float *Kinds = R.getTensor<float>(4);
      for (int K = 0; K < 4; ++K)
        Kinds[K] = float((F + K + Site) % 3);
      if (Status S = R.setFeature("callee_name", Callees[(F + Site) % 3]);
          !S.isOk())
        return false;
      Expected<int64_t> Advice = R.evaluate<int64_t>();
      if (++Requests == 1) {
        FirstMs = millisSince(Start);
        Start = std::chrono::steady_clock::now();
      }
      if (!Advice) {
        std::printf("  error: %s\n", Advice.status().toString().c_str());
        return false;
      }
      std::printf("  [%s] call %s (callee_size=%lld, loop_depth=%d) -> "
                  "inline_decision=%lld\n",
                  Functions[F], Callees[(F + Site) % 3],
                  static_cast<long long>(*R.getTensor<int64_t>(0)), Site,
                  static_cast<long long>(*Advice));
    }
  }
  std::printf("  %d requests: the first %.1f ms (connects, waits for the "
              "model to start), then %.3f ms per round trip\n",
              Requests, FirstMs, millisSince(Start) / (Requests - 1));
  return true;
}

// Session 2, the paper's style: features declared by populateFeatures,
// variable-length vectors, vector advice.
bool runPopulateSession(const std::string &Base, const PipeOptions &Opts) {
  auto Runner = PipeModelRunner::create(Base, {}, std::nullopt, Opts);
  if (!Runner)
    return false;
  ModelRunner &R = **Runner;
  auto Start = std::chrono::steady_clock::now();
  int Requests = 0;
  for (int Step = 0; Step < 3; ++Step) {
    std::vector<float> Embedding(static_cast<size_t>(4 + 2 * Step));
    for (size_t K = 0; K < Embedding.size(); ++K)
      Embedding[K] = 0.5f * float(K) - float(Step);
    Status S = R.populateFeatures(
        std::make_pair("step", Step), std::make_pair("pass", "loop-unroll"),
        std::make_pair("unrolled", Step % 2 == 0),
        std::make_pair("embedding", Embedding));
    if (!S.isOk()) {
      std::printf("  error: %s\n", S.toString().c_str());
      return false;
    }
    Expected<std::vector<double>> Advice = R.evaluate<std::vector<double>>();
    ++Requests;
    if (!Advice) {
      std::printf("  error: %s\n", Advice.status().toString().c_str());
      return false;
    }
    std::printf("  step %d: embedding of %zu floats -> advice [", Step,
                Embedding.size());
    for (size_t K = 0; K < Advice->size(); ++K)
      std::printf("%s%g", K ? ", " : "", (*Advice)[K]);
    std::printf("]\n");
  }
  std::printf("  %d requests, %.3f ms per round trip\n", Requests,
              millisSince(Start) / Requests);
  return true;
}

} // namespace

int main(int Argc, char **Argv) {
  Args A;
  if (!parseArgs(Argc, Argv, A))
    return 2;
  char Template[] = "/tmp/mlbridge-demo-XXXXXX";
  if (!::mkdtemp(Template)) {
    std::perror("mlbridge-demo: mkdtemp");
    return 1;
  }
  const std::string Dir = Template;
  bool AllOk = true;
  for (SerDesKind Format : A.Formats) {
    const std::string Base = Dir + "/" + serdesKindName(Format);
    std::printf("== %s over named pipes (%s.in / %s.out)\n",
                serdesKindName(Format), Base.c_str(), Base.c_str());
    std::vector<std::string> Cmd = {A.Python,
                                    "-m",
                                    "mlbridge.examples.demo_model",
                                    "--base",
                                    Base,
                                    "--serdes",
                                    serdesKindName(Format),
                                    "--sessions",
                                    "2"};
    if (A.Verbose)
      Cmd.push_back("--verbose");
    ChildProcess Model;
    if (Status S = Model.spawn(Cmd, {{"PYTHONPATH", A.PackageDir}});
        !S.isOk()) {
      std::printf("  cannot start the Python model: %s\n",
                  S.toString().c_str());
      AllOk = false;
      continue;
    }
    std::printf("  started Python model (pid %d)\n", Model.pid());
    PipeOptions Opts;
    Opts.Format = Format;
    Opts.OpenTimeout = std::chrono::seconds(20);
    Opts.ReplyTimeout = std::chrono::seconds(10);
    Opts.Diagnostics = stderrDiagnostics();
    std::printf(" session 1: declared features (LLVM style)\n");
    bool Ok = runDeclaredSession(Base, Opts);
    std::printf(" session 2: populateFeatures (paper style)\n");
    Ok = runPopulateSession(Base, Opts) && Ok;
    Expected<int> Exit = Model.wait(std::chrono::seconds(10));
    if (!Exit) {
      std::printf("  model did not exit: %s\n",
                  Exit.status().toString().c_str());
      Ok = false;
    } else {
      std::printf("  model exited with status %d\n", *Exit);
      Ok = Ok && *Exit == 0;
    }
    AllOk = AllOk && Ok;
  }
  ::rmdir(Dir.c_str());
  std::printf("%s\n", AllOk ? "demo finished: all exchanges succeeded"
                            : "demo FAILED");
  return AllOk ? 0 : 1;
}
