// mlbridge-e2e-compiler: the compiler side of the end-to-end tests. It plays
// a pass talking to a Python model over real FIFOs (--base B) or shared
// memory (--shm SOCKET) and prints one JSON object per result on stdout,
// which tests/e2e/test_pipe_e2e.py and test_shm_e2e.py check. The
// scenarios are e2e_scenarios.h's (shared with grpc_compiler.cpp).
//
//   --scenario types     one session per dtype: extreme values out, the
//                        model echoes them back, compare exactly
//   --scenario requests  --count N requests of {"i": k}, each in context
//                        "request<k>"; expects 2k back (--pause-ms P: idle
//                        P ms before each request after the first;
//                        --first F: send i = F + k instead; --contexts 0:
//                        all in one context "requests")
//   --scenario rtt       --size N float vector, --count K timed requests
//   --scenario soak      --count N requests through injected faults
#include "e2e_scenarios.h"
#include "mlbridge/pipe_model_runner.h"
#include "mlbridge/shm_model_runner.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace mlbridge;

namespace {

struct Args {
  std::string Base, Shm, Scenario = "requests";
  SerDesKind Format = SerDesKind::Bitstream;
  int OpenTimeoutMs = 10000, ReplyTimeoutMs = 10000;
  int Count = 3, Size = 1;
  int PauseMs = 0; // requests: idle time before each request after the first
  int First = 0;   // requests: the first i
  int Contexts = 1; // requests: 0 keeps every request in one context
  int SpinUs = -1; // shm: ShmOptions::Spin (-1: the default)
};

template <typename Options> Options options(const Args &A) {
  Options O;
  O.Format = A.Format;
  O.OpenTimeout = std::chrono::milliseconds(A.OpenTimeoutMs);
  O.ReplyTimeout = std::chrono::milliseconds(A.ReplyTimeoutMs);
  return O;
}

/// A pipe or shared-memory runner, as the arguments ask; null (the error
/// printed) when it cannot be made.
std::unique_ptr<StreamModelRunner>
makeRunner(const Args &A, const char *What, std::vector<TensorSpec> Features = {},
           std::optional<TensorSpec> Advice = std::nullopt) {
  Expected<std::unique_ptr<StreamModelRunner>> R = [&]()
      -> Expected<std::unique_ptr<StreamModelRunner>> {
    if (!A.Shm.empty()) {
      ShmOptions O = options<ShmOptions>(A);
      if (A.SpinUs >= 0)
        O.Spin = std::chrono::microseconds(A.SpinUs);
      auto S = ShmModelRunner::create(A.Shm, std::move(Features),
                                      std::move(Advice), std::move(O));
      if (!S)
        return S.takeStatus();
      return std::unique_ptr<StreamModelRunner>(std::move(*S));
    }
    auto P = PipeModelRunner::create(A.Base, std::move(Features),
                                     std::move(Advice), options<PipeOptions>(A));
    if (!P)
      return P.takeStatus();
    return std::unique_ptr<StreamModelRunner>(std::move(*P));
  }();
  if (!R) {
    if (What)
      e2e::printError(What, R.status(), 0);
    return nullptr;
  }
  return std::move(*R);
}

// One session per dtype: scalar + 4-vector + a label, declared up front.
bool scenarioTypes(const Args &A) {
  bool Ok = e2e::echoEveryDType([&](auto Tag) {
    using T = decltype(Tag);
    const DType Type = DTypeOf<T>::value;
    auto R = makeRunner(A, std::string(dtypeName(Type)).c_str(),
                        {TensorSpec("scalar", Type, {1}), TensorSpec("vector", Type, {4}),
                         TensorSpec("label", DType::String, {kDynamicDim})},
                        TensorSpec("echo", Type, {kDynamicDim}));
    return R && e2e::echoType<T>(*R, "scalar", "vector");
  });
  auto R = makeRunner(A, nullptr);
  return R && e2e::echoString(*R) && Ok;
}

std::unique_ptr<StreamModelRunner> twiceRunner(const Args &A) {
  return makeRunner(A, nullptr, {TensorSpec::create<int64_t>("i")},
                    TensorSpec::create<int64_t>("twice"));
}

bool scenarioRequests(const Args &A) {
  auto R = twiceRunner(A);
  return R && e2e::requests(*R, {A.Count, A.First, A.PauseMs, A.Contexts != 0});
}

bool scenarioRtt(const Args &A) {
  auto R = makeRunner(A, nullptr, {TensorSpec::create<float>("x", {A.Size})},
                      TensorSpec::create<float>("y"));
  return R && e2e::rtt(*R, A.Size, A.Count,
                       std::string("\"serdes\":\"") + serdesKindName(A.Format) + "\",");
}

bool parse(int Argc, char **Argv, Args &A) {
  e2e::Flags F;
  F.Strings = {{"--base", &A.Base}, {"--shm", &A.Shm}, {"--scenario", &A.Scenario}};
  F.Ints = {{"--open-timeout-ms", &A.OpenTimeoutMs},
            {"--reply-timeout-ms", &A.ReplyTimeoutMs},
            {"--count", &A.Count},
            {"--size", &A.Size},
            {"--pause-ms", &A.PauseMs},
            {"--first", &A.First},
            {"--contexts", &A.Contexts},
            {"--spin-us", &A.SpinUs}};
  F.Custom = {{"--serdes", [&](const std::string &V) {
                 Expected<SerDesKind> K = serdesKindFromName(V);
                 if (K)
                   A.Format = *K;
                 return bool(K);
               }}};
  return F.parse(Argc, Argv) && A.Base.empty() != A.Shm.empty();
}

} // namespace

int main(int Argc, char **Argv) {
  Args A;
  if (!parse(Argc, Argv, A)) {
    std::fprintf(stderr,
                 "usage: mlbridge-e2e-compiler --base B|--shm SOCKET [--serdes S] "
                 "[--scenario types|requests|rtt|soak] [--count N] [--size N] "
                 "[--open-timeout-ms N] [--reply-timeout-ms N] [--pause-ms N] "
                 "[--first N] [--spin-us N]\n");
    return 2;
  }
  if (A.Scenario == "types")
    return e2e::done(scenarioTypes(A));
  if (A.Scenario == "requests")
    return e2e::done(scenarioRequests(A));
  if (A.Scenario == "rtt")
    return e2e::done(scenarioRtt(A));
  if (A.Scenario == "soak")
    return e2e::done(e2e::soakRequests(A.Count, [&] { return twiceRunner(A); }));
  return 2;
}
