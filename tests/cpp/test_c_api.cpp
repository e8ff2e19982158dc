// The C API's argument checking and error reporting (no peer needed).
#include "mlbridge/c/mlbridge.h"

#include <gtest/gtest.h>

#include <string>

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
  ASSERT_EQ(mlb_runner_input_count(R), 1u);
  const char *Name = nullptr;
  mlb_dtype Type = MLB_BOOL;
  const int64_t *Shape = nullptr;
  size_t Rank = 0;
  ASSERT_EQ(mlb_runner_input_info(R, 0, &Name, &Type, &Shape, &Rank), MLB_OK);
  EXPECT_STREQ(Name, "f");
  EXPECT_EQ(Type, MLB_FLOAT);
  ASSERT_EQ(Rank, 1u);
  EXPECT_EQ(Shape[0], 3);
  EXPECT_EQ(mlb_runner_input_info(R, 1, &Name, nullptr, nullptr, nullptr),
            MLB_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(mlb_dtype_name(Type), "float");
  EXPECT_STREQ(mlb_dtype_name(MLB_INT64), "int64_t");
  EXPECT_STREQ(mlb_dtype_name(static_cast<mlb_dtype>(99)), "<invalid dtype>");
  mlb_runner_destroy(R);
}
