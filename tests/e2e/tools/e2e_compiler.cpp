// mlbridge-e2e-compiler: the compiler side of the end-to-end tests. It plays
// a pass talking to a Python model over real FIFOs (--base B) or shared
// memory (--shm SOCKET) and prints one JSON object per result on stdout,
// which tests/e2e/test_pipe_e2e.py and test_shm_e2e.py check.
//
//   --scenario types     one session per dtype: extreme values out, the
//                        model echoes them back, compare exactly
//   --scenario requests  --count N requests of {"i": k}, each in context
//                        "request<k>"; expects 2k back (--pause-ms P: idle
//                        P ms before each request after the first;
//                        --first F: send i = F + k instead; --contexts 0:
//                        all in one context "requests")
//   --scenario rtt       --size N float vector, --count K timed requests
#include "e2e_report.h"
#include "mlbridge/pipe_model_runner.h"
#include "mlbridge/shm_model_runner.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>


using namespace mlbridge;
using e2e::Clock;

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

using e2e::msSince;
using e2e::printError;

template <typename Options> Options options(const Args &A) {
  Options O;
  O.Format = A.Format;
  O.OpenTimeout = std::chrono::milliseconds(A.OpenTimeoutMs);
  O.ReplyTimeout = std::chrono::milliseconds(A.ReplyTimeoutMs);
  return O;
}

/// A pipe or shared-memory runner, as the arguments ask.
Expected<std::unique_ptr<StreamModelRunner>>
makeRunner(const Args &A, std::vector<TensorSpec> Features = {},
           std::optional<TensorSpec> Advice = std::nullopt) {
  if (!A.Shm.empty()) {
    ShmOptions O = options<ShmOptions>(A);
    if (A.SpinUs >= 0)
      O.Spin = std::chrono::microseconds(A.SpinUs);
    auto R = ShmModelRunner::create(A.Shm, std::move(Features),
                                    std::move(Advice), std::move(O));
    if (!R)
      return R.takeStatus();
    return std::unique_ptr<StreamModelRunner>(std::move(*R));
  }
  auto R = PipeModelRunner::create(A.Base, std::move(Features),
                                   std::move(Advice), options<PipeOptions>(A));
  if (!R)
    return R.takeStatus();
  return std::unique_ptr<StreamModelRunner>(std::move(*R));
}

template <typename T> std::vector<T> extremes() {
  using L = std::numeric_limits<T>;
  if constexpr (std::is_same_v<T, bool>)
    return {true, false, true, true};
  else if constexpr (std::is_floating_point_v<T>)
    return {-L::infinity(), L::infinity(), L::denorm_min(), L::lowest()};
  else
    return {L::min(), L::max(), T(0), T(1)};
}

template <typename T> bool sameBits(T A, T B) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(A) || std::isnan(B))
      return std::isnan(A) && std::isnan(B);
  return std::memcmp(&A, &B, sizeof(T)) == 0;
}

// One session for dtype T: scalar + 4-vector + a label out, echo back.
template <typename T> bool echoType(const Args &A) {
  const DType Type = DTypeOf<T>::value;
  const std::string Name(dtypeName(Type));
  auto Runner = makeRunner(
      A,
      {TensorSpec("scalar", Type, {1}), TensorSpec("vector", Type, {4}),
       TensorSpec("label", DType::String, {kDynamicDim})},
      TensorSpec("echo", Type, {kDynamicDim}));
  if (!Runner) {
    printError(Name.c_str(), Runner.status(), 0);
    return false;
  }
  std::vector<T> Vec = extremes<T>();
  T Scalar;
  if constexpr (std::is_floating_point_v<T>)
    Scalar = std::numeric_limits<T>::quiet_NaN();
  else
    Scalar = Vec[1];
  (*Runner)->setFeature("scalar", Scalar);
  (*Runner)->setFeature("vector", Vec);
  (*Runner)->setFeature("label", "dtype " + Name + " \xE2\x9C\x93");
  auto Start = Clock::now();
  Expected<std::vector<T>> Echo = (*Runner)->evaluate<std::vector<T>>();
  if (!Echo) {
    printError(Name.c_str(), Echo.status(), msSince(Start));
    return false;
  }
  bool Ok = Echo->size() == 5 && sameBits<T>((*Echo)[0], Scalar);
  for (size_t I = 0; Ok && I < 4; ++I)
    Ok = sameBits<T>((*Echo)[I + 1], Vec[I]);
  std::printf("{\"event\":\"echo\",\"dtype\":\"%s\",\"ok\":%s,\"count\":%zu}\n",
              Name.c_str(), Ok ? "true" : "false", Echo->size());
  return Ok;
}

bool echoString(const Args &A) {
  auto Runner = makeRunner(A);
  if (!Runner)
    return false;
  const std::string Text = "h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9D\x84\x9E \"q\"\n";
  (*Runner)->setFeature("text", Text);
  Expected<std::string> Echo = (*Runner)->evaluate<std::string>();
  if (!Echo) {
    printError("string", Echo.status(), 0);
    return false;
  }
  bool Ok = *Echo == Text;
  std::printf("{\"event\":\"echo\",\"dtype\":\"string\",\"ok\":%s}\n",
              Ok ? "true" : "false");
  return Ok;
}

bool scenarioTypes(const Args &A) {
  bool Ok = echoType<float>(A);
  Ok &= echoType<double>(A);
  Ok &= echoType<int8_t>(A);
  Ok &= echoType<int16_t>(A);
  Ok &= echoType<int32_t>(A);
  Ok &= echoType<int64_t>(A);
  Ok &= echoType<uint8_t>(A);
  Ok &= echoType<uint16_t>(A);
  Ok &= echoType<uint32_t>(A);
  Ok &= echoType<uint64_t>(A);
  Ok &= echoType<bool>(A);
  Ok &= echoString(A);
  return Ok;
}

bool scenarioRequests(const Args &A) {
  auto Runner = makeRunner(A, {TensorSpec::create<int64_t>("i")},
                           TensorSpec::create<int64_t>("twice"));
  if (!Runner)
    return false;
  bool Ok = true;
  for (int K = 0; K < A.Count; ++K) {
    if (K && A.PauseMs)
      std::this_thread::sleep_for(std::chrono::milliseconds(A.PauseMs));
    auto Start = Clock::now();
    Status S = A.Contexts || !K
                   ? (*Runner)->switchContext(A.Contexts ? "request" + std::to_string(K)
                                                         : std::string("requests"))
                   : Status::ok();
    const int64_t I = A.First + K;
    *(*Runner)->getTensor<int64_t>(0) = I;
    Expected<int64_t> R =
        S.isOk() ? (*Runner)->evaluate<int64_t>() : Expected<int64_t>(S);
    if (!R) {
      printError("evaluate", R.status(), msSince(Start));
      // A broken runner must refuse at once, not wait again.
      Start = Clock::now();
      Expected<int64_t> Again = (*Runner)->evaluate<int64_t>();
      printError("evaluate-again", Again.status(), msSince(Start));
      return false;
    }
    std::printf("{\"event\":\"advice\",\"i\":%" PRId64 ",\"value\":%" PRId64
                "}\n",
                I, *R);
    std::fflush(stdout);
    Ok &= *R == 2 * I;
  }
  return Ok;
}

bool scenarioSoak(const Args &A) {
  return e2e::soakRequests(A.Count, [&] {
    auto R = makeRunner(A, {TensorSpec::create<int64_t>("i")},
                        TensorSpec::create<int64_t>("twice"));
    return R ? std::move(*R) : nullptr;
  });
}

bool scenarioRtt(const Args &A) {
  auto Runner = makeRunner(A, {TensorSpec::create<float>("x", {A.Size})},
                           TensorSpec::create<float>("y"));
  if (!Runner)
    return false;
  float *X = (*Runner)->getTensor<float>(0);
  for (int I = 0; I < A.Size; ++I)
    X[I] = 1.0f / float(I + 1);
  std::vector<double> Us;
  const int Warmup = 20;
  for (int K = 0; K < A.Count + Warmup; ++K) {
    auto Start = Clock::now();
    Expected<float> R = (*Runner)->evaluate<float>();
    double Elapsed = msSince(Start) * 1000.0;
    if (!R) {
      printError("rtt", R.status(), Elapsed / 1000.0);
      return false;
    }
    if (K >= Warmup)
      Us.push_back(Elapsed);
  }
  std::sort(Us.begin(), Us.end());
  std::printf("{\"event\":\"rtt\",\"serdes\":\"%s\",\"size\":%d,\"count\":%d,"
              "\"median_us\":%.1f,\"p90_us\":%.1f}\n",
              serdesKindName(A.Format), A.Size, A.Count, Us[Us.size() / 2],
              Us[Us.size() * 9 / 10]);
  return true;
}

bool parse(int Argc, char **Argv, Args &A) {
  for (int I = 1; I + 1 < Argc; I += 2) {
    std::string K = Argv[I], V = Argv[I + 1];
    if (K == "--base")
      A.Base = V;
    else if (K == "--shm")
      A.Shm = V;
    else if (K == "--scenario")
      A.Scenario = V;
    else if (K == "--serdes") {
      Expected<SerDesKind> F = serdesKindFromName(V);
      if (!F)
        return false;
      A.Format = *F;
    } else if (K == "--open-timeout-ms")
      A.OpenTimeoutMs = std::stoi(V);
    else if (K == "--reply-timeout-ms")
      A.ReplyTimeoutMs = std::stoi(V);
    else if (K == "--count")
      A.Count = std::stoi(V);
    else if (K == "--size")
      A.Size = std::stoi(V);
    else if (K == "--pause-ms")
      A.PauseMs = std::stoi(V);
    else if (K == "--first")
      A.First = std::stoi(V);
    else if (K == "--contexts")
      A.Contexts = std::stoi(V);
    else if (K == "--spin-us")
      A.SpinUs = std::stoi(V);
    else
      return false;
  }
  return A.Base.empty() != A.Shm.empty() && Argc % 2 == 1;
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
  bool Ok;
  if (A.Scenario == "types")
    Ok = scenarioTypes(A);
  else if (A.Scenario == "requests")
    Ok = scenarioRequests(A);
  else if (A.Scenario == "rtt")
    Ok = scenarioRtt(A);
  else if (A.Scenario == "soak")
    Ok = scenarioSoak(A);
  else
    return 2;
  std::printf("{\"event\":\"done\",\"ok\":%s}\n", Ok ? "true" : "false");
  return Ok ? 0 : 1;
}
