// evaluateOr's reports: one warning per runner with its cause, then quiet
// (notes); a caller error is called one, never "model unavailable".
#include "fake_model_runner.h"
#include "mlbridge/model_runner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace mlbridge;
using mlbridge::test::FakeModelRunner;

namespace {

struct Recorder {
  std::vector<std::pair<Severity, std::string>> Seen;
  RunnerOptions options() {
    RunnerOptions O;
    O.Diagnostics = [this](Severity S, std::string_view M) {
      Seen.emplace_back(S, std::string(M));
    };
    return O;
  }
  size_t count(Severity S) const {
    size_t N = 0;
    for (const auto &E : Seen)
      N += E.first == S;
    return N;
  }
  size_t mentions(std::string_view Text) const {
    size_t N = 0;
    for (const auto &E : Seen)
      N += E.second.find(Text) != std::string::npos;
    return N;
  }
};

} // namespace

TEST(FallbackReports, AModelFailureWarnsOnceWithItsCauseThenNotes) {
  Recorder Rec;
  FakeModelRunner R({TensorSpec::create<float>("x")},
                    TensorSpec::create<int64_t>("d"), Rec.options());
  R.failWith(Status(ErrorCode::Timeout, "no reply within 5 ms"));
  for (int I = 0; I < 5; ++I)
    EXPECT_EQ(R.evaluateOr<int64_t>(-1), -1);
  EXPECT_EQ(Rec.count(Severity::Warning), 1u);
  EXPECT_EQ(Rec.count(Severity::Error), 0u);
  EXPECT_EQ(Rec.count(Severity::Note), 4u) << "later fallbacks stay quiet";
  ASSERT_FALSE(Rec.Seen.empty());
  EXPECT_NE(Rec.Seen[0].second.find("model unavailable, using fallback"),
            std::string::npos);
  EXPECT_NE(Rec.Seen[0].second.find("no reply within 5 ms"), std::string::npos);
}

TEST(FallbackReports, AnUnknownFeatureIsACallerError) {
  Recorder Rec;
  FakeModelRunner R({TensorSpec::create<float>("x")},
                    TensorSpec::create<int64_t>("d"), Rec.options());
  R.answer<int64_t>({4});
  (void)R.setFeature("no_such_feature", 1.0f);
  EXPECT_EQ(R.evaluateOr<int64_t>(-1), -1);
  EXPECT_EQ(R.Calls, 0) << "the model was not asked";
  ASSERT_EQ(Rec.Seen.size(), 1u);
  EXPECT_EQ(Rec.Seen[0].first, Severity::Error);
  EXPECT_NE(Rec.Seen[0].second.find("caller error, using fallback"),
            std::string::npos);
  EXPECT_NE(Rec.Seen[0].second.find("no_such_feature"), std::string::npos);
  EXPECT_EQ(Rec.mentions("model unavailable"), 0u);
  EXPECT_EQ(R.evaluateOr<int64_t>(-1), 4) << "a caller error breaks nothing";
}

TEST(FallbackReports, TheWrongAdviceTypeIsACallerError) {
  Recorder Rec;
  FakeModelRunner R({TensorSpec::create<float>("x")},
                    TensorSpec::create<int64_t>("d"), Rec.options());
  R.answer<int64_t>({4});
  EXPECT_EQ(R.evaluateOr<float>(0.5f), 0.5f);
  EXPECT_EQ(R.evaluateOr<float>(0.5f), 0.5f);
  EXPECT_EQ(R.Calls, 0);
  EXPECT_EQ(Rec.count(Severity::Error), 1u);
  EXPECT_EQ(Rec.count(Severity::Note), 1u);
  EXPECT_EQ(Rec.mentions("caller error"), 1u);
  EXPECT_EQ(Rec.mentions("model unavailable"), 0u);
  // A model failure afterwards still gets its one warning.
  R.failWith(Status(ErrorCode::PeerClosed, "model exited"));
  EXPECT_EQ(R.evaluateOr<int64_t>(7), 7);
  EXPECT_EQ(Rec.count(Severity::Warning), 1u);
  EXPECT_EQ(Rec.mentions("model exited"), 1u);
}

TEST(FallbackReports, AnUnavailableRunnerIsTheModelsFault) {
  Recorder Rec;
  FakeModelRunner R({TensorSpec::create<float>("x")},
                    TensorSpec::create<int64_t>("d"), Rec.options());
  R.breakNow(Status(ErrorCode::PeerClosed, "EOF"));
  EXPECT_EQ(R.evaluateOr<int64_t>(3), 3);
  EXPECT_EQ(R.evaluateOr<float>(1.f), 1.f) << "unusable runner first";
  EXPECT_EQ(Rec.mentions("caller error"), 0u);
  EXPECT_EQ(Rec.mentions("model unavailable, using fallback"), 1u);
}
