// The JSON parser every JSON line from a peer goes through: any bytes give
// a value or a Malformed status, never a crash, a hang or a leak.
#include "support/json.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  std::string_view Text(reinterpret_cast<const char *>(Data), Size);
  mlbridge::json::Value V;
  (void)mlbridge::json::parse(Text, V);
  return 0;
}
