// The model compiler's ONNX import (tools/model-compiler): any file gives a
// graph or a ModelError, never a crash, a hang or a runaway allocation.
#include "graph.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  using namespace mlbridge::modelc;
  try {
    Graph G;
    importModel(std::string(reinterpret_cast<const char *>(Data), Size), {},
                G);
  } catch (const ModelError &) {
  }
  return 0;
}
