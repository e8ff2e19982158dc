// The C API's argument checking and error reporting, and the runner from
// settings (no peer needed).
#include "c_api_test_util.h"
#include "mlbridge/c/mlbridge.h"
#include "mlbridge/c/rl.h"
#include "mlbridge/c/settings.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

TEST(CApi, CreateValidatesArguments) {
  mlb_runner *R = reinterpret_cast<mlb_runner *>(0x1);
  EXPECT_EQ(mlb_pipe_runner_create(nullptr, MLB_SERDES_JSON, nullptr, &R),
            MLB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(R, nullptr) << "*out is cleared on failure";
  EXPECT_NE(std::string(mlb_last_error()).find("base"), std::string::npos);
  EXPECT_EQ(mlb_pipe_runner_create("/tmp/x", static_cast<mlb_serdes>(9),
                                   nullptr, &R),
            MLB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlb_pipe_runner_create("/tmp/x", MLB_SERDES_JSON, nullptr,
                                   nullptr),
            MLB_ERR_INVALID_ARGUMENT);
}

TEST(CApi, NullRunnerIsAnErrorNotACrash) {
  int V;
  EXPECT_EQ(mlb_set_int(nullptr, "x", 1), MLB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlb_evaluate_int(nullptr, &V), MLB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlb_switch_context(nullptr, "c"), MLB_ERR_INVALID_ARGUMENT);
  mlb_runner_destroy(nullptr);
}

TEST(CApi, MissingModelGivesNotFoundWithMessage) {
  mlb_pipe_options O;
  mlb_pipe_options_init(&O);
  EXPECT_EQ(O.open_timeout_ms, 30000);
  O.open_timeout_ms = 100;
  mlb_runner *R = nullptr;
  ASSERT_EQ(mlb_pipe_runner_create("/tmp/mlbridge-no-such/ch",
                                   MLB_SERDES_BITSTREAM, &O, &R),
            MLB_OK);
  EXPECT_EQ(mlb_set_float(R, "x", 1.0f), MLB_OK);
  EXPECT_EQ(mlb_set_string(R, "s", nullptr), MLB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlb_set_int(R, "x", 1), MLB_ERR_TYPE_MISMATCH);
  EXPECT_NE(std::string(mlb_last_error()).find("'x'"), std::string::npos);
  int V = 0;
  // The failed set above is reported first, then the missing FIFO.
  EXPECT_EQ(mlb_evaluate_int(R, &V), MLB_ERR_TYPE_MISMATCH);
  EXPECT_EQ(mlb_evaluate_int(R, &V), MLB_ERR_NOT_FOUND);
  EXPECT_NE(std::string(mlb_last_error()).find("does not exist"),
            std::string::npos);
  EXPECT_EQ(mlb_evaluate_int(R, &V), MLB_ERR_UNAVAILABLE);
  EXPECT_STREQ(mlb_status_name(MLB_ERR_TIMEOUT), "timeout");
  mlb_runner_destroy(R);
}

TEST(CApi, AdviceSpecValidation) {
  mlb_runner *R = nullptr;
  ASSERT_EQ(mlb_pipe_runner_create("/tmp/x", MLB_SERDES_JSON, nullptr, &R),
            MLB_OK);
  int64_t Shape[1] = {3};
  EXPECT_EQ(mlb_set_advice_spec(R, "a", static_cast<mlb_dtype>(99), Shape, 1),
            MLB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlb_set_advice_spec(R, "a", MLB_FLOAT, nullptr, 1),
            MLB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlb_set_advice_spec(R, "a", MLB_FLOAT, Shape, 1), MLB_OK);
  int V;
  EXPECT_EQ(mlb_evaluate_int(R, &V), MLB_ERR_TYPE_MISMATCH);
  mlb_runner_destroy(R);
}

// Introspection is generic (mlbridge.h), not an ONNX-only call: a pipe
// runner lists the features its set calls declared.
TEST(CApi, IntrospectionWorksForEveryRunner) {
  mlb_runner *R = nullptr;
  ASSERT_EQ(mlb_pipe_runner_create("/nonexistent/mlb-channel",
                                   MLB_SERDES_JSON, nullptr, &R),
            MLB_OK);
  EXPECT_EQ(mlb_runner_input_count(R), 0u);
  const float F[3] = {1, 2, 3};
  ASSERT_EQ(mlb_set_float_array(R, "f", F, 3), MLB_OK);
  capitest::expectOnlyInput(R, "f", MLB_FLOAT, {3});
  EXPECT_STREQ(mlb_dtype_name(MLB_FLOAT), "float");
  EXPECT_STREQ(mlb_dtype_name(MLB_INT64), "int64_t");
  EXPECT_STREQ(mlb_dtype_name(static_cast<mlb_dtype>(99)), "<invalid dtype>");
  mlb_runner_destroy(R);
}

// ---- a runner from settings (mlbridge/c/settings.h) -----------------------

TEST(CApiSettings, TextSettingsAndTheAutoRule) {
  mlb_runner_settings S;
  mlb_runner_settings_init(&S);
  EXPECT_EQ(S.kind, MLB_RUNNER_AUTO);
  EXPECT_EQ(S.timeout_ms, 30000);
  EXPECT_EQ(mlb_runner_settings_resolve(&S), MLB_RUNNER_DEFAULT);
  ASSERT_EQ(mlb_runner_settings_set(&S, "model", "m.onnx"), MLB_OK);
  EXPECT_EQ(mlb_runner_settings_resolve(&S), MLB_RUNNER_ONNX);
  ASSERT_EQ(mlb_runner_settings_set(&S, "server", "127.0.0.1:1"), MLB_OK);
  EXPECT_EQ(mlb_runner_settings_resolve(&S), MLB_RUNNER_GRPC);
  ASSERT_EQ(mlb_runner_settings_set(&S, "channel", "/tmp/ch"), MLB_OK);
  EXPECT_EQ(mlb_runner_settings_resolve(&S), MLB_RUNNER_PIPE);
  ASSERT_EQ(mlb_runner_settings_set(&S, "runner", "NONE"), MLB_OK);
  EXPECT_EQ(mlb_runner_settings_resolve(&S), MLB_RUNNER_DEFAULT);
  EXPECT_STREQ(mlb_runner_kind_name(MLB_RUNNER_DEFAULT), "default");

  ASSERT_EQ(mlb_runner_settings_set(&S, "format", "json"), MLB_OK);
  EXPECT_EQ(S.serdes, MLB_SERDES_JSON);
  ASSERT_EQ(mlb_runner_settings_set(&S, "timeout-ms", "250"), MLB_OK);
  EXPECT_EQ(S.timeout_ms, 250);
  for (const char *Bad : {"0", "-5", "12x", ""}) {
    EXPECT_EQ(mlb_runner_settings_set(&S, "timeout-ms", Bad),
              MLB_ERR_INVALID_ARGUMENT)
        << Bad;
    EXPECT_EQ(S.timeout_ms, 250) << "a bad value changes nothing";
  }
  EXPECT_EQ(mlb_runner_settings_set(&S, "runner", "banana"),
            MLB_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mlb_last_error()).find("unknown runner 'banana'"),
            std::string::npos);
  EXPECT_EQ(mlb_runner_settings_set(&S, "format", "xml"),
            MLB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlb_runner_settings_set(&S, "colour", "red"), MLB_ERR_NOT_FOUND);
  EXPECT_EQ(mlb_runner_settings_set(nullptr, "model", "m"),
            MLB_ERR_INVALID_ARGUMENT);
}

TEST(CApiSettings, NoModelIsNoRunnerAndNoError) {
  mlb_runner_settings S;
  mlb_runner_settings_init(&S);
  mlb_runner *R = reinterpret_cast<mlb_runner *>(0x1);
  mlb_runner_kind K = MLB_RUNNER_PIPE;
  ASSERT_EQ(mlb_runner_create_from_settings(&S, &K, &R), MLB_OK);
  EXPECT_EQ(R, nullptr);
  EXPECT_EQ(K, MLB_RUNNER_DEFAULT);
}

TEST(CApiSettings, AMissingChannelFailsAtOnce) {
  mlb_runner_settings S;
  mlb_runner_settings_init(&S);
  S.channel = "/nonexistent/mlb-settings-channel";
  mlb_runner *R = reinterpret_cast<mlb_runner *>(0x1);
  mlb_runner_kind K = MLB_RUNNER_AUTO;
  const auto Start = std::chrono::steady_clock::now();
  EXPECT_EQ(mlb_runner_create_from_settings(&S, &K, &R), MLB_ERR_NOT_FOUND);
  EXPECT_LT(std::chrono::steady_clock::now() - Start, std::chrono::seconds(1));
  EXPECT_EQ(R, nullptr);
  EXPECT_EQ(K, MLB_RUNNER_PIPE);
  EXPECT_NE(std::string(mlb_last_error()).find("no FIFO pair"),
            std::string::npos);
}

TEST(CApiSettings, APipeRunnerFromExistingFifosHasTheAdviceSpec) {
  char Dir[] = "/tmp/mlb-settings-XXXXXX";
  ASSERT_NE(::mkdtemp(Dir), nullptr);
  const std::string Base = std::string(Dir) + "/ch";
  ASSERT_EQ(::mkfifo((Base + ".in").c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo((Base + ".out").c_str(), 0600), 0);
  mlb_runner_settings S;
  mlb_runner_settings_init(&S);
  ASSERT_EQ(mlb_runner_settings_set(&S, "channel", Base.c_str()), MLB_OK);
  S.advice = "pragma_action";
  mlb_runner *R = nullptr;
  ASSERT_EQ(mlb_runner_create_from_settings(&S, nullptr, &R), MLB_OK)
      << mlb_last_error();
  ASSERT_NE(R, nullptr);
  // The advice is declared: an evaluation of another type is refused
  // before anything is sent.
  float F = 0;
  EXPECT_EQ(mlb_evaluate_float(R, &F), MLB_ERR_TYPE_MISMATCH);
  EXPECT_NE(std::string(mlb_last_error()).find("pragma_action"),
            std::string::npos);
  mlb_runner_destroy(R);
  ::unlink((Base + ".in").c_str());
  ::unlink((Base + ".out").c_str());
  ::rmdir(Dir);
}

TEST(CApiSettings, AComponentNotLinkedInIsNamed) {
  mlb_runner_settings S;
  mlb_runner_settings_init(&S);
  S.model = "policy.onnx";
  mlb_runner *R = nullptr;
  EXPECT_EQ(mlb_runner_create_from_settings(&S, nullptr, &R), MLB_ERR_NOT_FOUND);
  EXPECT_NE(std::string(mlb_last_error()).find("mlb_onnx_runner_from_settings"),
            std::string::npos);
  mlb_runner_settings_init(&S);
  S.kind = MLB_RUNNER_GRPC;
  EXPECT_EQ(mlb_runner_create_from_settings(&S, nullptr, &R),
            MLB_ERR_INVALID_ARGUMENT)
      << "grpc without a server";
  EXPECT_EQ(mlb_evaluate_action(nullptr, 3, nullptr), MLB_ERR_INVALID_ARGUMENT);
}
