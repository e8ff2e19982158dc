// Compiled by ctest against LLVM's headers with LLVM's flags (-fno-exceptions
// -fno-rtti) and -Werror: the mlbridge headers beside `using namespace
// llvm;`, written the way mlbridge/tensor_spec.h and docs/architecture.md
// say, with the unqualified names the docs use.
#include "llvm/ADT/StringRef.h"
#include "llvm/Analysis/TensorSpec.h"
#include "llvm/Support/Error.h"

#include "mlbridge/feature_binding.h"
#include "mlbridge/log_line.h"
#include "mlbridge/model_runner.h"
#include "mlbridge/pipe_model_runner.h"
#include "mlbridge/rl.h"
#include "mlbridge/runner_settings.h"
#include "mlbridge/shm_model_runner.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

using namespace llvm;
using namespace mlbridge;

namespace {
using mlbridge::Expected;
using mlbridge::TensorSpec;

/// A runner chosen at run time: each create() converts as it is.
Expected<std::unique_ptr<ModelRunner>> pick(bool Pipe, StringRef Where) {
  if (Pipe)
    return PipeModelRunner::create(Where.str());
  return ShmModelRunner::create(Where.str());
}

int64_t decide(StringRef Prefix, uint64_t TripCount) {
  RunnerSettings S;
  Expected<RunnerSettings> Read = readRunnerSettings(Prefix.str(), S);
  if (!Read)
    return -1;
  std::vector<TensorSpec> Features = {TensorSpec::create<int64_t>("trip_count")};
  TensorSpec Advice = TensorSpec::create<int64_t>("unroll");
  Expected<BoundRunner> B = makeBoundRunner(*Read, Features, Advice, "model",
                                            "the unroller");
  if (!B || !B->Runner)
    return -1;
  const int64_t T = static_cast<int64_t>(TripCount);
  B->Binding.write(*B->Runner, 0, &T);
  Expected<int64_t> A = B->Runner->evaluateAction({true, true, false});
  LogLine L("unroll", "m", runnerKindName(resolveRunnerKind(*Read)), 1,
            A ? 0 : 1);
  (void)L.str();
  return A ? *A : B->Runner->evaluateOr<int64_t>(0);
}

/// LLVM's own names stay reachable, qualified.
bool llvmSide() {
  llvm::TensorSpec Theirs = llvm::TensorSpec::createSpec<int64_t>("x", {1});
  llvm::Expected<int> E = 1;
  const bool Ok = static_cast<bool>(E) && Theirs.getElementCount() == 1;
  llvm::consumeError(E.takeError());
  return Ok;
}
} // namespace

// The other way the docs give: a namespace alias and qualified names.
namespace mlb = mlbridge;
mlb::Expected<std::unique_ptr<mlb::ModelRunner>> viaAlias() {
  return mlb::makeRunner(mlb::RunnerSettings(), {}, mlb::defaultActionSpec(mlb::ActionRule::Auto));
}

int64_t useAll() {
  (void)pick(true, "/tmp/x");
  (void)viaAlias();
  return decide("MLBRIDGE_X", 3) + (llvmSide() ? 1 : 0);
}
