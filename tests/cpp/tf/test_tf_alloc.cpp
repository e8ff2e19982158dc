// The hot path allocates nothing: after the first evaluation, writing the
// features in place and evaluateRaw() never call operator new. Own
// executable: it replaces the global operator new to count calls.
#include "../alloc_counting.h"
#include "mlbridge_tf_model_policy.h"

#include <gtest/gtest.h>

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
  const long Before = alloc_counting::Allocations.load();
  for (int K = 0; K < 1000; ++K) {
    Obs[K % 8] = float(K) * 0.01f;
    if (!Runner.evaluateRaw().isOk())
      FAIL();
    if (!Runner.output("value"))
      FAIL();
  }
  EXPECT_EQ(alloc_counting::Allocations.load() - Before, 0);
}
