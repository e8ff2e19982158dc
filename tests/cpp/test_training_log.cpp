//===- tests/cpp/test_training_log.cpp - LLVM training logs ---------------===//
//
// The golden file tests/data/training_log_golden.log was written by
// tests/data/make_training_log_golden.py by hand from LLVM's documented
// format (llvm/include/llvm/Analysis/Utils/TrainingLogger.h,
// llvm/lib/Analysis/TrainingLogger.cpp; literal JSON lines, struct-packed
// tensors, no mlbridge code). TrainingLogWriter must reproduce it byte for
// byte, from plain tensors and from a runner's features and advice.
//
//===----------------------------------------------------------------------===//
#include "mlbridge/c/training_log.h"
#include "mlbridge/model_runner.h"
#include "mlbridge/training_log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

using namespace mlbridge;

namespace {

std::string readFile(const std::string &Path) {
  std::ifstream F(Path, std::ios::binary);
  std::ostringstream S;
  S << F.rdbuf();
  return S.str();
}

/// A byte sink that appends everything to Out.
TrainingLogWriter::ByteSink appendTo(std::string &Out) {
  return [&Out](std::string_view B) {
    Out.append(B.data(), B.size());
    return Status::ok();
  };
}

std::string golden() {
  return readFile(std::string(MLBRIDGE_TEST_DATA_DIR) + "/training_log_golden.log");
}

class TempDir {
public:
  TempDir() {
    char Tmpl[] = "/tmp/mlbridge-log-XXXXXX";
    Path = mkdtemp(Tmpl);
  }
  ~TempDir() { (void)std::system(("rm -rf '" + Path + "'").c_str()); }
  std::string file(const char *Name) const { return Path + "/" + Name; }

private:
  std::string Path;
};

// The golden file's tensors (see make_training_log_golden.py).
std::vector<TensorSpec> goldenSpecs() {
  return {TensorSpec::create<int64_t>("callee_basic_block_count"),
          TensorSpec::create<float>("edge_weights", {2, 3}),
          TensorSpec::create<int32_t>("pair", {2}),
          TensorSpec::create<uint8_t>("flags", {3}),
          TensorSpec::create<double>("ratio"),
          TensorSpec::create<int64_t>("inlining_decision")};
}

TrainingLogOptions goldenOptions() {
  TrainingLogOptions O;
  O.Score = TensorSpec::create<float>("reward");
  O.Advice = TensorSpec::create<int64_t>("inlining_decision");
  return O;
}

// Observation I's feature values, written into Values (one per spec).
void fill(std::vector<TensorValue> &Values, int I) {
  *Values[0].dataAs<int64_t>() = 10 + I;
  for (int K = 0; K < 6; ++K)
    Values[1].dataAs<float>()[K] = 0.5f * K + I;
  Values[2].dataAs<int32_t>()[0] = -I;
  Values[2].dataAs<int32_t>()[1] = 1 << 20;
  uint8_t *Flags = Values[3].dataAs<uint8_t>();
  Flags[0] = uint8_t(I % 2);
  Flags[1] = 1;
  Flags[2] = 255;
  *Values[4].dataAs<double>() = 1.0 / (I + 3);
  *Values[5].dataAs<int64_t>() = I % 2;
}

float reward(int I) { return 2.0f - 0.25f * I; }

const char *const kContexts[] = {"main", nullptr, "f\"q\n\x01", "main"};

void writeGoldenRecords(TrainingLogWriter &Log) {
  std::vector<TensorValue> Values;
  for (const TensorSpec &S : goldenSpecs())
    Values.emplace_back(S);
  for (int I = 0; I < 4; ++I) {
    if (kContexts[I]) {
      ASSERT_TRUE(Log.switchContext(kContexts[I]).isOk());
    }
    fill(Values, I);
    std::vector<const TensorValue *> Ptrs;
    for (const TensorValue &V : Values)
      Ptrs.push_back(&V);
    Status S = Log.logObservation(Ptrs);
    ASSERT_TRUE(S.isOk()) << S.toString();
    S = Log.logScore(reward(I));
    ASSERT_TRUE(S.isOk()) << S.toString();
  }
}

TEST(TrainingLog, FileIsByteIdenticalToTheGoldenLog) {
  const std::string Want = golden();
  ASSERT_GT(Want.size(), 500u) << "golden file missing or empty";
  TempDir D;
  auto Log = TrainingLogWriter::create(D.file("a.log"), goldenSpecs(), goldenOptions());
  ASSERT_TRUE(Log) << Log.status().toString();
  writeGoldenRecords(**Log);
  EXPECT_EQ((*Log)->observationsInContext(), 3); // "main" came back: 0, 1, 2
  Status S = (*Log)->close();
  ASSERT_TRUE(S.isOk()) << S.toString();
  EXPECT_EQ(readFile(D.file("a.log")), Want);
}

TEST(TrainingLog, SinkReceivesTheSameBytes) {
  std::string Got;
  auto Log = TrainingLogWriter::create(
      appendTo(Got),
      goldenSpecs(), goldenOptions());
  ASSERT_TRUE(Log);
  writeGoldenRecords(**Log);
  ASSERT_TRUE((*Log)->close().isOk());
  EXPECT_EQ(Got, golden());
}

// The default heuristic as a runner: inline when the callee's block count
// is odd. A pass logs what a runner saw and decided with logRunner.
class OddBlocksHeuristic : public ModelRunner {
public:
  OddBlocksHeuristic()
      : ModelRunner({TensorSpec::create<int64_t>("callee_basic_block_count"),
                     TensorSpec::create<float>("edge_weights", {2, 3}),
                     TensorSpec::create<int32_t>("pair", {2}),
                     TensorSpec::create<uint8_t>("flags", {3}),
                     TensorSpec::create<double>("ratio")},
                    TensorSpec::create<int64_t>("inlining_decision"), {}) {}

private:
  Status doEvaluate(const std::vector<const TensorValue *> &Features, bool,
                    const TensorSpec &, TensorValue &Out) override {
    *Out.dataAs<int64_t>() = *Features[0]->dataAs<int64_t>() % 2;
    return Status::ok();
  }
};

TEST(TrainingLog, RunnerFeaturesAndAdviceGiveTheGoldenLog) {
  OddBlocksHeuristic R;
  TempDir D;
  auto Log = TrainingLogWriter::createForRunner(D.file("r.log"), R,
                                                /*LogAdvice=*/true, goldenOptions());
  ASSERT_TRUE(Log) << Log.status().toString();
  std::vector<TensorValue> Values;
  for (const TensorSpec &S : goldenSpecs())
    Values.emplace_back(S);
  for (int I = 0; I < 4; ++I) {
    if (kContexts[I]) {
      ASSERT_TRUE((*Log)->switchContext(kContexts[I]).isOk());
    }
    fill(Values, I);
    for (size_t F = 0; F < R.featureCount(); ++F) {
      const TensorSpec &S = Values[F].spec();
      ASSERT_TRUE(R.setFeatureBytes(S.name(), S.type(), S.shape(), Values[F].data(),
                                    Values[F].byteSize())
                      .isOk());
    }
    Expected<int64_t> Decision = R.evaluate<int64_t>();
    ASSERT_TRUE(Decision) << Decision.status().toString();
    EXPECT_EQ(*Decision, I % 2);
    Status S = (*Log)->logRunner(R);
    ASSERT_TRUE(S.isOk()) << S.toString();
    ASSERT_TRUE((*Log)->logScore(reward(I)).isOk());
  }
  ASSERT_TRUE((*Log)->close().isOk());
  EXPECT_EQ(readFile(D.file("r.log")), golden());
}

TEST(TrainingLog, WithoutScoreThereAreNoOutcomeRecords) {
  std::string Got;
  auto Log = TrainingLogWriter::create(
      appendTo(Got),
      {TensorSpec::create<int32_t>("x")});
  ASSERT_TRUE(Log);
  TensorValue X(TensorSpec::create<int32_t>("x"));
  *X.dataAs<int32_t>() = 7;
  ASSERT_TRUE((*Log)->logObservation({&X}).isOk()); // no context: LLVM's ""
  ASSERT_TRUE((*Log)->logObservation({&X}).isOk());
  EXPECT_FALSE((*Log)->logScore(1.0f).isOk());
  ASSERT_TRUE((*Log)->close().isOk() == false); // the logScore error sticks
  const std::string Seven("\x07\0\0\0", 4);
  EXPECT_EQ(Got, "{\"features\":[{\"name\":\"x\",\"type\":\"int32_t\",\"port\":0,"
                 "\"shape\":[1]}]}\n"
                 "{\"observation\":0}\n" + Seven + "\n"
                 "{\"observation\":1}\n" + Seven + "\n");
}

TEST(TrainingLog, AScalarScoreFillsAScoreTensor) {
  std::string Got;
  TrainingLogOptions O;
  O.Score = TensorSpec::create<int64_t>("delta_size", {2});
  auto Log = TrainingLogWriter::create(
      appendTo(Got),
      {TensorSpec::create<uint8_t>("b")}, O);
  ASSERT_TRUE(Log);
  TensorValue B(TensorSpec::create<uint8_t>("b"));
  ASSERT_TRUE((*Log)->logObservation({&B}).isOk());
  EXPECT_EQ((*Log)->logScore(int32_t{3}).code(), ErrorCode::TypeMismatch);
  ASSERT_TRUE((*Log)->close().code() == ErrorCode::TypeMismatch);
  // Nothing after the header: the observation waited for its score.
  EXPECT_EQ(Got.find("observation"), std::string::npos);

  Got.clear();
  auto Log2 = TrainingLogWriter::create(
      [&](std::string_view Bytes) {
        Got.append(Bytes.data(), Bytes.size());
        return Status::ok();
      },
      {TensorSpec::create<uint8_t>("b")}, O);
  ASSERT_TRUE((*Log2)->logObservation({&B}).isOk());
  ASSERT_TRUE((*Log2)->logScore(int64_t{-2}).isOk());
  ASSERT_TRUE((*Log2)->close().isOk());
  const std::string Tail = std::string("{\"outcome\":0}\n") +
                           std::string("\xfe\xff\xff\xff\xff\xff\xff\xff", 8) +
                           std::string("\xfe\xff\xff\xff\xff\xff\xff\xff", 8) + "\n";
  ASSERT_GE(Got.size(), Tail.size());
  EXPECT_EQ(Got.substr(Got.size() - Tail.size()), Tail);
}

TEST(TrainingLog, RefusesWhatLLVMCannotRead) {
  auto Sink = [](std::string_view) { return Status::ok(); };
  EXPECT_EQ(TrainingLogWriter::create(Sink, {TensorSpec::create<bool>("b")}).status().code(),
            ErrorCode::InvalidArgument);
  EXPECT_EQ(TrainingLogWriter::create(Sink, {TensorSpec("s", DType::String, {4})})
                .status().code(),
            ErrorCode::InvalidArgument);
  EXPECT_EQ(TrainingLogWriter::create(Sink, {TensorSpec::create<float>("v", {-1})})
                .status().code(),
            ErrorCode::InvalidArgument);
  EXPECT_EQ(TrainingLogWriter::create(Sink, {TensorSpec::create<float>("a"),
                                             TensorSpec::create<int8_t>("a")})
                .status().code(),
            ErrorCode::InvalidArgument);
  EXPECT_EQ(TrainingLogWriter::create(Sink, {}).status().code(),
            ErrorCode::InvalidArgument);
  TrainingLogOptions O;
  O.Score = TensorSpec::create<bool>("ok");
  EXPECT_FALSE(TrainingLogWriter::create(Sink, {TensorSpec::create<float>("a")}, O));
  auto Missing = TrainingLogWriter::create("/nonexistent-dir/x.log",
                                           {TensorSpec::create<float>("a")});
  ASSERT_FALSE(Missing);
  EXPECT_EQ(Missing.status().code(), ErrorCode::NotFound);
  EXPECT_NE(Missing.status().message().find("/nonexistent-dir/x.log"), std::string::npos);
}

TEST(TrainingLog, MisuseIsAnErrorAndTheFileKeepsCompleteRecords) {
  TempDir D;
  TrainingLogOptions O;
  O.Score = TensorSpec::create<float>("reward");
  auto Log = TrainingLogWriter::create(D.file("m.log"), {TensorSpec::create<int64_t>("x")}, O);
  ASSERT_TRUE(Log);
  TensorValue X(TensorSpec::create<int64_t>("x"));
  TensorValue Wrong(TensorSpec::create<int32_t>("x"));
  ASSERT_TRUE((*Log)->switchContext("f").isOk());
  ASSERT_TRUE((*Log)->logObservation({&X}).isOk());
  ASSERT_TRUE((*Log)->logScore(0.5f).isOk());
  ASSERT_TRUE((*Log)->logObservation({&X}).isOk());
  // A second observation before the score of the first.
  Status S = (*Log)->logObservation({&X});
  EXPECT_EQ(S.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(S.message().find("no score"), std::string::npos) << S.message();
  // Sticky: later calls fail the same way.
  EXPECT_EQ((*Log)->logScore(0.5f).message(), S.message());
  EXPECT_EQ((*Log)->close().message(), S.message());
  const std::string Text = readFile(D.file("m.log"));
  // The file ends with the first observation's outcome (0.5f); the second
  // observation never got its score and is not in it.
  const std::string Tail = "{\"outcome\":0}\n" + std::string("\0\0\0\x3f", 4) + "\n";
  ASSERT_GT(Text.size(), Tail.size());
  EXPECT_EQ(Text.substr(Text.size() - Tail.size()), Tail);
  EXPECT_EQ(Text.find("{\"observation\":1}"), std::string::npos);

  auto Log2 = TrainingLogWriter::create(D.file("n.log"), {TensorSpec::create<int64_t>("x")});
  ASSERT_TRUE(Log2);
  EXPECT_EQ((*Log2)->logObservation({&Wrong}).code(), ErrorCode::TypeMismatch);
  auto Log3 = TrainingLogWriter::create(D.file("o.log"), {TensorSpec::create<int64_t>("x")});
  EXPECT_EQ((*Log3)->logObservation({&X, &X}).code(), ErrorCode::InvalidArgument);
  auto Log4 = TrainingLogWriter::create(D.file("p.log"), {TensorSpec::create<int64_t>("x")});
  EXPECT_EQ((*Log4)->switchContext(std::string_view("\xff", 1)).code(),
            ErrorCode::InvalidArgument);
  EXPECT_EQ((*Log4)->logObservation({nullptr}).code(), ErrorCode::InvalidArgument);
}

TEST(TrainingLog, ASinkErrorStopsTheWriter) {
  int Calls = 0;
  auto Log = TrainingLogWriter::create(
      [&](std::string_view) {
        return ++Calls == 1 ? Status::ok() : Status(ErrorCode::IOError, "disk full");
      },
      {TensorSpec::create<int64_t>("x")});
  ASSERT_TRUE(Log); // the header went through
  TensorValue X(TensorSpec::create<int64_t>("x"));
  ASSERT_TRUE((*Log)->logObservation({&X}).isOk()); // buffered
  Status S = (*Log)->flush();
  EXPECT_EQ(S.code(), ErrorCode::IOError);
  EXPECT_EQ((*Log)->logObservation({&X}).code(), ErrorCode::IOError);
  EXPECT_EQ((*Log)->close().code(), ErrorCode::IOError);
  EXPECT_EQ(Calls, 2);
}

TEST(TrainingLog, FromCThroughARunnersFeatures) {
  // A pipe runner that is never connected: its features are set, the log
  // records them; no model is involved.
  TempDir D;
  mlb_runner *R = nullptr;
  ASSERT_EQ(mlb_pipe_runner_create(D.file("never").c_str(), MLB_SERDES_BITSTREAM,
                                   nullptr, &R),
            MLB_OK);
  ASSERT_EQ(mlb_set_int64(R, "callee_basic_block_count", 10), MLB_OK);
  const float W[6] = {0, 0.5f, 1, 1.5f, 2, 2.5f};
  ASSERT_EQ(mlb_set_float_array(R, "edge_weights", W, 6), MLB_OK);
  mlb_training_log *Log = nullptr;
  ASSERT_EQ(mlb_training_log_create_for_runner(D.file("c.log").c_str(), R, false,
                                               "reward", MLB_FLOAT, &Log),
            MLB_OK)
      << mlb_last_error();
  EXPECT_EQ(mlb_training_log_observe(Log, R), MLB_OK) << mlb_last_error();
  EXPECT_EQ(mlb_training_log_score_int64(Log, 3), MLB_ERR_TYPE_MISMATCH);
  mlb_training_log_destroy(Log);
  Log = nullptr;
  ASSERT_EQ(mlb_training_log_create_for_runner(D.file("c.log").c_str(), R, false,
                                               "reward", MLB_FLOAT, &Log),
            MLB_OK);
  ASSERT_EQ(mlb_training_log_switch_context(Log, "main"), MLB_OK);
  ASSERT_EQ(mlb_training_log_observe(Log, R), MLB_OK);
  ASSERT_EQ(mlb_training_log_score_float(Log, 2.0f), MLB_OK);
  EXPECT_EQ(mlb_training_log_close(Log), MLB_OK);
  mlb_training_log_destroy(Log);
  EXPECT_EQ(mlb_training_log_observe(nullptr, R), MLB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlb_training_log_create_for_runner(D.file("d.log").c_str(), R, true, nullptr,
                                               MLB_FLOAT, &Log),
            MLB_ERR_INVALID_ARGUMENT); // no advice spec to log
  EXPECT_EQ(Log, nullptr);
  mlb_runner_destroy(R);

  int64_t Ten = 10;
  const std::string Want =
      "{\"features\":[{\"name\":\"callee_basic_block_count\",\"type\":\"int64_t\","
      "\"port\":0,\"shape\":[1]},{\"name\":\"edge_weights\",\"type\":\"float\","
      "\"port\":0,\"shape\":[6]}],\"score\":{\"name\":\"reward\",\"type\":\"float\","
      "\"port\":0,\"shape\":[1]}}\n{\"context\":\"main\"}\n{\"observation\":0}\n" +
      std::string(reinterpret_cast<const char *>(&Ten), 8) +
      std::string(reinterpret_cast<const char *>(W), sizeof W) + "\n{\"outcome\":0}\n" +
      std::string("\0\0\0\x40", 4) + "\n";
  EXPECT_EQ(readFile(D.file("c.log")), Want);
}

} // namespace
