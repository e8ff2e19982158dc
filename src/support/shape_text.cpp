//===- support/shape_text.cpp - Shapes in error messages ------------------===//

#include "support/shape_text.h"

namespace mlbridge::support {

std::string shapeText(const int64_t *Dims, size_t Rank) {
  std::string S = "[";
  for (size_t I = 0; I < Rank; ++I) {
    if (I)
      S += ',';
    S += std::to_string(Dims[I]);
  }
  return S + "]";
}

} // namespace mlbridge::support
