// One SerDes, one direction, chosen at build time:
//   FUZZ_MODEL_SIDE     decodeMessage over a stream of compiler messages
//                       (what a model host reads from a compiler);
//   FUZZ_COMPILER_SIDE  decodeAdvice for an advice spec picked by the first
//                       input byte (what a compiler reads from a model); a
//                       decoded reply must re-encode and decode to the same
//                       bytes.
// Any input gives values or an error status: never a crash, a hang, a leak
// or an allocation beyond the limits.
#include "mlbridge/serdes.h"
#ifdef FUZZ_FORMAT_PROTOBUF
#include "mlbridge/protobuf_serdes.h"
#endif

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace mlbridge;

namespace {

#if defined(FUZZ_FORMAT_BITSTREAM)
constexpr SerDesKind kKind = SerDesKind::Bitstream;
#elif defined(FUZZ_FORMAT_JSON)
constexpr SerDesKind kKind = SerDesKind::Json;
#else
constexpr SerDesKind kKind = SerDesKind::Protobuf;
#endif

/// Small limits: the fuzzer explores them instead of allocating 256 MiB.
SerDesLimits limits() {
  SerDesLimits L;
  L.MaxMessageBytes = 1 << 20;
  L.MaxHeaderBytes = 1 << 16;
  L.MaxFeatures = 64;
  return L;
}

std::unique_ptr<SerDes> codec() {
#ifdef FUZZ_FORMAT_PROTOBUF
  std::unique_ptr<SerDes> C = createProtobufSerDes();
#else
  std::unique_ptr<SerDes> C = createSerDes(kKind);
#endif
  if (!C || C->kind() != kKind)
    std::abort();
  return C;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  static std::unique_ptr<SerDes> Codec = codec();
  const SerDesLimits Limits = limits();
#ifdef FUZZ_MODEL_SIDE
  MemoryByteSource In(
      std::string_view(reinterpret_cast<const char *>(Data), Size));
  std::vector<TensorSpec> Specs;
  TensorSpec Advice;
  CompilerMessage Msg;
  for (int I = 0; I < 1000 && !In.atEnd(); ++I)
    if (!Codec->decodeMessage(In, Limits, Specs, Advice, Msg).isOk())
      break;
#else
  if (Size < 1)
    return 0;
  // Byte 0: dtype (low nibble) and shape (high bits).
  static const std::vector<int64_t> Shapes[] = {
      {1}, {3}, {kDynamicDim}, {2, kDynamicDim}};
  const DType Type = static_cast<DType>((Data[0] & 15) % kNumDTypes);
  const TensorSpec Spec("advice", Type, Shapes[(Data[0] >> 4) & 3]);
  MemoryByteSource In(
      std::string_view(reinterpret_cast<const char *>(Data + 1), Size - 1));
  TensorValue Got;
  if (!Codec->decodeAdvice(In, Spec, Limits, Got).isOk())
    return 0;
  // Round trip. (JSON floats: NaN payloads are not kept, so compare only
  // the other dtypes there.)
  WireMessage Out;
  if (!Codec->encodeAdvice(Spec, Got, Out).isOk())
    std::abort();
  const std::string Bytes = Out.flatten();
  MemoryByteSource Again(Bytes);
  TensorValue Back;
  if (!Codec->decodeAdvice(Again, Spec, Limits, Back).isOk())
    std::abort();
  const bool Floats = Type == DType::Float || Type == DType::Double;
  if ((kKind != SerDesKind::Json || !Floats) &&
      (Back.byteSize() != Got.byteSize() ||
       (Got.byteSize() &&
        std::memcmp(Back.data(), Got.data(), Got.byteSize()) != 0)))
    std::abort();
#endif
  return 0;
}
