//===- serdes/bitstream_serdes.cpp - LLVM's interactive format ------------===//
//
// Byte layout (docs/protocol.md §2):
//   header       {"features":[SPEC,...],"advice":SPEC}\n
//   context      {"context":"NAME"}\n
//   observation  {"observation":N}\n <payload 0><payload 1>...\n
//   reply        <advice payload>            (fixed advice spec)
//                <u64 LE count><payload>     (advice spec with a -1 dim)
//
//===----------------------------------------------------------------------===//

#include "serdes/bitstream_serdes.h"

#include "core/tensor_spec_json.h"

#include <cstring>

namespace mlbridge {

using namespace serdes_detail;

namespace {
std::string hexByte(unsigned char C) {
  static const char Hex[] = "0123456789abcdef";
  return std::string("0x") + Hex[C >> 4] + Hex[C & 15];
}
} // namespace

// ---- compiler side ---------------------------------------------------------

Status BitstreamSerDes::encodeObservation(
    int64_t Index, const std::vector<const TensorValue *> &Features,
    WireMessage &Out) {
  if (Index < 0)
    return Status(ErrorCode::InvalidArgument,
                  "observation index must be >= 0, got " +
                      std::to_string(Index));
  // Check everything before appending, so a failure leaves Out unchanged.
  for (const TensorValue *F : Features) {
    if (!F)
      return Status(ErrorCode::InvalidArgument, "null feature tensor");
    const TensorSpec &S = F->spec();
    if (S.isDynamic() || F->byteSize() != S.byteSize())
      return Status(ErrorCode::InvalidArgument,
                    subject("feature", S) + ": buffer holds " +
                        std::to_string(F->byteSize()) +
                        " bytes but its shape " + S.describe() + " needs " +
                        std::to_string(S.byteSize()));
  }
  encodeMemberLine("observation", Out,
                   [&](std::string &B) { json::appendInteger(B, Index); });
  for (const TensorValue *F : Features)
    Out.appendBorrowed(F->data(), F->byteSize());
  Out.appendChar('\n');
  return Status::ok();
}

Status BitstreamSerDes::decodeAdvice(ByteSource &In, const TensorSpec &Spec,
                                     const SerDesLimits &Limits,
                                     TensorValue &Advice) {
  // Error subjects are built only on failure: this is the per-request path.
  auto What = [&] { return subject("advice", Spec); };
  size_t Row = 0;
  if (!rowElements(Spec, Row) || Row == 0)
    return Status(ErrorCode::InvalidArgument,
                  What() + ": invalid spec " + Spec.describe());
  const size_t Size = dtypeSize(Spec.type());
  size_t Count = Row;
  if (Spec.isDynamic()) {
    unsigned char LE[8];
    if (Status S = In.readExact(LE, sizeof LE))
      return S.addContext("reading the element count of " + What());
    uint64_t C;
    std::memcpy(&C, LE, sizeof C); // host is little-endian (checked)
    // Bound the count before it sizes anything; divide, never multiply.
    if (C > Limits.MaxMessageBytes / Size)
      return Status(ErrorCode::TooLarge,
                    What() + ": " + std::to_string(C) +
                        " elements exceed the message size limit of " +
                        std::to_string(Limits.MaxMessageBytes) + " bytes");
    if (C % Row != 0)
      return Status(ErrorCode::Malformed,
                    What() + ": element count " + std::to_string(C) +
                        " is not a multiple of " + std::to_string(Row) +
                        " (the fixed dimensions of " + Spec.describe() + ")");
    Count = static_cast<size_t>(C);
  } else if (Row > Limits.MaxMessageBytes / Size) {
    return Status(ErrorCode::TooLarge,
                  What() + ": " + Spec.describe() +
                      " exceeds the message size limit of " +
                      std::to_string(Limits.MaxMessageBytes) + " bytes");
  }
  prepareValue(Advice, Spec);
  setConcreteShape(Advice, Spec, Count);
  if (Status S = In.readExact(Advice.data(), Advice.byteSize()))
    return S.addContext("reading " + What());
  if (Advice.type() == DType::Bool || Advice.type() == DType::String)
    return checkTensorBytes(Advice, What());
  return Status::ok();
}

// ---- model side --------------------------------------------------------------

Status BitstreamSerDes::readRecordEnd(ByteSource &In, int64_t Index,
                                      const char *Record) {
  auto What = [&] { return Record + (" " + std::to_string(Index)); };
  unsigned char NL;
  if (Status S = In.readExact(&NL, 1))
    return S.addContext(What());
  if (NL != '\n')
    return Status(ErrorCode::Malformed,
                  What() + ": expected '\\n' after the payload, got " +
                      hexByte(NL) + " (payload sizes disagree with the header)");
  return Status::ok();
}

Status BitstreamSerDes::skipOutcome(ByteSource &In,
                                    const SerDesLimits &Limits) {
  if (Status S = In.readLine(Line, Limits.MaxHeaderBytes))
    return S.addContext("reading an outcome record");
  LineKind Kind;
  if (Status S = parseCompilerLine(Line, Limits, Ctl, Kind,
                                   [](json::Reader &) { return Status(); }))
    return S.addContext("outcome record");
  if (Kind != LineKind::Outcome)
    return Status(ErrorCode::Malformed,
                  "expected an {\"outcome\":N} record after the observation "
                  "(the header declared a \"score\")");
  size_t Bytes = 0;
  if (!detail::specPayloadBytes(*ScoreSpec, Bytes) ||
      Bytes > Limits.MaxMessageBytes)
    return Status(ErrorCode::TooLarge, "outcome payload exceeds the limit");
  Scratch.resize(Bytes);
  if (Status S = In.readExact(Scratch.data(), Bytes))
    return S.addContext("reading an outcome payload");
  return readRecordEnd(In, Ctl.Outcome, "outcome");
}

Status BitstreamSerDes::decodeMessage(ByteSource &In,
                                      const SerDesLimits &Limits,
                                      std::vector<TensorSpec> &CurrentSpecs,
                                      TensorSpec &CurrentAdvice,
                                      CompilerMessage &Msg) {
  LineKind Kind;
  if (Status S = readCompilerLine(
          In, Limits, CurrentSpecs, CurrentAdvice, Msg, Kind,
          [](json::Reader &R) {
            return Status(ErrorCode::Malformed,
                          "JSON: at offset " + std::to_string(R.offset()) +
                              ": a \"features\" object (JSON format) in a "
                              "bitstream session");
          }))
    return S;

  switch (Kind) {
  case LineKind::Header:
    if (Ctl.HasScore)
      ScoreSpec = Ctl.Score;
    else
      ScoreSpec.reset();
    return Status::ok();
  case LineKind::Context:
    return Status::ok();
  case LineKind::Outcome:
    return Status(ErrorCode::Malformed,
                  "unexpected {\"outcome\":N} record: the header declared no "
                  "\"score\"");
  case LineKind::Observation:
    break;
  }

  auto What = [&] { return "observation " + std::to_string(Ctl.Observation); };
  if (!haveHeader(CurrentSpecs, CurrentAdvice))
    return Status(ErrorCode::Malformed, What() + " before any header");
  // The specs came through a header (already bounded) or from the caller:
  // re-check the total cheaply before sizing buffers from it.
  size_t Total = 0;
  for (const TensorSpec &Spec : CurrentSpecs) {
    size_t Bytes = 0;
    if (Spec.isDynamic() || !detail::specPayloadBytes(Spec, Bytes))
      return Status(ErrorCode::Malformed,
                    What() + ": " + subject("feature", Spec) +
                        " has no concrete shape: " + Spec.describe());
    if (__builtin_add_overflow(Total, Bytes, &Total) ||
        Total > Limits.MaxMessageBytes)
      return Status(ErrorCode::TooLarge,
                    What() + ": features exceed the message size limit of " +
                        std::to_string(Limits.MaxMessageBytes) + " bytes");
  }
  Msg.Type = CompilerMessage::Kind::Observation;
  Msg.ObservationIndex = Ctl.Observation;
  Msg.Features.resize(CurrentSpecs.size());
  for (size_t I = 0; I < CurrentSpecs.size(); ++I) {
    const TensorSpec &Spec = CurrentSpecs[I];
    TensorValue &V = Msg.Features[I];
    prepareValue(V, Spec);
    setConcreteShape(V, Spec, Spec.elementCount());
    if (Status S = In.readExact(V.data(), V.byteSize()))
      return S.addContext(What() + ": reading " + subject("feature", Spec));
    if (V.type() == DType::Bool || V.type() == DType::String)
      if (Status S =
              checkTensorBytes(V, What() + ": " + subject("feature", Spec)))
        return S;
  }
  if (Status S = readRecordEnd(In, Ctl.Observation, "observation"))
    return S;
  if (ScoreSpec)
    return skipOutcome(In, Limits);
  return Status::ok();
}

Status BitstreamSerDes::encodeAdvice(const TensorSpec &Spec,
                                     const TensorValue &Advice,
                                     WireMessage &Out) {
  auto What = [&] { return subject("advice", Spec); };
  if (Advice.type() != Spec.type())
    return Status(ErrorCode::TypeMismatch,
                  What() + ": expected " + std::string(dtypeName(Spec.type())) +
                      ", got a " + std::string(dtypeName(Advice.type())) +
                      " value");
  size_t Row = 0;
  if (!rowElements(Spec, Row) || Row == 0)
    return Status(ErrorCode::InvalidArgument,
                  What() + ": invalid spec " + Spec.describe());
  const size_t Count = Advice.elementCount();
  if (!Spec.isDynamic()) {
    if (Count != Row)
      return Status(ErrorCode::TypeMismatch,
                    What() + ": expected " + std::to_string(Row) +
                        " elements, got " + std::to_string(Count));
    Out.appendText(Advice.asString());
    return Status::ok();
  }
  if (Count % Row != 0)
    return Status(ErrorCode::TypeMismatch,
                  What() + ": " + std::to_string(Count) +
                      " elements is not a multiple of " + std::to_string(Row));
  const uint64_t C = Count;
  char LE[8];
  std::memcpy(LE, &C, sizeof LE);
  Out.appendText(std::string_view(LE, sizeof LE));
  Out.appendText(Advice.asString());
  return Status::ok();
}

} // namespace mlbridge
