//===- serdes/json_serdes.h - One compact JSON object per line --*- C++ -*-===//
//
// Internal to the library; use createSerDes(SerDesKind::Json). The format
// is docs/protocol.md §3. Values are decoded straight from the text into
// TensorValue buffers with exact typing: no value tree, no per-element
// virtual call, storage reused across messages.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SERDES_JSON_SERDES_H
#define MLBRIDGE_SERDES_JSON_SERDES_H

#include "mlbridge/serdes.h"
#include "serdes/serdes_internal.h"

namespace mlbridge {

class JsonSerDes final : public serdes_detail::ControlLineSerDes {
public:
  SerDesKind kind() const override { return SerDesKind::Json; }

  Status encodeObservation(int64_t Index,
                           const std::vector<const TensorValue *> &Features,
                           WireMessage &Out) override;
  Status decodeAdvice(ByteSource &In, const TensorSpec &Spec,
                      const SerDesLimits &Limits,
                      TensorValue &Advice) override;

  Status decodeMessage(ByteSource &In, const SerDesLimits &Limits,
                       std::vector<TensorSpec> &CurrentSpecs,
                       TensorSpec &CurrentAdvice,
                       CompilerMessage &Msg) override;
  Status encodeAdvice(const TensorSpec &Spec, const TensorValue &Advice,
                      WireMessage &Out) override;

private:
  Status decodeFeatureValues(json::Reader &R, const SerDesLimits &Limits,
                             const std::vector<TensorSpec> &Specs,
                             CompilerMessage &Msg);

  std::string Text;               // reused string scratch
  std::string Key;                // reused key scratch
  std::vector<unsigned char> Seen;
};

} // namespace mlbridge

#endif // MLBRIDGE_SERDES_JSON_SERDES_H
