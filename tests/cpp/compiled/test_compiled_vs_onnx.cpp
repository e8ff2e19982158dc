// The compiled models against OnnxModelRunner (ONNX Runtime in-process),
// through the same ModelRunner API: a pass switches runners by changing the
// line that makes the runner. Built when the ONNX Runtime runner is.
#include "compiled_test_models.h"
#include "mlbridge/compiled_model_runner.h"
#include "mlbridge/onnx_model_runner.h"
#include "mlbridge/rl.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace mlbridge;
namespace ct = compiled_test;

namespace {

constexpr int kSamples = 1000;
constexpr double kTolerance = 1e-5;

/// The one line that differs between deployment with ONNX Runtime and with
/// the compiled model.
std::unique_ptr<ModelRunner> makeRunner(const CompiledTestModel &M,
                                        bool Compiled) {
  if (Compiled) {
    auto R = CompiledModelRunner::create(M.Info());
    return R ? std::move(*R) : nullptr;
  }
  auto R = OnnxModelRunner::create(M.OnnxPath);
  return R ? std::move(*R) : nullptr;
}

const TensorValue *outputOf(ModelRunner &R, size_t I) {
  if (auto *C = dynamic_cast<CompiledModelRunner *>(&R))
    return C->output(I);
  return static_cast<OnnxModelRunner &>(R).output(I);
}

size_t outputCountOf(ModelRunner &R) {
  if (auto *C = dynamic_cast<CompiledModelRunner *>(&R))
    return C->outputCount();
  return static_cast<OnnxModelRunner &>(R).model()->outputs().size();
}

void fillRandom(TensorValue &V, std::mt19937 &G) {
  std::normal_distribution<double> N(0.0, 1.5);
  std::uniform_int_distribution<int> I(-4, 4);
  const size_t Count = V.elementCount();
  auto *B = static_cast<unsigned char *>(V.data());
  for (size_t K = 0; K < Count; ++K) {
    switch (V.type()) {
    case DType::Float: reinterpret_cast<float *>(B)[K] = float(N(G)); break;
    case DType::Double: reinterpret_cast<double *>(B)[K] = N(G); break;
    case DType::Int32: reinterpret_cast<int32_t *>(B)[K] = I(G); break;
    case DType::Int64: reinterpret_cast<int64_t *>(B)[K] = I(G); break;
    case DType::Bool: B[K] = I(G) > 0; break;
    default: FAIL() << "unexpected input type in a test model";
    }
  }
}

double scaledError(const TensorValue &Got, const TensorValue &Want) {
  double Worst = 0;
  for (size_t K = 0; K < Want.elementCount(); ++K) {
    double G = 0, W = 0;
    switch (Want.type()) {
    case DType::Float:
      G = Got.dataAs<float>()[K];
      W = Want.dataAs<float>()[K];
      break;
    case DType::Double:
      G = Got.dataAs<double>()[K];
      W = Want.dataAs<double>()[K];
      break;
    case DType::Int64:
      G = double(Got.dataAs<int64_t>()[K]);
      W = double(Want.dataAs<int64_t>()[K]);
      break;
    case DType::Int32:
      G = Got.dataAs<int32_t>()[K];
      W = Want.dataAs<int32_t>()[K];
      break;
    default:
      return INFINITY;
    }
    Worst = std::max(Worst, std::fabs(G - W) / std::max(1.0, std::fabs(W)));
  }
  return Worst;
}

} // namespace

TEST(CompiledVsOnnx, SameFeaturesAndOutputs) {
  for (const CompiledTestModel &M : kCompiledTestModels) {
    SCOPED_TRACE(M.Name);
    auto C = makeRunner(M, true), O = makeRunner(M, false);
    ASSERT_TRUE(C && O);
    ASSERT_EQ(C->featureCount(), O->featureCount());
    for (size_t I = 0; I < C->featureCount(); ++I) {
      EXPECT_EQ(C->featureSpec(I).name(), O->featureSpec(I).name());
      EXPECT_EQ(C->featureSpec(I).type(), O->featureSpec(I).type());
      EXPECT_EQ(C->featureSpec(I).elementCount(),
                O->featureSpec(I).elementCount());
    }
    ASSERT_TRUE(C->adviceSpec() && O->adviceSpec());
    EXPECT_EQ(C->adviceSpec()->name(), O->adviceSpec()->name());
    EXPECT_EQ(C->adviceSpec()->type(), O->adviceSpec()->type());
    EXPECT_EQ(outputCountOf(*C), outputCountOf(*O));
  }
}

TEST(CompiledVsOnnx, MatchesOnRandomInputs) {
  for (const CompiledTestModel &M : kCompiledTestModels) {
    SCOPED_TRACE(M.Name);
    auto C = makeRunner(M, true), O = makeRunner(M, false);
    ASSERT_TRUE(C && O);
    std::mt19937 G(42);
    std::vector<TensorValue> In;
    for (size_t I = 0; I < C->featureCount(); ++I)
      In.emplace_back(C->featureSpec(I));
    double Worst = 0;
    for (int S = 0; S < kSamples; ++S) {
      for (TensorValue &V : In) {
        fillRandom(V, G);
        ASSERT_TRUE(C->setFeatureBytes(V.spec().name(), V.type(),
                                       V.spec().shape(), V.data(),
                                       V.byteSize())
                        .isOk());
        ASSERT_TRUE(O->setFeatureBytes(V.spec().name(), V.type(),
                                       O->featureSpec(*O->featureIndex(
                                                          V.spec().name()))
                                           .shape(),
                                       V.data(), V.byteSize())
                        .isOk());
      }
      ASSERT_TRUE(C->evaluateRaw().isOk());
      Status OS = O->evaluateRaw();
      ASSERT_TRUE(OS.isOk()) << OS.toString();
      for (size_t K = 0; K < outputCountOf(*C); ++K) {
        const TensorValue *CV = outputOf(*C, K), *OV = outputOf(*O, K);
        ASSERT_TRUE(CV && OV);
        ASSERT_EQ(CV->elementCount(), OV->elementCount());
        const double E = scaledError(*CV, *OV);
        Worst = std::max(Worst, E);
        ASSERT_LE(E, kTolerance) << "output " << K << ", sample " << S;
      }
    }
    RecordProperty(std::string("worst_error_") + M.Name, std::to_string(Worst));
  }
}

namespace {

/// An environment written once; the agent's runner is swapped underneath.
class ScoreEnv : public rl::Environment {
public:
  Status reset() override {
    std::mt19937 G(5);
    std::normal_distribution<float> N(0.0f, 1.0f);
    State.assign(24, 0.0f);
    for (float &X : State)
      X = N(G);
    Decisions.clear();
    return Status::ok();
  }
  Status observe(ModelRunner &R) override { return R.setFeature("obs", State); }
  Status step(const rl::Action &A) override {
    Decisions.push_back(A.Index);
    State[(A.Step * 7) % 24] -= 0.3f * static_cast<float>(A.Index);
    if (A.Step + 1 == 40)
      setDone();
    return Status::ok();
  }
  std::vector<float> State;
  std::vector<int64_t> Decisions;
};

} // namespace

TEST(CompiledVsOnnx, SameEnvironmentSameDecisions) {
  const CompiledTestModel *Policy = nullptr;
  for (const CompiledTestModel &M : kCompiledTestModels)
    if (std::string(M.Name) == "policy_head")
      Policy = &M;
  ASSERT_NE(Policy, nullptr);
  std::vector<int64_t> Runs[2];
  for (bool Compiled : {false, true}) {
    ScoreEnv Env;
    rl::Driver D(Env);
    ASSERT_TRUE(D.addAgent("policy", makeRunner(*Policy, Compiled)).isOk());
    Expected<rl::EpisodeResult> E = D.runEpisode();
    ASSERT_TRUE(E) << E.status().toString();
    EXPECT_EQ(E->Steps, 40u);
    Runs[Compiled] = Env.Decisions;
  }
  EXPECT_EQ(Runs[0], Runs[1]);
}
