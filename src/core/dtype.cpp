//===- core/dtype.cpp - Element types of tensors --------------------------===//

#include "mlbridge/dtype.h"

namespace mlbridge {

namespace {
struct DTypeInfo {
  std::string_view Name;
  size_t Size;
};
// Indexed by DType.
constexpr DTypeInfo Infos[kNumDTypes] = {
#define MLBRIDGE_DTYPE_INFO(E, Ty, Name) {Name, sizeof(Ty)},
    MLBRIDGE_DTYPES(MLBRIDGE_DTYPE_INFO)
#undef MLBRIDGE_DTYPE_INFO
};
static_assert(sizeof(float) == 4 && sizeof(double) == 8 && sizeof(bool) == 1,
              "the wire format assumes IEEE binary32/64 and one-byte bool");

bool inRange(DType T) { return static_cast<int>(T) < kNumDTypes; }
} // namespace

size_t dtypeSize(DType T) { return inRange(T) ? Infos[int(T)].Size : 1; }

std::string_view dtypeName(DType T) {
  return inRange(T) ? Infos[int(T)].Name : std::string_view("<invalid dtype>");
}

std::optional<DType> dtypeFromName(std::string_view Name) {
  for (int I = 0; I < kNumDTypes; ++I)
    if (Infos[I].Name == Name)
      return static_cast<DType>(I);
  return std::nullopt;
}

} // namespace mlbridge
