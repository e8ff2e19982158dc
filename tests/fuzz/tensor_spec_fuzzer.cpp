// TensorSpec::fromJson (header specs, model metadata): a spec that parses
// must print back to JSON that parses to the same spec.
#include "mlbridge/tensor_spec.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  using mlbridge::TensorSpec;
  auto Spec = TensorSpec::fromJson(
      std::string_view(reinterpret_cast<const char *>(Data), Size));
  if (!Spec)
    return 0;
  std::string Json;
  Spec->appendJson(Json);
  auto Again = TensorSpec::fromJson(Json);
  if (!Again || !(*Again == *Spec))
    std::abort(); // not a round trip
  return 0;
}
