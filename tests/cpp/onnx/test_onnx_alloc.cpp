// The hot path allocates nothing of its own: after a first evaluation with
// given shapes, OnnxModelRunner::evaluateRaw makes exactly as many heap
// allocations as ONNX Runtime's own Run over pre-made values (the floor).
// Own executable: it replaces the global operator new to count.
#include "../alloc_counting.h"
#include "onnx_test_util.h"

#include "mlbridge/onnx_model_runner.h"

#include <onnxruntime_c_api.h>

#include <gtest/gtest.h>

using namespace mlbridge;

namespace {

constexpr int kCalls = 200;

template <typename F> long allocationsOf(F &&Body) {
  const long Before = alloc_counting::Allocations.load();
  for (int I = 0; I < kCalls; ++I)
    Body(I);
  return alloc_counting::Allocations.load() - Before;
}

#define ORT_OK(X)                                                              \
  do {                                                                         \
    OrtStatus *S_ = (X);                                                       \
    ASSERT_EQ(S_, nullptr) << Api->GetErrorMessage(S_);                        \
  } while (0)

} // namespace

TEST(OnnxAlloc, HotPathAllocatesNoMoreThanOnnxRuntimeItself) {
  const std::string Path = onnxtest::model("mlp_300_64_15.onnx");
  OnnxOptions O;
  O.Model.DimValues = {{"batch", 1}};
  auto Runner = OnnxModelRunner::create(Path, O);
  ASSERT_TRUE(Runner) << Runner.status().toString();
  OnnxModelRunner &R = **Runner;
  float *X = R.getTensor<float>(0);
  ASSERT_NE(X, nullptr);
  for (int I = 0; I < 300; ++I)
    X[I] = 0.01f * static_cast<float>(I % 17);
  for (int I = 0; I < 5; ++I) // first call learns the output shapes
    ASSERT_TRUE(R.evaluateRaw().isOk());

  // ONNX Runtime alone, same settings, values made once.
  const OrtApi *Api = OrtGetApiBase()->GetApi(ORT_API_VERSION);
  OrtEnv *Env = nullptr;
  ORT_OK(Api->CreateEnv(ORT_LOGGING_LEVEL_FATAL, "alloc-test", &Env));
  OrtSessionOptions *SO = nullptr;
  ORT_OK(Api->CreateSessionOptions(&SO));
  ORT_OK(Api->SetIntraOpNumThreads(SO, 1));
  ORT_OK(Api->SetInterOpNumThreads(SO, 1));
  ORT_OK(Api->AddFreeDimensionOverrideByName(SO, "batch", 1));
  OrtSession *Session = nullptr;
  ORT_OK(Api->CreateSession(Env, Path.c_str(), SO, &Session));
  OrtMemoryInfo *Mem = nullptr;
  ORT_OK(Api->CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, &Mem));
  std::vector<float> In(X, X + 300), Out(15);
  const int64_t InShape[] = {1, 300}, OutShape[] = {1, 15};
  OrtValue *InV = nullptr, *OutV = nullptr;
  ORT_OK(Api->CreateTensorWithDataAsOrtValue(Mem, In.data(), In.size() * 4, InShape,
                                             2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &InV));
  ORT_OK(Api->CreateTensorWithDataAsOrtValue(Mem, Out.data(), Out.size() * 4,
                                             OutShape, 2,
                                             ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &OutV));
  const char *InNames[] = {"x"}, *OutNames[] = {"scores"};
  bool RawOk = true;
  auto RawRun = [&](int) {
    OrtValue *Outs[] = {OutV};
    if (OrtStatus *S = Api->Run(Session, nullptr, InNames, &InV, 1, OutNames, 1, Outs)) {
      Api->ReleaseStatus(S);
      RawOk = false;
    }
  };
  for (int I = 0; I < 5; ++I)
    RawRun(I);

  bool RunnerOk = true;
  const long Raw = allocationsOf(RawRun);
  const long Ours = allocationsOf([&](int I) {
    X[I % 300] += 1e-3f; // a compiler writes its features in place
    RunnerOk = RunnerOk && R.evaluateRaw().isOk();
  });
  EXPECT_TRUE(RawOk);
  EXPECT_TRUE(RunnerOk);
  EXPECT_EQ(Ours, Raw) << "ONNX Runtime allocates " << Raw << " times per "
                       << kCalls << " calls; the runner " << Ours;
  RecordProperty("ort_allocations_per_call", std::to_string(Raw / kCalls));
  // The outputs agree with ONNX Runtime's own.
  for (int I = 0; I < 300; ++I)
    In[I] = X[I];
  RawRun(0);
  ASSERT_TRUE(R.evaluateRaw().isOk());
  for (int J = 0; J < 15; ++J)
    EXPECT_EQ(Out[J], R.advice().dataAs<float>()[J]);

  Api->ReleaseValue(InV);
  Api->ReleaseValue(OutV);
  Api->ReleaseMemoryInfo(Mem);
  Api->ReleaseSession(Session);
  Api->ReleaseSessionOptions(SO);
  Api->ReleaseEnv(Env);
}

TEST(OnnxAlloc, ShapeChangesAllocateOnceThenSettle) {
  auto Runner = OnnxModelRunner::create(onnxtest::model("mlp_300_64_15.onnx"));
  ASSERT_TRUE(Runner);
  OnnxModelRunner &R = **Runner;
  std::vector<float> One(300, 0.5f), Three(900, 0.25f);
  ASSERT_TRUE(R.setFeature("x", One).isOk());
  ASSERT_TRUE(R.evaluateRaw().isOk());
  ASSERT_TRUE(R.evaluateRaw().isOk());
  const long Steady = allocationsOf([&](int) { (void)R.evaluateRaw(); });
  ASSERT_TRUE(R.setFeature("x", Three).isOk()); // batch 3: relearn outputs
  const long Before = alloc_counting::Allocations.load();
  ASSERT_TRUE(R.evaluateRaw().isOk());
  EXPECT_GT(alloc_counting::Allocations.load() - Before, 0);
  EXPECT_EQ(R.advice().spec().shape(), (std::vector<int64_t>{3, 15}));
  ASSERT_TRUE(R.evaluateRaw().isOk());
  const long Settled = allocationsOf([&](int) { (void)R.evaluateRaw(); });
  EXPECT_LE(Settled, Steady + kCalls / 100) << "steady " << Steady;
}
