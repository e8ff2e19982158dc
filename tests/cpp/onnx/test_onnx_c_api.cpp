// The C API of the ONNX runner: a model on a feature array, errors as
// statuses with messages.
#include "onnx_test_util.h"
#include "../c_api_test_util.h"

#include "mlbridge/c/onnx.h"
#include "mlbridge/c/rl.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

using onnxtest::casesOf;
using onnxtest::model;

TEST(OnnxCApi, RunsAModelOnAFeatureArray) {
  mlb_runner *R = nullptr;
  ASSERT_EQ(mlb_onnx_runner_create(model("mlp_300_64_15.onnx").c_str(), nullptr, &R),
            MLB_OK)
      << mlb_last_error();
  ASSERT_NE(R, nullptr);
  capitest::expectOnlyInput(R, "x", MLB_FLOAT, {-1, 300});

  for (const reftest::Case &C : casesOf("mlp_300_64_15.onnx")) {
    const size_t N = C.Inputs[0].elementCount();
    ASSERT_EQ(mlb_set_float_array(R, "x", C.Inputs[0].dataAs<float>(), N), MLB_OK)
        << mlb_last_error();
    float Out[64];
    size_t Count = 0;
    ASSERT_EQ(mlb_evaluate_float_array(R, Out, 64, &Count), MLB_OK) << mlb_last_error();
    ASSERT_EQ(Count, C.Outputs[0].elementCount());
    for (size_t K = 0; K < Count; ++K)
      EXPECT_NEAR(Out[K], C.Outputs[0].dataAs<float>()[K], 1e-5);
  }
  // Wrong name, size and type: statuses with messages.
  float X[300] = {0};
  EXPECT_EQ(mlb_set_float_array(R, "nope", X, 300), MLB_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mlb_last_error()).find("nope"), std::string::npos);
  EXPECT_EQ(mlb_set_float_array(R, "x", X, 299), MLB_ERR_TYPE_MISMATCH);
  double D[300] = {0};
  EXPECT_EQ(mlb_set_double_array(R, "x", D, 300), MLB_ERR_TYPE_MISMATCH);
  // The first failed setter is reported again by the next evaluation
  // (nothing runs on features the caller failed to set).
  float Scores[15];
  size_t Got = 0;
  EXPECT_EQ(mlb_evaluate_float_array(R, Scores, 15, &Got), MLB_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mlb_last_error()).find("nope"), std::string::npos);
  int64_t Advice = 0;
  ASSERT_EQ(mlb_set_float_array(R, "x", X, 300), MLB_OK);
  EXPECT_EQ(mlb_evaluate_int64(R, &Advice), MLB_ERR_TYPE_MISMATCH);
  float Small[3];
  size_t Count = 0;
  EXPECT_EQ(mlb_evaluate_float_array(R, Small, 3, &Count), MLB_ERR_TOO_LARGE);
  EXPECT_EQ(Count, 15u);
  mlb_runner_destroy(R);
}

TEST(OnnxCApi, OptionsChooseTheAdviceAndFixDimensions) {
  mlb_onnx_options O;
  mlb_onnx_options_init(&O);
  EXPECT_EQ(O.intra_op_threads, 1);
  const char *Names[] = {"batch"};
  const int64_t Values[] = {1};
  O.dim_names = Names;
  O.dim_values = Values;
  O.dim_count = 1;
  O.advice_output = "total";
  mlb_runner *R = nullptr;
  ASSERT_EQ(mlb_onnx_runner_create(model("multi_io.onnx").c_str(), &O, &R), MLB_OK)
      << mlb_last_error();
  const reftest::Case C = casesOf("multi_io.onnx").at(0); // batch 1
  ASSERT_EQ(mlb_set_float_array(R, "features", C.Inputs[0].dataAs<float>(), 4), MLB_OK);
  ASSERT_EQ(mlb_set_double_array(R, "weights", C.Inputs[1].dataAs<double>(), 3), MLB_OK);
  ASSERT_EQ(mlb_set_int64_array(R, "counts", C.Inputs[2].dataAs<int64_t>(), 2), MLB_OK);
  ASSERT_EQ(mlb_set_int(R, "offset", C.Inputs[3].dataAs<int32_t>()[0]), MLB_OK);
  bool Mask[4];
  for (int K = 0; K < 4; ++K)
    Mask[K] = static_cast<const unsigned char *>(C.Inputs[4].data())[K] != 0;
  ASSERT_EQ(mlb_set_bool_array(R, "mask", Mask, 4), MLB_OK);
  ASSERT_EQ(mlb_set_float_array(R, "seq", C.Inputs[5].dataAs<float>(),
                                C.Inputs[5].elementCount()),
            MLB_OK);
  double Total = 0;
  ASSERT_EQ(mlb_evaluate_double(R, &Total), MLB_OK) << mlb_last_error();
  EXPECT_NEAR(Total, C.Outputs[1].dataAs<double>()[0], 1e-9);
  mlb_runner_destroy(R);

  O.advice_output = "nope";
  EXPECT_EQ(mlb_onnx_runner_create(model("multi_io.onnx").c_str(), &O, &R),
            MLB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(R, nullptr);
  O.advice_output = nullptr;
  O.dim_names = nullptr;
  EXPECT_EQ(mlb_onnx_runner_create(model("multi_io.onnx").c_str(), &O, &R),
            MLB_ERR_INVALID_ARGUMENT);
}

TEST(OnnxCApi, MissingAndCorruptModelsAreErrors) {
  mlb_runner *R = reinterpret_cast<mlb_runner *>(0x1);
  EXPECT_EQ(mlb_onnx_runner_create("/nonexistent/m.onnx", nullptr, &R),
            MLB_ERR_NOT_FOUND);
  EXPECT_EQ(R, nullptr);
  EXPECT_NE(std::string(mlb_last_error()).find("/nonexistent/m.onnx"),
            std::string::npos);
  const char Junk[] = "definitely not protobuf";
  EXPECT_EQ(mlb_onnx_runner_create_from_bytes(Junk, sizeof Junk, nullptr, &R),
            MLB_ERR_MALFORMED);
  EXPECT_EQ(mlb_onnx_runner_create(nullptr, nullptr, &R), MLB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlb_onnx_runner_create("x", nullptr, nullptr), MLB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlb_runner_input_count(nullptr), 0u);
}

TEST(OnnxCApi, FromBytes) {
  std::ifstream In(model("rl_pass_agent.onnx"), std::ios::binary);
  std::string Bytes((std::istreambuf_iterator<char>(In)), {});
  mlb_runner *R = nullptr;
  ASSERT_EQ(mlb_onnx_runner_create_from_bytes(Bytes.data(), Bytes.size(), nullptr, &R),
            MLB_OK)
      << mlb_last_error();
  const reftest::Case C = casesOf("rl_pass_agent.onnx").at(0);
  ASSERT_EQ(mlb_set_float_array(R, "obs", C.Inputs[0].dataAs<float>(), 8), MLB_OK);
  float Scores[6];
  size_t N = 0;
  ASSERT_EQ(mlb_evaluate_float_array(R, Scores, 6, &N), MLB_OK);
  ASSERT_EQ(N, 6u);
  for (size_t K = 0; K < N; ++K)
    EXPECT_NEAR(Scores[K], C.Outputs[0].dataAs<float>()[K], 1e-5);
  mlb_runner_destroy(R);
}

TEST(OnnxCApi, OneShotRun) {
  const reftest::Case C = casesOf("mlp_300_64_15.onnx").at(1);
  float Out[15];
  size_t N = 0;
  ASSERT_EQ(mlb_onnx_run_float(model("mlp_300_64_15.onnx").c_str(), nullptr,
                               C.Inputs[0].dataAs<float>(), 300, Out, 15, &N),
            MLB_OK)
      << mlb_last_error();
  ASSERT_EQ(N, 15u);
  for (size_t K = 0; K < N; ++K)
    EXPECT_NEAR(Out[K], C.Outputs[0].dataAs<float>()[K], 1e-5);
  EXPECT_EQ(mlb_onnx_run_float(model("mlp_300_64_15.onnx").c_str(), "x",
                               C.Inputs[0].dataAs<float>(), 300, Out, 4, &N),
            MLB_ERR_TOO_LARGE);
  EXPECT_EQ(N, 15u);
  EXPECT_EQ(mlb_onnx_run_float(model("multi_io.onnx").c_str(), nullptr,
                               C.Inputs[0].dataAs<float>(), 4, Out, 15, &N),
            MLB_ERR_INVALID_ARGUMENT); // several inputs: name one
  EXPECT_EQ(mlb_onnx_run_float("/nonexistent.onnx", nullptr, Out, 1, Out, 1, &N),
            MLB_ERR_NOT_FOUND);
}

// The runner from settings with the ONNX factory, and the decoded action:
// one score per action -> the index of the largest.
TEST(OnnxCApi, SettingsMakeTheRunnerAndTheActionIsTheArgmax) {
  const std::string Path = model("rl_pass_agent.onnx");
  mlb_runner_settings S;
  mlb_runner_settings_init(&S);
  S.onnx = mlb_onnx_runner_from_settings;
  ASSERT_EQ(mlb_runner_settings_set(&S, "model", Path.c_str()), MLB_OK);
  mlb_runner *R = nullptr;
  mlb_runner_kind K = MLB_RUNNER_AUTO;
  ASSERT_EQ(mlb_runner_create_from_settings(&S, &K, &R), MLB_OK) << mlb_last_error();
  EXPECT_EQ(K, MLB_RUNNER_ONNX);
  for (const reftest::Case &C : casesOf("rl_pass_agent.onnx")) {
    const float *Scores = C.Outputs[0].dataAs<float>();
    int64_t Best = 0;
    for (int64_t A = 1; A < 6; ++A)
      if (Scores[A] > Scores[Best])
        Best = A;
    ASSERT_EQ(mlb_set_float_array(R, "obs", C.Inputs[0].dataAs<float>(), 8), MLB_OK);
    int64_t Action = -1;
    ASSERT_EQ(mlb_evaluate_action(R, 6, &Action), MLB_OK) << mlb_last_error();
    EXPECT_EQ(Action, Best);
    if (Best > 0) {
      EXPECT_EQ(mlb_evaluate_action(R, Best, &Action), MLB_ERR_MALFORMED);
      EXPECT_NE(std::string(mlb_last_error()).find("answered action"), std::string::npos);
    }
  }
  mlb_runner_destroy(R);

  ASSERT_EQ(mlb_runner_settings_set(&S, "model", "/nonexistent/p.onnx"), MLB_OK);
  EXPECT_EQ(mlb_runner_create_from_settings(&S, &K, &R), MLB_ERR_NOT_FOUND);
  EXPECT_EQ(R, nullptr);
}
