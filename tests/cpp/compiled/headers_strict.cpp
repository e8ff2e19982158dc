// Compiled with -fno-exceptions -fno-rtti -Wall -Wextra -Werror by ctest:
// the compiled-model headers, and the templates a pass instantiates, build
// in LLVM-style code.
#include "../../headers/in_process_runner_use.h"
#include "mlbridge/compiled_model.h"
#include "mlbridge/compiled_model_runner.h"

#include <cstdint>

int64_t useCompiledRunner(const mlbridge::EmbeddedModel &Info) {
  auto R = mlbridge::CompiledModelRunner::create(Info);
  if (!R)
    return -1;
  return useInProcessRunner(**R, "obs", 24, "probs", int64_t{-1});
}
