// The public runner settings (mlbridge/runner_settings.h): reading them
// under an integration's prefix, the auto rule, makeRunner for the core
// runners and for a program's own factory, its errors, no model side (at
// once, as in C), and Expected's conversion that choosing a runner needs.
#include "fake_model_runner.h"
#include "mlbridge/c/settings.h"
#include "mlbridge/pipe_model_runner.h"
#include "mlbridge/runner_settings.h"
#include "mlbridge/shm_model_runner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlbridge;
using mlbridge::test::FakeModelRunner;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point T) {
  return std::chrono::duration<double>(Clock::now() - T).count();
}

/// Sets the environment variables of one test and removes them after.
class ScopedEnv {
public:
  ScopedEnv &set(const std::string &Name, const std::string &Value) {
    ::setenv(Name.c_str(), Value.c_str(), 1);
    Names.push_back(Name);
    return *this;
  }
  ~ScopedEnv() {
    for (const std::string &N : Names)
      ::unsetenv(N.c_str());
  }

private:
  std::vector<std::string> Names;
};

/// A private directory with a FIFO pair "<dir>/ch.in", "<dir>/ch.out".
struct FifoPair {
  std::string Dir, Base;
  FifoPair() {
    char T[] = "/tmp/mlb-rs-XXXXXX";
    Dir = ::mkdtemp(T) ? T : "";
    Base = Dir + "/ch";
    ::mkfifo((Base + ".in").c_str(), 0600);
    ::mkfifo((Base + ".out").c_str(), 0600);
  }
  ~FifoPair() {
    ::unlink((Base + ".in").c_str());
    ::unlink((Base + ".out").c_str());
    ::rmdir(Dir.c_str());
  }
};

const std::vector<TensorSpec> Features = {TensorSpec::create<int64_t>("trip_count"),
                                          TensorSpec::create<float>("body", {2})};
const TensorSpec Advice = TensorSpec::create<int64_t>("unroll");

} // namespace

TEST(RunnerSettings, ReadFromTheEnvironmentUnderThePrefix) {
  ScopedEnv Env;
  Env.set("MLBRIDGE_RSTEST_CHANNEL", "/tmp/c").set("MLBRIDGE_RSTEST_TIMEOUT_MS", "250")
      .set("MLBRIDGE_RSTEST_SOCKET", "/tmp/s").set("MLBRIDGE_RSTEST_RUNNER", "Pipe");
  for (const char *Prefix : {"MLBRIDGE_RSTEST", "MLBRIDGE_RSTEST_"}) {
    Expected<RunnerSettings> S = readRunnerSettings(Prefix);
    ASSERT_TRUE(S) << S.status().toString();
    EXPECT_EQ(S->Channel, "/tmp/c") << Prefix;
    EXPECT_EQ(S->Socket, "/tmp/s");
    EXPECT_EQ(S->Kind, RunnerKind::Pipe) << "names are case insensitive";
    EXPECT_EQ(S->Timeout, std::chrono::milliseconds(250));
    EXPECT_EQ(S->Format, "bitstream") << "the option's default";
  }
  EXPECT_EQ(runnerEnvName("MLBRIDGE_UNROLL", RunnerOptionTable[1]), "MLBRIDGE_UNROLL_MODEL");
}

TEST(RunnerSettings, AGivenOptionWinsOverTheEnvironment) {
  ScopedEnv Env;
  Env.set("MLBRIDGE_RSTEST_CHANNEL", "/from/env").set("MLBRIDGE_RSTEST_MODEL", "env.onnx");
  Expected<RunnerSettings> S = readRunnerSettings(
      [](const RunnerOptionInfo &O) {
        if (O.Setting == RunnerSetting::Channel)
          return std::make_pair(std::string("/from/option"), true);
        return std::make_pair(std::string(O.Default), false);
      },
      "MLBRIDGE_RSTEST");
  ASSERT_TRUE(S);
  EXPECT_EQ(S->Channel, "/from/option");
  EXPECT_EQ(S->Model, "env.onnx") << "not given: the environment";
}

TEST(RunnerSettings, BadSettingsArePreciseErrors) {
  {
    ScopedEnv Env;
    Env.set("MLBRIDGE_RSTEST_RUNNER", "banana");
    Expected<RunnerSettings> S = readRunnerSettings("MLBRIDGE_RSTEST");
    ASSERT_FALSE(S);
    EXPECT_EQ(S.status().code(), ErrorCode::InvalidArgument);
    EXPECT_NE(S.status().message().find("unknown runner 'banana' (auto, onnx,"),
              std::string::npos)
        << S.status().message();
  }
  RunnerSettings S;
  for (const char *Bad : {"soon", "0", "-5", ""}) {
    Status St = setRunnerSetting(S, "timeout-ms", Bad);
    EXPECT_EQ(St.code(), ErrorCode::InvalidArgument) << Bad;
    EXPECT_NE(St.message().find("timeout-ms"), std::string::npos);
  }
  EXPECT_EQ(S.Timeout, std::chrono::milliseconds(30000)) << "unchanged";
  Status Unknown = setRunnerSetting(S, "colour", "red");
  EXPECT_EQ(Unknown.code(), ErrorCode::NotFound);
  EXPECT_NE(Unknown.message().find("runner, model, channel, socket, server"),
            std::string::npos);
  ASSERT_TRUE(setRunnerSetting(S, "format", "xml").isOk()) << "checked by the runner";
  ASSERT_TRUE(setRunnerSetting(S, "runner", "pipe").isOk());
  ASSERT_TRUE(setRunnerSetting(S, "channel", "/tmp/x").isOk());
  FifoPair F;
  S.Channel = F.Base;
  auto R = makeRunner(S, Features, Advice);
  ASSERT_FALSE(R);
  EXPECT_NE(R.status().message().find("pipe: unknown format 'xml'"), std::string::npos);
}

TEST(RunnerSettings, TheAutoRule) {
  RunnerSettings S;
  EXPECT_EQ(resolveRunnerKind(S), RunnerKind::Default);
  S.Runners.push_back({RunnerKind::Tf, "TfPolicy", nullptr});
  EXPECT_EQ(resolveRunnerKind(S), RunnerKind::Tf);
  S.Runners.push_back({RunnerKind::Compiled, "Policy", nullptr});
  EXPECT_EQ(resolveRunnerKind(S), RunnerKind::Compiled) << "compiled before tf";
  S.Model = "m.onnx";
  EXPECT_EQ(resolveRunnerKind(S), RunnerKind::Onnx);
  S.Server = "127.0.0.1:1";
  EXPECT_EQ(resolveRunnerKind(S), RunnerKind::Grpc);
  S.Socket = "/tmp/s";
  EXPECT_EQ(resolveRunnerKind(S), RunnerKind::Shm);
  S.Channel = "/tmp/c";
  EXPECT_EQ(resolveRunnerKind(S), RunnerKind::Pipe);
  S.Kind = RunnerKind::Default;
  EXPECT_EQ(resolveRunnerKind(S), RunnerKind::Default) << "a named runner wins";
  EXPECT_EQ(parseRunnerKind("none"), RunnerKind::Default);
  EXPECT_EQ(parseRunnerKind("SHM"), RunnerKind::Shm);
  EXPECT_EQ(parseRunnerKind("nope"), std::nullopt);
}

TEST(RunnerSettings, DefaultIsNoRunnerAndNoError) {
  auto R = makeRunner(RunnerSettings(), Features, Advice);
  ASSERT_TRUE(R) << R.status().toString();
  EXPECT_EQ(*R, nullptr);
}

TEST(RunnerSettings, ARunnerNotLinkedIsNamed) {
  RunnerSettings S;
  S.Model = "m.onnx";
  auto R = makeRunner(S, Features, Advice);
  ASSERT_FALSE(R);
  EXPECT_EQ(R.status().code(), ErrorCode::NotFound);
  EXPECT_EQ(R.status().message(),
            "the 'onnx' runner is not built into this plugin or program "
            "(available: pipe shm)");
}

TEST(RunnerSettings, AProgramsOwnFactoryIsUsed) {
  RunnerSettings S;
  std::string SeenAdvice;
  S.Runners.push_back(
      {RunnerKind::Compiled, "Policy",
       [&](const RunnerSettings &, const std::vector<TensorSpec> &F,
           const TensorSpec &A) -> Expected<std::unique_ptr<ModelRunner>> {
         SeenAdvice = A.name();
         auto R = std::make_unique<FakeModelRunner>(F, A);
         R->answer<int64_t>({3});
         return std::unique_ptr<ModelRunner>(std::move(R));
       }});
  auto R = makeRunner(S, Features, Advice);
  ASSERT_TRUE(R) << R.status().toString();
  ASSERT_NE(*R, nullptr);
  EXPECT_EQ(SeenAdvice, "unroll");
  EXPECT_EQ((*R)->featureCount(), 2u);
  Expected<int64_t> A = (*R)->evaluateAction();
  ASSERT_TRUE(A);
  EXPECT_EQ(*A, 3);
  EXPECT_EQ(availableRunners(S), "pipe shm compiled");
}

TEST(RunnerSettings, APipeRunnerDeclaresTheIntegrationsSpecs) {
  FifoPair F;
  RunnerSettings S;
  S.Channel = F.Base;
  auto R = makeRunner(S, Features, Advice);
  ASSERT_TRUE(R) << R.status().toString();
  ASSERT_NE(*R, nullptr);
  EXPECT_EQ((*R)->featureCount(), 2u);
  EXPECT_EQ((*R)->featureSpec(1).name(), "body");
  ASSERT_TRUE((*R)->adviceSpec());
  EXPECT_EQ((*R)->adviceSpec()->name(), "unroll");
}

// No model side, as in C: nothing waits for FIFOs nobody made.
TEST(RunnerSettings, NoModelSideFailsAtOnceAsInC) {
  RunnerSettings S;
  S.Channel = "/tmp/mlbridge-no-such-dir/ch"; // Timeout stays 30 s
  const auto Start = Clock::now();
  auto R = makeRunner(S, Features, Advice);
  ASSERT_FALSE(R);
  EXPECT_LT(secondsSince(Start), 0.5);
  EXPECT_EQ(R.status().code(), ErrorCode::NotFound);

  mlb_runner_settings C;
  mlb_runner_settings_init(&C);
  C.channel = "/tmp/mlbridge-no-such-dir/ch";
  mlb_runner *Out = nullptr;
  EXPECT_EQ(mlb_runner_create_from_settings(&C, nullptr, &Out), MLB_ERR_NOT_FOUND);
  EXPECT_EQ(std::string(mlb_last_error()), R.status().toString())
      << "the same check, the same words";

  RunnerSettings Shm;
  Shm.Socket = "/tmp/mlbridge-no-such-dir/model.sock";
  auto M = makeRunner(Shm, Features, Advice);
  ASSERT_FALSE(M);
  EXPECT_EQ(M.status().code(), ErrorCode::NotFound);
  EXPECT_NE(M.status().message().find("shm: no model listening"), std::string::npos);
  C.channel = nullptr;
  C.socket = Shm.Socket.c_str();
  EXPECT_EQ(mlb_runner_create_from_settings(&C, nullptr, &Out), MLB_ERR_NOT_FOUND);
  EXPECT_EQ(std::string(mlb_last_error()), M.status().toString());
  EXPECT_LT(secondsSince(Start), 0.5);
}

// FIFOs but no model opening them: the wait is the settings' Timeout.
TEST(RunnerSettings, FifosWithoutAModelWaitAtMostTheTimeout) {
  FifoPair F;
  RunnerSettings S;
  S.Channel = F.Base;
  S.Timeout = std::chrono::milliseconds(200);
  auto R = makeRunner(S, Features, Advice);
  ASSERT_TRUE(R) << R.status().toString();
  const auto Start = Clock::now();
  Expected<int64_t> A = (*R)->evaluate<int64_t>();
  ASSERT_FALSE(A);
  EXPECT_EQ(A.status().code(), ErrorCode::Timeout) << A.status().toString();
  EXPECT_GE(secondsSince(Start), 0.15);
  EXPECT_LT(secondsSince(Start), 2.0);
}

TEST(ExpectedConversion, ADerivedRunnerConvertsToModelRunner) {
  FifoPair F;
  Expected<std::unique_ptr<ModelRunner>> R = PipeModelRunner::create(F.Base);
  ASSERT_TRUE(R);
  EXPECT_NE(dynamic_cast<PipeModelRunner *>(R->get()), nullptr);
  Expected<std::unique_ptr<ModelRunner>> Bad =
      PipeModelRunner::create(F.Base, {TensorSpec::create<float>("x"),
                                       TensorSpec::create<float>("x")});
  ASSERT_FALSE(Bad);
  EXPECT_EQ(Bad.status().code(), ErrorCode::InvalidArgument) << "the error carried over";
  auto Choose = [&](bool Pipe) -> Expected<std::unique_ptr<ModelRunner>> {
    if (Pipe)
      return PipeModelRunner::create(F.Base);
    return ShmModelRunner::create(F.Dir + "/model.sock");
  };
  EXPECT_TRUE(Choose(true));
  EXPECT_TRUE(Choose(false));
  static_assert(std::is_convertible_v<Expected<std::unique_ptr<ShmModelRunner>>,
                                      Expected<std::unique_ptr<ModelRunner>>>);
  static_assert(!std::is_convertible_v<Expected<std::unique_ptr<ModelRunner>>,
                                       Expected<std::unique_ptr<ShmModelRunner>>>);
  static_assert(!std::is_convertible_v<Expected<int>, Expected<std::string>>);
}
