// The hot path allocates nothing: after the first evaluation, writing the
// features in place and evaluateRaw() never call operator new. Own
// executable: it replaces the global operator new to count calls.
#include "mlbridge_tf_model_policy.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<long> Allocations{0};
}

void *operator new(std::size_t N) {
  ++Allocations;
  if (void *P = std::malloc(N ? N : 1))
    return P;
  throw std::bad_alloc();
}
void operator delete(void *P) noexcept { std::free(P); }
void operator delete(void *P, std::size_t) noexcept { std::free(P); }

TEST(TfModelRunnerAlloc, EvaluationsAllocateNothing) {
  mlbridge::TfOptions O;
  O.AdviceOutput = "logits";
  auto Created = mlbridge::TfModelRunner::create(mlbridge::tfmodels::PolicyModel(), O);
  ASSERT_TRUE(Created);
  mlbridge::TfModelRunner &Runner = **Created;
  float *Obs = Runner.getTensor<float>(*Runner.featureIndex("observation"));
  float *Mask = Runner.getTensor<float>(*Runner.featureIndex("action_mask"));
  ASSERT_TRUE(Obs && Mask);
  for (int I = 0; I < 4; ++I)
    Mask[I] = 1.f;
  ASSERT_TRUE(Runner.evaluateRaw().isOk()); // warm-up
  ASSERT_TRUE(Runner.output("value"));
  const long Before = Allocations.load();
  for (int K = 0; K < 1000; ++K) {
    Obs[K % 8] = float(K) * 0.01f;
    if (!Runner.evaluateRaw().isOk())
      FAIL();
    if (!Runner.output("value"))
      FAIL();
  }
  EXPECT_EQ(Allocations.load() - Before, 0);
}
