// OnnxModelRunner: outputs match PyTorch's (models/reference.txt, written by
// tools/models/export.py from the same modules), features map to inputs by
// name, every supported dtype, variable dimensions, and clear errors for
// wrong names, shapes, dtypes and missing or corrupt model files.
#include "onnx_test_util.h"

#include "mlbridge/onnx_model_runner.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include <unistd.h>

using namespace mlbridge;
using onnxtest::casesOf;
using onnxtest::model;
using onnxtest::sameTensor;

namespace {

std::unique_ptr<OnnxModelRunner> mustCreate(const std::string &File,
                                            OnnxOptions O = OnnxOptions()) {
  auto R = OnnxModelRunner::create(model(File), std::move(O));
  EXPECT_TRUE(R) << R.status().toString();
  return R ? std::move(*R) : nullptr;
}

Status setInputs(ModelRunner &R, const reftest::Case &C) {
  for (const TensorValue &In : C.Inputs)
    if (Status S = R.setFeatureBytes(In.spec().name(), In.type(),
                                     In.spec().shape(), In.data(),
                                     In.byteSize());
        !S.isOk())
      return S;
  return Status::ok();
}

void expectAllOutputs(OnnxModelRunner &R, const reftest::Case &C) {
  for (const TensorValue &Want : C.Outputs) {
    const TensorValue *Got = R.output(Want.spec().name());
    ASSERT_NE(Got, nullptr) << Want.spec().name();
    EXPECT_TRUE(sameTensor(*Got, Want));
  }
}

std::vector<unsigned char> readFile(const std::string &Path) {
  std::ifstream In(Path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(In), {});
}

/// A file in the test's temporary directory, removed at the end.
class TempFile {
public:
  explicit TempFile(const std::string &Bytes) {
    char Tmpl[] = "/tmp/mlbridge-onnx-test-XXXXXX";
    int Fd = mkstemp(Tmpl);
    EXPECT_GE(Fd, 0);
    Path = Tmpl;
    if (!Bytes.empty()) {
      EXPECT_EQ(write(Fd, Bytes.data(), Bytes.size()),
                static_cast<ssize_t>(Bytes.size()));
    }
    close(Fd);
  }
  ~TempFile() { unlink(Path.c_str()); }
  std::string Path;
};

} // namespace

// ---- outputs match PyTorch -------------------------------------------------

TEST(OnnxRunner, MlpMatchesPyTorch) {
  auto R = mustCreate("mlp_300_64_15.onnx");
  ASSERT_TRUE(R);
  auto Cases = casesOf("mlp_300_64_15.onnx");
  ASSERT_EQ(Cases.size(), 4u);
  for (const reftest::Case &C : Cases) {
    ASSERT_TRUE(setInputs(*R, C).isOk());
    Expected<std::vector<float>> Scores = R->evaluate<std::vector<float>>();
    ASSERT_TRUE(Scores) << Scores.status().toString();
    EXPECT_EQ(R->advice().spec().shape(), C.Outputs[0].spec().shape());
    EXPECT_TRUE(sameTensor(R->advice(), C.Outputs[0]));
    EXPECT_EQ(Scores->size(), C.Outputs[0].elementCount());
  }
}

TEST(OnnxRunner, CloneSharesTheModelAndMatches) {
  auto R = mustCreate("mlp_300_64_15.onnx");
  ASSERT_TRUE(R);
  Expected<std::unique_ptr<OnnxModelRunner>> C = R->clone();
  ASSERT_TRUE(C) << C.status().toString();
  EXPECT_EQ((*C)->model(), R->model()) << "the loaded model is shared";
  EXPECT_EQ(*(*C)->adviceSpec(), *R->adviceSpec());
  const std::vector<reftest::Case> Cases = casesOf("mlp_300_64_15.onnx");
  ASSERT_FALSE(Cases.empty());
  const reftest::Case &Case = Cases[0];
  ASSERT_TRUE(setInputs(**C, Case).isOk());
  ASSERT_TRUE((*C)->evaluate<std::vector<float>>());
  EXPECT_TRUE(sameTensor((*C)->advice(), Case.Outputs[0]));
}

TEST(OnnxRunner, SeveralInputsAndOutputsOfEveryDtypeMatchPyTorch) {
  auto R = mustCreate("multi_io.onnx");
  ASSERT_TRUE(R);
  // Inputs come from the model itself, in model order, with their dtypes
  // and variable dimensions.
  const std::vector<TensorSpec> Want = {
      TensorSpec("features", DType::Float, {kDynamicDim, 4}),
      TensorSpec("weights", DType::Double, {3}),
      TensorSpec("counts", DType::Int64, {2}),
      TensorSpec("offset", DType::Int32, {1}),
      TensorSpec("mask", DType::Bool, {4}),
      TensorSpec("seq", DType::Float, {kDynamicDim})};
  EXPECT_EQ(R->model()->inputs(), Want);
  ASSERT_EQ(R->model()->outputs().size(), 6u);
  EXPECT_EQ(R->model()->outputs()[4],
            TensorSpec("any_masked", DType::Bool, {1}));
  // The advice is named by the model's metadata: "best", int64[batch].
  ASSERT_TRUE(R->adviceSpec());
  EXPECT_EQ(*R->adviceSpec(), TensorSpec("best", DType::Int64, {kDynamicDim}));

  auto Cases = casesOf("multi_io.onnx");
  ASSERT_EQ(Cases.size(), 3u);
  for (const reftest::Case &C : Cases) { // batch and seq lengths change
    ASSERT_TRUE(setInputs(*R, C).isOk());
    Status S = R->evaluateRaw();
    ASSERT_TRUE(S.isOk()) << S.toString();
    expectAllOutputs(*R, C);
  }
}

TEST(OnnxRunner, AgentsMatchPyTorch) {
  for (const char *File : {"rl_pass_agent.onnx", "rl_factor_agent.onnx"}) {
    auto R = mustCreate(File);
    ASSERT_TRUE(R);
    for (const reftest::Case &C : casesOf(File)) {
      ASSERT_TRUE(setInputs(*R, C).isOk());
      ASSERT_TRUE(R->evaluateRaw().isOk());
      EXPECT_TRUE(sameTensor(R->advice(), C.Outputs[0])) << File;
    }
  }
}

TEST(OnnxRunner, TypedSettersAndInPlaceWritesFeedTheModel) {
  auto R = mustCreate("multi_io.onnx");
  ASSERT_TRUE(R);
  const reftest::Case C = casesOf("multi_io.onnx").at(0); // batch 1, seq 5
  auto Vec = [](const TensorValue &V, auto Tag) {
    using T = decltype(Tag);
    const T *P = V.dataAs<T>();
    return std::vector<T>(P, P + V.elementCount());
  };
  std::vector<bool> Mask;
  for (size_t K = 0; K < 4; ++K)
    Mask.push_back(static_cast<const unsigned char *>(C.Inputs[4].data())[K]);
  Status S = R->populateFeatures(
      std::make_pair("features", Vec(C.Inputs[0], float())),
      std::make_pair("weights", Vec(C.Inputs[1], double())),
      std::make_pair("mask", Mask), std::make_pair("seq", Vec(C.Inputs[5], float())));
  ASSERT_TRUE(S.isOk()) << S.toString();
  // Fixed-shape inputs are allocated up front and written in place.
  int64_t *Counts = R->getTensor<int64_t>(2);
  int32_t *Offset = R->getTensor<int32_t>(3);
  ASSERT_TRUE(Counts && Offset);
  EXPECT_EQ(R->getTensor<float>(2), nullptr); // wrong T: no buffer
  Counts[0] = C.Inputs[2].dataAs<int64_t>()[0];
  Counts[1] = C.Inputs[2].dataAs<int64_t>()[1];
  *Offset = C.Inputs[3].dataAs<int32_t>()[0];
  Expected<int64_t> Best = R->evaluate<int64_t>(); // batch 1: one element
  ASSERT_TRUE(Best) << Best.status().toString();
  EXPECT_EQ(*Best, C.Outputs[2].dataAs<int64_t>()[0]);
  expectAllOutputs(*R, C);
}

TEST(OnnxRunner, ShapesMayChangeBetweenEvaluations) {
  auto R = mustCreate("mlp_300_64_15.onnx");
  ASSERT_TRUE(R);
  auto Cases = casesOf("mlp_300_64_15.onnx"); // batch 1, 1, 1, 3
  for (size_t Round = 0; Round < 2; ++Round)
    for (size_t K : {3u, 0u, 3u, 1u, 2u}) {
      ASSERT_TRUE(setInputs(*R, Cases[K]).isOk());
      ASSERT_TRUE(R->evaluateRaw().isOk());
      EXPECT_TRUE(sameTensor(R->advice(), Cases[K].Outputs[0])) << K;
    }
}

TEST(OnnxRunner, LoadsFromBytes) {
  std::vector<unsigned char> Bytes = readFile(model("mlp_300_64_15.onnx"));
  ASSERT_GT(Bytes.size(), 1000u);
  auto R = OnnxModelRunner::createFromBytes(Bytes.data(), Bytes.size());
  ASSERT_TRUE(R) << R.status().toString();
  Bytes.assign(Bytes.size(), 0); // the runner does not keep the caller's bytes
  const reftest::Case C = casesOf("mlp_300_64_15.onnx").at(0);
  ASSERT_TRUE(setInputs(**R, C).isOk());
  ASSERT_TRUE((*R)->evaluateRaw().isOk());
  EXPECT_TRUE(sameTensor((*R)->advice(), C.Outputs[0]));
  EXPECT_EQ((*R)->model()->source(), "<memory>");
}

TEST(OnnxRunner, OneLoadedModelServesManyRunners) {
  auto M = OnnxModel::load(model("mlp_300_64_15.onnx"));
  ASSERT_TRUE(M) << M.status().toString();
  EXPECT_EQ((*M)->metadata("mlbridge.advice"), std::optional<std::string>("scores"));
  EXPECT_EQ((*M)->metadata("no.such.key"), std::nullopt);
  auto A = OnnxModelRunner::create(*M);
  auto B = OnnxModelRunner::create(*M);
  ASSERT_TRUE(A && B);
  EXPECT_EQ((*A)->model(), (*B)->model());
  auto Cases = casesOf("mlp_300_64_15.onnx");
  ASSERT_TRUE(setInputs(**A, Cases[0]).isOk());
  ASSERT_TRUE(setInputs(**B, Cases[1]).isOk());
  ASSERT_TRUE((*A)->evaluateRaw().isOk());
  ASSERT_TRUE((*B)->evaluateRaw().isOk());
  EXPECT_TRUE(sameTensor((*A)->advice(), Cases[0].Outputs[0]));
  EXPECT_TRUE(sameTensor((*B)->advice(), Cases[1].Outputs[0]));
}

// ---- choosing the advice ---------------------------------------------------

TEST(OnnxRunner, AdviceIsTheNamedOutput) {
  const reftest::Case C = casesOf("multi_io.onnx").at(1);
  OnnxOptions O;
  O.AdviceOutput = "total";
  auto R = mustCreate("multi_io.onnx", O);
  ASSERT_TRUE(R);
  ASSERT_TRUE(setInputs(*R, C).isOk());
  Expected<double> Total = R->evaluate<double>();
  ASSERT_TRUE(Total) << Total.status().toString();
  EXPECT_NEAR(*Total, C.Outputs[1].dataAs<double>()[0], 1e-9);

  // The wrong C++ type for the advice is a type error, before running.
  Expected<float> AsFloat = R->evaluate<float>();
  ASSERT_FALSE(AsFloat);
  EXPECT_EQ(AsFloat.status().code(), ErrorCode::TypeMismatch);
  EXPECT_NE(AsFloat.status().message().find("double"), std::string::npos);

  ASSERT_TRUE(R->selectAdvice("seq_stats").isOk());
  Expected<std::vector<float>> Stats = R->evaluate<std::vector<float>>();
  ASSERT_TRUE(Stats);
  ASSERT_EQ(Stats->size(), 2u);
  EXPECT_NEAR((*Stats)[1], C.Outputs[5].dataAs<float>()[1], 1e-5);
  // A vector advice read as a scalar: clear error, not the first element.
  Expected<float> One = R->evaluate<float>();
  ASSERT_FALSE(One);
  EXPECT_EQ(One.status().code(), ErrorCode::TypeMismatch);
  // Every output stays readable, whichever is the advice.
  expectAllOutputs(*R, C);

  Status Bad = R->selectAdvice("no_such_output");
  EXPECT_EQ(Bad.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(Bad.message().find("seq_stats"), std::string::npos) << Bad.message();
  EXPECT_EQ(R->output("no_such_output"), nullptr);
  EXPECT_EQ(R->output(99), nullptr);
}

TEST(OnnxRunner, UnknownAdviceOutputIsAClearError) {
  OnnxOptions O;
  O.AdviceOutput = "nope";
  auto R = OnnxModelRunner::create(model("multi_io.onnx"), O);
  ASSERT_FALSE(R);
  EXPECT_EQ(R.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(R.status().message().find("'nope'"), std::string::npos);
  EXPECT_NE(R.status().message().find("any_masked"), std::string::npos);
}

TEST(OnnxRunner, OutputsAreReadableOnlyAfterAnEvaluation) {
  auto R = mustCreate("mlp_300_64_15.onnx");
  ASSERT_TRUE(R);
  EXPECT_EQ(R->output(size_t(0)), nullptr);
  const reftest::Case C = casesOf("mlp_300_64_15.onnx").at(0);
  ASSERT_TRUE(setInputs(*R, C).isOk());
  ASSERT_TRUE(R->evaluateRaw().isOk());
  ASSERT_NE(R->output("scores"), nullptr);
  EXPECT_EQ(R->output("scores"), &R->advice()); // no copy: the advice buffer
}

// ---- wrong inputs: clear errors, nothing runs ------------------------------

TEST(OnnxRunner, UnknownInputNameIsAnError) {
  auto R = mustCreate("mlp_300_64_15.onnx");
  ASSERT_TRUE(R);
  Status S = R->setFeature("y", std::vector<float>(300, 0.f));
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(S.message().find("unknown feature 'y'"), std::string::npos)
      << S.message();
  EXPECT_NE(S.message().find("x"), std::string::npos); // names the inputs
  // ... and the next evaluation reports it instead of running.
  Expected<std::vector<float>> E = R->evaluate<std::vector<float>>();
  ASSERT_FALSE(E);
  EXPECT_EQ(E.status().code(), ErrorCode::InvalidArgument);
}

TEST(OnnxRunner, WrongShapeIsAnError) {
  auto R = mustCreate("mlp_300_64_15.onnx");
  ASSERT_TRUE(R);
  Status S = R->setFeature("x", std::vector<float>(299, 0.f));
  EXPECT_EQ(S.code(), ErrorCode::TypeMismatch);
  EXPECT_NE(S.message().find("299"), std::string::npos) << S.message();
  auto M = mustCreate("multi_io.onnx");
  ASSERT_TRUE(M);
  S = M->setFeature("weights", std::vector<double>(4, 1.0));
  EXPECT_EQ(S.code(), ErrorCode::TypeMismatch);
  EXPECT_NE(S.message().find("[3]"), std::string::npos) << S.message();
  // An explicit shape of the wrong rank for the model input.
  S = M->setFeatureBytes("features", DType::Float, {8}, std::vector<float>(8).data(), 32);
  EXPECT_TRUE(S.isOk()) << "a [-1,4] input takes 8 values as [2,4]: " << S.toString();
  EXPECT_EQ(M->featureSpec(0).shape(), (std::vector<int64_t>{2, 4}));
}

TEST(OnnxRunner, WrongDtypeIsAnError) {
  auto R = mustCreate("mlp_300_64_15.onnx");
  ASSERT_TRUE(R);
  Status S = R->setFeature("x", std::vector<double>(300, 0.0));
  EXPECT_EQ(S.code(), ErrorCode::TypeMismatch);
  EXPECT_NE(S.message().find("float"), std::string::npos);
  EXPECT_NE(S.message().find("double"), std::string::npos);
  auto M = mustCreate("multi_io.onnx");
  ASSERT_TRUE(M);
  EXPECT_EQ(M->setFeature("counts", std::vector<int32_t>{1, 2}).code(),
            ErrorCode::TypeMismatch);
  EXPECT_EQ(M->setFeature("mask", std::vector<int>{1, 0, 1, 0}).code(),
            ErrorCode::TypeMismatch);
  EXPECT_EQ(M->setFeature("offset", int64_t(3)).code(), ErrorCode::TypeMismatch);
  EXPECT_EQ(M->setFeature("offset", std::string("3")).code(),
            ErrorCode::TypeMismatch);
}

TEST(OnnxRunner, UnsetVariableInputIsAnError) {
  auto R = mustCreate("mlp_300_64_15.onnx");
  ASSERT_TRUE(R);
  Status S = R->evaluateRaw();
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(S.message().find("'x'"), std::string::npos) << S.message();
}

TEST(OnnxRunner, DimValuesFixSymbolicDimensions) {
  OnnxOptions O;
  O.Model.DimValues = {{"batch", 1}};
  auto R = mustCreate("mlp_300_64_15.onnx", O);
  ASSERT_TRUE(R);
  EXPECT_EQ(R->featureSpec(0).shape(), (std::vector<int64_t>{1, 300}));
  float *X = R->getTensor<float>(0);
  ASSERT_NE(X, nullptr); // in place from the start
  const reftest::Case C = casesOf("mlp_300_64_15.onnx").at(2);
  std::memcpy(X, C.Inputs[0].data(), C.Inputs[0].byteSize());
  ASSERT_TRUE(R->evaluateRaw().isOk());
  EXPECT_TRUE(sameTensor(R->advice(), C.Outputs[0]));

  O.Model.DimValues = {{"batch", 0}};
  auto Bad = OnnxModelRunner::create(model("mlp_300_64_15.onnx"), O);
  ASSERT_FALSE(Bad);
  EXPECT_EQ(Bad.status().code(), ErrorCode::InvalidArgument);
}

TEST(OnnxRunner, TwoVariableDimensionsNeedADimValue) {
  auto R = OnnxModelRunner::create(model("two_dims.onnx"));
  ASSERT_FALSE(R);
  EXPECT_EQ(R.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(R.status().message().find("'batch'"), std::string::npos)
      << R.status().message();
  EXPECT_NE(R.status().message().find("DimValues"), std::string::npos);
  OnnxOptions O;
  O.Model.DimValues = {{"batch", 1}};
  auto Fixed = mustCreate("two_dims.onnx", O);
  ASSERT_TRUE(Fixed);
  const reftest::Case C = casesOf("two_dims.onnx").at(0); // x [1,6]
  ASSERT_TRUE(setInputs(*Fixed, C).isOk());
  ASSERT_TRUE(Fixed->evaluateRaw().isOk());
  EXPECT_TRUE(sameTensor(Fixed->advice(), C.Outputs[0]));
}

// ---- missing or corrupt models: errors, never crashes ----------------------

TEST(OnnxRunner, MissingModelFileIsNotFound) {
  auto R = OnnxModelRunner::create("/nonexistent/dir/model.onnx");
  ASSERT_FALSE(R);
  EXPECT_EQ(R.status().code(), ErrorCode::NotFound);
  EXPECT_NE(R.status().message().find("/nonexistent/dir/model.onnx"),
            std::string::npos);
}

TEST(OnnxRunner, CorruptModelFilesAreMalformed) {
  std::vector<unsigned char> Good = readFile(model("mlp_300_64_15.onnx"));
  const std::string Truncated(Good.begin(), Good.begin() + Good.size() / 3);
  std::string Garbage(4096, '\0');
  for (size_t K = 0; K < Garbage.size(); ++K)
    Garbage[K] = static_cast<char>((K * 2654435761u) >> 13);
  for (const std::string &Bytes :
       {Truncated, Garbage, std::string("not an onnx model\n"), std::string()}) {
    TempFile F(Bytes);
    auto R = OnnxModelRunner::create(F.Path);
    ASSERT_FALSE(R) << Bytes.size();
    EXPECT_EQ(R.status().code(), ErrorCode::Malformed) << R.status().toString();
    EXPECT_NE(R.status().message().find(F.Path), std::string::npos);
    if (!Bytes.empty()) {
      auto FromBytes = OnnxModelRunner::createFromBytes(Bytes.data(), Bytes.size());
      ASSERT_FALSE(FromBytes);
      EXPECT_EQ(FromBytes.status().code(), ErrorCode::Malformed);
    }
  }
  auto Empty = OnnxModelRunner::createFromBytes(nullptr, 0);
  ASSERT_FALSE(Empty);
  EXPECT_EQ(Empty.status().code(), ErrorCode::InvalidArgument);
  auto Dir = OnnxModelRunner::create("/tmp");
  ASSERT_FALSE(Dir);
  EXPECT_EQ(Dir.status().code(), ErrorCode::InvalidArgument);
  auto NoPath = OnnxModelRunner::create(std::string());
  ASSERT_FALSE(NoPath);
  EXPECT_EQ(NoPath.status().code(), ErrorCode::InvalidArgument);
}

TEST(OnnxRunner, BadSessionOptionsAreErrors) {
  OnnxOptions O;
  O.Model.IntraOpThreads = 0;
  auto R = OnnxModelRunner::create(model("mlp_300_64_15.onnx"), O);
  ASSERT_FALSE(R);
  EXPECT_EQ(R.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(R.status().message().find("IntraOpThreads"), std::string::npos);
  auto M = OnnxModelRunner::create(std::shared_ptr<const OnnxModel>());
  ASSERT_FALSE(M);
  EXPECT_EQ(M.status().code(), ErrorCode::InvalidArgument);
}

TEST(OnnxRunner, OnnxRuntimeLogsGoToTheSinkOnly) {
  std::vector<std::string> Seen;
  setOnnxRuntimeLogSink([&](Severity, std::string_view M) { Seen.emplace_back(M); });
  TempFile F("garbage");
  auto R = OnnxModelRunner::create(F.Path); // may or may not log; never prints
  EXPECT_FALSE(R);
  setOnnxRuntimeLogSink(nullptr);
  for (const std::string &M : Seen)
    EXPECT_EQ(M.rfind("onnxruntime: ", 0), 0u) << M;
}
