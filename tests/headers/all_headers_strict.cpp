// Compiled with -fno-exceptions -fno-rtti -Wall -Wextra -Werror by ctest:
// every public header, and the templates a pass instantiates, must build in
// LLVM-style code.
#include "mlbridge/byte_stream.h"
#include "mlbridge/c/mlbridge.h"
#include "mlbridge/c/rl.h"
#include "mlbridge/c/settings.h"
#include "mlbridge/diagnostics.h"
#include "mlbridge/dtype.h"
#include "mlbridge/embedded_model.h"
#include "mlbridge/feature_binding.h"
#include "mlbridge/in_process_model_runner.h"
#include "mlbridge/log_line.h"
#include "mlbridge/model_runner.h"
#include "mlbridge/pipe_model_runner.h"
#include "mlbridge/runner_settings.h"
#include "mlbridge/serdes.h"
#include "mlbridge/shm_model_runner.h"
#include "mlbridge/stream_model_runner.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"
#include "mlbridge/tensor_value.h"
#include "mlbridge/training_log.h"

#include <cstddef>
#include <string>
#include <vector>

int64_t useEverything(mlbridge::ModelRunner &R) {
  unsigned U = 1;
  size_t Z = 2;
  int64_t I = 3;
  (void)R.populateFeatures(std::make_pair("u", U), std::make_pair("z", Z),
                           std::make_pair("i", I), std::make_pair("s", "text"),
                           std::make_pair("v", std::vector<float>{1.f, 2.f}),
                           std::make_pair("b", true));
  (void)R.setFeature("str", std::string("x"));
  if (float *F = R.getTensor<float>(0))
    *F = 1.0f;
  mlbridge::Expected<std::vector<double>> V = R.evaluate<std::vector<double>>();
  mlbridge::Expected<bool> B = R.evaluate<bool>();
  mlbridge::Expected<std::string> S = R.evaluate<std::string>();
  (void)V;
  (void)B;
  (void)S;
  mlbridge::Expected<int64_t> A = R.evaluateAction({true, false});
  (void)A;
  return R.evaluateOr<int64_t>(-1);
}

// A runner chosen by settings, and one chosen in code: both convert.
mlbridge::Expected<std::unique_ptr<mlbridge::ModelRunner>>
chooseRunner(bool FromSettings) {
  if (FromSettings) {
    mlbridge::RunnerSettings S;
    (void)mlbridge::setRunnerSetting(S, "channel", "/tmp/ch");
    return mlbridge::makeRunner(S, {}, mlbridge::defaultActionSpec(mlbridge::ActionRule::Auto));
  }
  return mlbridge::PipeModelRunner::create("/tmp/ch");
}

mlbridge::Status logEverything(mlbridge::TrainingLogWriter &Log,
                               const mlbridge::ModelRunner &R) {
  (void)Log.switchContext("f");
  (void)Log.logRunner(R);
  (void)Log.logScore(1.5f);
  (void)Log.logScore(int64_t{2});
  return Log.close();
}
