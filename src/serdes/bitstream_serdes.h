//===- serdes/bitstream_serdes.h - LLVM's interactive format ----*- C++ -*-===//
//
// Internal to the library; use createSerDes(SerDesKind::Bitstream). The
// format is docs/protocol.md §2: JSON control lines, raw little-endian
// tensor payloads, and a reply that is exactly the advice payload.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SERDES_BITSTREAM_SERDES_H
#define MLBRIDGE_SERDES_BITSTREAM_SERDES_H

#include "mlbridge/serdes.h"
#include "serdes/serdes_internal.h"

#include <optional>

namespace mlbridge {

class BitstreamSerDes final : public serdes_detail::ControlLineSerDes {
public:
  SerDesKind kind() const override { return SerDesKind::Bitstream; }

  /// Borrows every feature buffer: they must outlive the write of Out.
  Status encodeObservation(int64_t Index,
                           const std::vector<const TensorValue *> &Features,
                           WireMessage &Out) override;
  Status decodeAdvice(ByteSource &In, const TensorSpec &Spec,
                      const SerDesLimits &Limits,
                      TensorValue &Advice) override;

  /// Model side. An instance decodes one stream: a header with a "score"
  /// spec (LLVM training logs) makes it expect and skip an outcome record
  /// after each observation until the next header.
  Status decodeMessage(ByteSource &In, const SerDesLimits &Limits,
                       std::vector<TensorSpec> &CurrentSpecs,
                       TensorSpec &CurrentAdvice,
                       CompilerMessage &Msg) override;
  /// Copies the advice bytes (replies are small; no lifetime coupling).
  Status encodeAdvice(const TensorSpec &Spec, const TensorValue &Advice,
                      WireMessage &Out) override;

private:
  Status readRecordEnd(ByteSource &In, int64_t Index, const char *Record);
  Status skipOutcome(ByteSource &In, const SerDesLimits &Limits);

  std::optional<TensorSpec> ScoreSpec;
  std::vector<unsigned char> Scratch; // skipped outcome payloads
};

} // namespace mlbridge

#endif // MLBRIDGE_SERDES_BITSTREAM_SERDES_H
