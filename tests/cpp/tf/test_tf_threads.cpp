// Threads: one TfModelRunner per thread over one compiled model (the rule in
// tf_model_runner.h) gives exactly the single-threaded results. Runs under
// ThreadSanitizer in scripts/test.sh (ctest -R '^threads[.]' / -L threads).
#include "mlbridge_tf_model_policy.h"

#include "mlbridge/tf_model_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

using namespace mlbridge;

namespace {

constexpr int kThreads = 8;
constexpr int kCalls = 300;

struct Input {
  std::vector<float> Obs = std::vector<float>(8);
  std::vector<float> Mask = std::vector<float>(4);
  int64_t Step = 0;
};

std::vector<Input> makeInputs() {
  std::mt19937 Rng(7);
  std::normal_distribution<float> N;
  std::vector<Input> In(kCalls);
  for (Input &I : In) {
    for (float &X : I.Obs)
      X = N(Rng);
    for (float &M : I.Mask)
      M = (Rng() % 4) ? 1.f : 0.f;
    I.Mask[Rng() % 4] = 1.f;
    I.Step = int64_t(Rng() % 50);
  }
  return In;
}

// Logits and action of every input, in order.
std::vector<float> runAll(TfModelRunner &R, const std::vector<Input> &In,
                          std::string &Error) {
  std::vector<float> Out;
  for (const Input &I : In) {
    R.setFeature("observation", I.Obs);
    R.setFeature("action_mask", I.Mask);
    R.setFeature("step", I.Step);
    Expected<int64_t> A = R.evaluate<int64_t>();
    const TensorValue *L = R.output("logits");
    if (!A || !L) {
      Error = !A ? A.status().toString() : "no output 'logits'";
      return Out;
    }
    const float *P = L->dataAs<float>();
    Out.insert(Out.end(), P, P + 4);
    Out.push_back(float(*A));
  }
  return Out;
}

} // namespace

TEST(TfModelRunnerThreads, OneRunnerPerThreadMatchesOneThread) {
  const std::vector<Input> In = makeInputs();
  auto Created = TfModelRunner::create(tfmodels::PolicyModel());
  ASSERT_TRUE(Created) << Created.status().toString();
  TfModelRunner &Single = **Created;
  std::string Error;
  const std::vector<float> Want = runAll(Single, In, Error);
  ASSERT_TRUE(Error.empty()) << Error;
  ASSERT_EQ(Want.size(), size_t(kCalls) * 5);

  std::vector<std::vector<float>> Got(kThreads);
  std::vector<std::string> Errors(kThreads);
  std::vector<std::thread> Threads;
  std::atomic<int> Ready{0};
  for (int T = 0; T < kThreads; ++T)
    Threads.emplace_back([&, T] {
      // Half the threads clone the shared runner, half create their own
      // concurrently: both only read the compiled model's static data.
      auto C = T % 2 ? Single.clone()
                     : TfModelRunner::create(tfmodels::PolicyModel());
      if (!C) {
        Errors[T] = C.status().toString();
        return;
      }
      std::unique_ptr<TfModelRunner> R = std::move(*C);
      ++Ready;
      while (Ready.load() < kThreads)
        std::this_thread::yield(); // start together for maximal overlap
      Got[T] = runAll(*R, In, Errors[T]);
    });
  for (std::thread &Th : Threads)
    Th.join();
  for (int T = 0; T < kThreads; ++T) {
    ASSERT_TRUE(Errors[T].empty()) << "thread " << T << ": " << Errors[T];
    EXPECT_EQ(Got[T], Want) << "thread " << T; // bit for bit
  }
}
