//===- core/dtype.cpp - Element types of tensors --------------------------===//

#include "mlbridge/dtype.h"

namespace mlbridge {

namespace {
struct DTypeInfo {
  std::string_view Name;
  size_t Size;
};
// Indexed by DType; names are LLVM's TensorSpec type names.
constexpr DTypeInfo Infos[kNumDTypes] = {
    {"float", 4},   {"double", 8},   {"int8_t", 1},   {"int16_t", 2},
    {"int32_t", 4}, {"int64_t", 8},  {"uint8_t", 1},  {"uint16_t", 2},
    {"uint32_t", 4}, {"uint64_t", 8}, {"bool", 1},     {"string", 1},
};
static_assert(static_cast<int>(DType::String) == kNumDTypes - 1,
              "Infos must cover every DType");
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
