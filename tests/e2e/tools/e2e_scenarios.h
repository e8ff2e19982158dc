//===- e2e_scenarios.h - The scenarios of the e2e compiler programs -------===//
//
// What the fake compilers (e2e_compiler.cpp: pipes and shared memory;
// grpc_compiler.cpp: gRPC) do once they have a runner: the dtype echo, the
// "requests" round trips, the RTT timing, and their command-line flags.
// Each program is a thin front end making its transport's runner.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_TESTS_E2E_SCENARIOS_H
#define MLBRIDGE_TESTS_E2E_SCENARIOS_H

#include "e2e_report.h"
#include "mlbridge/model_runner.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace e2e {

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

/// Sets feature Scalar (NaN, or the type's maximum), Vector (the type's
/// extremes) and "label"; the model echoes scalar + vector. Prints
/// {"event":"echo","dtype":...,"ok":...,"count":...}; true if bit-exact.
template <typename T>
bool echoType(mlbridge::ModelRunner &R, const std::string &Scalar,
              const std::string &Vector) {
  const std::string Name(mlbridge::dtypeName(mlbridge::DTypeOf<T>::value));
  std::vector<T> Vec = extremes<T>();
  T S;
  if constexpr (std::is_floating_point_v<T>)
    S = std::numeric_limits<T>::quiet_NaN();
  else
    S = Vec[1];
  R.setFeature(Scalar, S);
  R.setFeature(Vector, Vec);
  R.setFeature("label", "dtype " + Name + " \xE2\x9C\x93");
  auto Start = Clock::now();
  mlbridge::Expected<std::vector<T>> Echo = R.evaluate<std::vector<T>>();
  if (!Echo) {
    printError(Name.c_str(), Echo.status(), msSince(Start));
    return false;
  }
  bool Ok = Echo->size() == 5 && sameBits<T>((*Echo)[0], S);
  for (size_t I = 0; Ok && I < 4; ++I)
    Ok = sameBits<T>((*Echo)[I + 1], Vec[I]);
  std::printf("{\"event\":\"echo\",\"dtype\":\"%s\",\"ok\":%s,\"count\":%zu}\n",
              Name.c_str(), Ok ? "true" : "false", Echo->size());
  std::fflush(stdout);
  return Ok;
}

/// Echo(T()) for every non-string dtype; true if all were.
template <typename EchoFn> bool echoEveryDType(EchoFn Echo) {
  bool Ok = true;
  auto One = [&](auto Tag) { Ok &= Echo(Tag); };
  One(float()), One(double()), One(int8_t()), One(int16_t()), One(int32_t());
  One(int64_t()), One(uint8_t()), One(uint16_t()), One(uint32_t());
  One(uint64_t()), One(bool());
  return Ok;
}

/// Feature "text" (UTF-8 with quotes and a newline), echoed as a string.
inline bool echoString(mlbridge::ModelRunner &R) {
  const std::string Text = "h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9D\x84\x9E \"q\"\n";
  R.setFeature("text", Text);
  mlbridge::Expected<std::string> Echo = R.evaluate<std::string>();
  if (!Echo) {
    printError("string", Echo.status(), 0);
    return false;
  }
  std::printf("{\"event\":\"echo\",\"dtype\":\"string\",\"ok\":%s}\n",
              *Echo == Text ? "true" : "false");
  std::fflush(stdout);
  return *Echo == Text;
}

/// The "requests" scenario: Count requests of {"i": First + k}, each in
/// context "request<k>" (Contexts false: all in one context "requests"),
/// idle PauseMs before each after the first; expects 2 i back. Prints
/// {"event":"advice","i":...,"value":...} for each; on an error, the error
/// and the next call's (a broken runner must refuse at once).
struct RequestsPlan {
  int Count = 3;
  int First = 0;
  int PauseMs = 0;
  bool Contexts = true;
};

inline bool requests(mlbridge::ModelRunner &R, const RequestsPlan &P) {
  bool Ok = true;
  for (int K = 0; K < P.Count; ++K) {
    if (K && P.PauseMs)
      std::this_thread::sleep_for(std::chrono::milliseconds(P.PauseMs));
    auto Start = Clock::now();
    mlbridge::Status S =
        P.Contexts || !K
            ? R.switchContext(P.Contexts ? "request" + std::to_string(K)
                                         : std::string("requests"))
            : mlbridge::Status::ok();
    const int64_t I = int64_t(P.First) + K;
    *R.getTensor<int64_t>(0) = I;
    mlbridge::Expected<int64_t> V =
        S.isOk() ? R.evaluate<int64_t>() : mlbridge::Expected<int64_t>(S);
    if (!V) {
      printError("evaluate", V.status(), msSince(Start));
      Start = Clock::now();
      mlbridge::Expected<int64_t> Again = R.evaluate<int64_t>();
      printError("evaluate-again", Again.status(), msSince(Start));
      return false;
    }
    std::printf("{\"event\":\"advice\",\"i\":%" PRId64 ",\"value\":%" PRId64
                "}\n",
                I, *V);
    std::fflush(stdout);
    Ok &= *V == 2 * I;
  }
  return Ok;
}

/// The "rtt" scenario: feature "x" (Size floats) set once, Count timed
/// requests after 20 warm-up ones. Prints {"event":"rtt",<Extra>"size":...,
/// "count":...,"median_us":...,"p90_us":...}; Extra is "" or `"key":v,`.
inline bool rtt(mlbridge::ModelRunner &R, int Size, int Count,
                const std::string &Extra = "") {
  float *X = R.getTensor<float>(0);
  for (int I = 0; I < Size; ++I)
    X[I] = 1.0f / float(I + 1);
  std::vector<double> Us;
  const int Warmup = 20;
  for (int K = 0; K < Count + Warmup; ++K) {
    auto Start = Clock::now();
    mlbridge::Expected<float> V = R.evaluate<float>();
    double Elapsed = msSince(Start) * 1000.0;
    if (!V) {
      printError("rtt", V.status(), Elapsed / 1000.0);
      return false;
    }
    if (K >= Warmup)
      Us.push_back(Elapsed);
  }
  std::sort(Us.begin(), Us.end());
  std::printf("{\"event\":\"rtt\",%s\"size\":%d,\"count\":%d,"
              "\"median_us\":%.1f,\"p90_us\":%.1f}\n",
              Extra.c_str(), Size, Count, Us[Us.size() / 2],
              Us[Us.size() * 9 / 10]);
  return true;
}

/// "--key value" pairs: each key is a string, an int or a custom flag
/// (which returns false for a bad value). False for an unknown key, a bad
/// value or a key without value.
struct Flags {
  std::map<std::string, std::string *> Strings;
  std::map<std::string, int *> Ints;
  std::map<std::string, std::function<bool(const std::string &)>> Custom;

  bool parse(int Argc, char **Argv) const {
    if (Argc % 2 != 1)
      return false;
    for (int I = 1; I + 1 < Argc; I += 2) {
      const std::string K = Argv[I], V = Argv[I + 1];
      if (auto S = Strings.find(K); S != Strings.end()) {
        *S->second = V;
      } else if (auto N = Ints.find(K); N != Ints.end()) {
        char *End = nullptr;
        long X = std::strtol(V.c_str(), &End, 10);
        if (V.empty() || *End || X < std::numeric_limits<int>::min() ||
            X > std::numeric_limits<int>::max())
          return false;
        *N->second = int(X);
      } else if (auto C = Custom.find(K); C != Custom.end()) {
        if (!C->second(V))
          return false;
      } else {
        return false;
      }
    }
    return true;
  }
};

/// The last line of every program: {"event":"done","ok":...}; the exit code.
inline int done(bool Ok) {
  std::printf("{\"event\":\"done\",\"ok\":%s}\n", Ok ? "true" : "false");
  std::fflush(stdout);
  return Ok ? 0 : 1;
}

} // namespace e2e

#endif // MLBRIDGE_TESTS_E2E_SCENARIOS_H
