// Compiled models from many threads at once (label "threads": also run
// under ThreadSanitizer). The generated code is a pure function of its
// inputs; each thread has its own runner (or its own workspace), all share
// the model's code and constant weights. Every thread must get, bit for
// bit, what one thread gets alone.
#include "compiled_test_models.h"
#include "mlbridge/compiled_model_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

using namespace mlbridge;
namespace ct = compiled_test;

namespace {

constexpr int kThreads = 8;
constexpr int kInputs = 32;
constexpr int kRounds = 8;

std::vector<std::vector<float>> randomInputs(size_t N, unsigned Seed) {
  std::mt19937 G(Seed);
  std::normal_distribution<float> D(0.0f, 1.5f);
  std::vector<std::vector<float>> R(kInputs, std::vector<float>(N));
  for (auto &V : R)
    for (float &X : V)
      X = D(G);
  return R;
}

/// All outputs of one evaluation, as bytes.
std::vector<unsigned char> allOutputs(const CompiledModelRunner &R) {
  std::vector<unsigned char> B;
  for (size_t I = 0; I < R.outputCount(); ++I) {
    const TensorValue *V = R.output(I);
    const auto *P = static_cast<const unsigned char *>(V->data());
    B.insert(B.end(), P, P + V->byteSize());
  }
  return B;
}

} // namespace

TEST(CompiledModelThreads, OneRunnerPerThreadMatchesOneThread) {
  const auto Inputs = randomInputs(24, 1);
  std::vector<std::vector<unsigned char>> Expected;
  {
    auto R = CompiledModelRunner::create<ct::policy_head>();
    ASSERT_TRUE(R);
    for (const auto &In : Inputs) {
      ASSERT_TRUE((*R)->setFeature("obs", In).isOk());
      ASSERT_TRUE((*R)->evaluateRaw().isOk());
      Expected.push_back(allOutputs(**R));
    }
  }
  std::atomic<int> Mismatches{0}, Failures{0};
  std::vector<std::thread> Threads;
  for (int T = 0; T < kThreads; ++T)
    Threads.emplace_back([&, T] {
      auto R = CompiledModelRunner::create<ct::policy_head>();
      if (!R) {
        ++Failures;
        return;
      }
      for (int Round = 0; Round < kRounds; ++Round)
        for (int K = 0; K < kInputs; ++K) {
          const int I = (K + T * 5) % kInputs; // threads out of step
          if (!(*R)->setFeature("obs", Inputs[I]).isOk() ||
              !(*R)->evaluateRaw().isOk()) {
            ++Failures;
            continue;
          }
          if (allOutputs(**R) != Expected[I])
            ++Mismatches;
        }
    });
  for (std::thread &T : Threads)
    T.join();
  EXPECT_EQ(Failures.load(), 0);
  EXPECT_EQ(Mismatches.load(), 0);
}

TEST(CompiledModelThreads, GeneratedFunctionWithPerThreadWorkspaces) {
  // The raw interface: mlp_300_64_15::run with a workspace per thread, and
  // the type-erased info() instances that CompiledModelRunner uses.
  const auto Inputs = randomInputs(300, 2);
  std::vector<std::vector<float>> Expected(kInputs, std::vector<float>(15));
  for (int I = 0; I < kInputs; ++I)
    ct::mlp_300_64_15::run(Inputs[I].data(), Expected[I].data());
  std::atomic<int> Mismatches{0};
  std::vector<std::thread> Threads;
  for (int T = 0; T < kThreads; ++T)
    Threads.emplace_back([&, T] {
      const EmbeddedModel &Info = ct::mlp_300_64_15::info();
      void *Erased = Info.Create();
      ct::mlp_300_64_15::Workspace W;
      float Out[15];
      for (int Round = 0; Round < kRounds; ++Round)
        for (int K = 0; K < kInputs; ++K) {
          const int I = (K * 7 + T) % kInputs;
          if (T % 2) {
            ct::mlp_300_64_15::run(Inputs[I].data(), Out, W);
          } else {
            std::memcpy(Info.InputBuffer(Erased, 0), Inputs[I].data(),
                        sizeof(float) * 300);
            if (!Info.Run(Erased))
              ++Mismatches;
            std::memcpy(Out, Info.OutputBuffer(Erased, 0), sizeof Out);
          }
          if (std::memcmp(Out, Expected[I].data(), sizeof Out) != 0)
            ++Mismatches;
        }
      Info.Destroy(Erased);
    });
  for (std::thread &T : Threads)
    T.join();
  EXPECT_EQ(Mismatches.load(), 0);
}

TEST(CompiledModelThreads, DifferentModelsAtOnce) {
  // Threads running different compiled models side by side.
  std::atomic<int> Failures{0};
  std::vector<std::thread> Threads;
  for (int T = 0; T < kThreads; ++T)
    Threads.emplace_back([&, T] {
      const size_t Count = std::size(kCompiledTestModels);
      const CompiledTestModel &M = kCompiledTestModels[T % Count];
      auto R = CompiledModelRunner::create(M.Info());
      if (!R) {
        ++Failures;
        return;
      }
      std::vector<unsigned char> First;
      for (int Round = 0; Round < kRounds * 4; ++Round) {
        if (!(*R)->evaluateRaw().isOk()) {
          ++Failures;
          continue;
        }
        std::vector<unsigned char> Now = allOutputs(**R);
        if (Round == 0)
          First = Now;
        else if (Now != First)
          ++Failures;
      }
    });
  for (std::thread &T : Threads)
    T.join();
  EXPECT_EQ(Failures.load(), 0);
}
