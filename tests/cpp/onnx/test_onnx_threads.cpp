// 8 compiler threads evaluating concurrently give the same answers as one.
// Run under ThreadSanitizer by scripts/test.sh (tests named threads.*).
// The documented rule: one OnnxModel (session) shared by all threads, one
// OnnxModelRunner per thread; a runner per thread with its own model works
// too.
#include "onnx_test_util.h"

#include "mlbridge/onnx_model_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

using namespace mlbridge;

namespace {

constexpr int kThreads = 8;
constexpr int kRounds = 25;

/// Inputs for the MLP: the reference cases plus variations of them.
std::vector<std::vector<float>> makeInputs() {
  std::vector<std::vector<float>> Inputs;
  for (const reftest::Case &C : onnxtest::casesOf("mlp_300_64_15.onnx")) {
    if (C.Inputs[0].elementCount() != 300)
      continue;
    const float *P = C.Inputs[0].dataAs<float>();
    for (int V = 0; V < 4; ++V) {
      std::vector<float> X(P, P + 300);
      for (size_t K = 0; K < X.size(); ++K)
        X[K] += 0.01f * static_cast<float>(V * ((K % 7) - 3));
      Inputs.push_back(std::move(X));
    }
  }
  return Inputs;
}

std::vector<float> evaluateOnce(OnnxModelRunner &R, const std::vector<float> &X) {
  float *In = R.getTensor<float>(0);
  if (!In)
    return {};
  std::memcpy(In, X.data(), X.size() * sizeof(float));
  Expected<std::vector<float>> Y = R.evaluate<std::vector<float>>();
  return Y ? *Y : std::vector<float>();
}

/// Each thread evaluates every input kRounds times in its own order and
/// counts answers that differ (bit for bit) from the single-thread ones.
void runThreads(const std::function<std::unique_ptr<OnnxModelRunner>()> &Make,
                const std::vector<std::vector<float>> &Inputs,
                const std::vector<std::vector<float>> &Expected) {
  std::atomic<int> Mismatches{0}, Failures{0}, Evaluations{0};
  std::vector<std::thread> Threads;
  for (int T = 0; T < kThreads; ++T)
    Threads.emplace_back([&, T] {
      std::unique_ptr<OnnxModelRunner> R = Make();
      if (!R) {
        ++Failures;
        return;
      }
      for (int Round = 0; Round < kRounds; ++Round)
        for (size_t K = 0; K < Inputs.size(); ++K) {
          size_t I = (K * 7 + static_cast<size_t>(T) * 3 + Round) % Inputs.size();
          std::vector<float> Y = evaluateOnce(*R, Inputs[I]);
          ++Evaluations;
          if (Y.empty())
            ++Failures;
          else if (std::memcmp(Y.data(), Expected[I].data(),
                               Y.size() * sizeof(float)) != 0 ||
                   Y.size() != Expected[I].size())
            ++Mismatches;
        }
    });
  for (std::thread &T : Threads)
    T.join();
  EXPECT_EQ(Failures.load(), 0);
  EXPECT_EQ(Mismatches.load(), 0);
  EXPECT_EQ(Evaluations.load(),
            kThreads * kRounds * static_cast<int>(Inputs.size()));
}

OnnxOptions batchOne() {
  OnnxOptions O;
  O.Model.DimValues = {{"batch", 1}};
  return O;
}

} // namespace

TEST(OnnxThreads, EightThreadsShareOneModelAndAgreeWithOneThread) {
  auto Model = OnnxModel::load(onnxtest::model("mlp_300_64_15.onnx"),
                               batchOne().Model);
  ASSERT_TRUE(Model) << Model.status().toString();
  const auto Inputs = makeInputs();
  ASSERT_EQ(Inputs.size(), 12u);
  std::vector<std::vector<float>> Expected;
  {
    auto One = OnnxModelRunner::create(*Model, batchOne());
    ASSERT_TRUE(One);
    for (const auto &X : Inputs) {
      Expected.push_back(evaluateOnce(**One, X));
      ASSERT_EQ(Expected.back().size(), 15u);
    }
  }
  // The single-thread answers are PyTorch's (sanity: the test can fail).
  const auto Cases = onnxtest::casesOf("mlp_300_64_15.onnx");
  EXPECT_NEAR(Expected[0][0], Cases[0].Outputs[0].dataAs<float>()[0], 1e-5);
  std::shared_ptr<const OnnxModel> Shared = *Model;
  runThreads(
      [&] {
        auto R = OnnxModelRunner::create(Shared, batchOne());
        return R ? std::move(*R) : nullptr;
      },
      Inputs, Expected);
}

TEST(OnnxThreads, EightThreadsWithTheirOwnModelsAgreeWithOneThread) {
  const auto Inputs = makeInputs();
  std::vector<std::vector<float>> Expected;
  auto One = OnnxModelRunner::create(onnxtest::model("mlp_300_64_15.onnx"),
                                     batchOne());
  ASSERT_TRUE(One);
  for (const auto &X : Inputs)
    Expected.push_back(evaluateOnce(**One, X));
  runThreads(
      [&] {
        auto R = OnnxModelRunner::create(onnxtest::model("mlp_300_64_15.onnx"),
                                         batchOne());
        return R ? std::move(*R) : nullptr;
      },
      Inputs, Expected);
}
