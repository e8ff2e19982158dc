//===- serdes/serdes_internal.h - Pieces shared by the SerDes ---*- C++ -*-===//
//
// Internal to the library. Bitstream and JSON share their control lines
// (header, context; the observation line differs only in its "features"
// member), so both encode and decode them with the code below.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SERDES_SERDES_INTERNAL_H
#define MLBRIDGE_SERDES_SERDES_INTERNAL_H

#include "mlbridge/serdes.h"
#include "support/json.h"

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the wire formats are little-endian; big-endian hosts are unsupported"
#endif

namespace mlbridge::serdes_detail {

// ---- encoding ----------------------------------------------------------------

/// `{"features":[SPEC,...],"advice":SPEC}\n`, each feature with the
/// concrete shape of its current value; `"continue":true` and
/// `"session":"HEX"` are appended when asked for.
void encodeHeaderLine(const std::vector<const TensorValue *> &Features,
                      const TensorSpec &Advice, bool ContinuesSession,
                      uint64_t SessionId, WireMessage &Out);
/// `{"context":"NAME"}\n`.
void encodeContextLine(std::string_view Name, WireMessage &Out);
/// Appends the line `{"Key":VALUE}\n` to Out as owned text, VALUE written by
/// AppendValue(std::string &). When that returns an error Status, Out is left
/// as it was and the error returned.
template <typename AppendValueFn>
Status encodeMemberLine(std::string_view Key, WireMessage &Out,
                        AppendValueFn &&AppendValue) {
  std::string &B = Out.ownedBuffer();
  const size_t Start = B.size();
  B += "{\"";
  B += Key;
  B += "\":";
  if constexpr (std::is_void_v<decltype(AppendValue(B))>) {
    AppendValue(B);
  } else if (Status S = AppendValue(B)) {
    B.resize(Start);
    return S;
  }
  B += "}\n";
  Out.commitOwned(Start);
  return Status::ok();
}

// ---- tensor buffers ----------------------------------------------------------

/// Makes Out describe a value of Spec: resets it (allocating) only when the
/// name, dtype or port differ, so a reused TensorValue keeps its storage.
void prepareValue(TensorValue &Out, const TensorSpec &Spec);
/// Sets Out's concrete shape for Elements elements of Spec (a -1 dimension
/// becomes Elements / product of the fixed ones) and sizes its bytes. The
/// shape vector is rebuilt only when it changes.
void setConcreteShape(TensorValue &Out, const TensorSpec &Spec,
                      size_t Elements);
/// Product of Spec's fixed dimensions (the element count of one "row" of a
/// dynamic spec; the element count of a fixed one). False when the spec is
/// unusable (overflow, bad dims).
bool rowElements(const TensorSpec &Spec, size_t &Elements);
/// Checks bool payload bytes are 0 or 1 and string payloads are UTF-8.
Status checkTensorBytes(const TensorValue &V, std::string_view What);
/// `advice "x"`, `feature "y"` — the subject of error messages.
std::string subject(std::string_view Role, const TensorSpec &Spec);

// ---- decoding compiler lines ---------------------------------------------------

/// Everything a compiler -> model line may contain.
struct ControlLine {
  bool HasFeatureSpecs = false;  ///< "features":[SPEC,...] (a header)
  bool HasFeatureValues = false; ///< "features":{...} (JSON observation)
  bool HasAdvice = false;
  bool HasScore = false;
  bool HasContext = false;
  bool HasObservation = false;
  bool HasOutcome = false;
  bool Continue = false; ///< "continue":true on a header (same session)
  uint64_t SessionId = 0; ///< "session":"HEX" on a header (protocol §5.1)
  std::vector<TensorSpec> Features;
  TensorSpec Advice;
  TensorSpec Score;
  std::string Context;
  int64_t Observation = 0;
  int64_t Outcome = 0;
  std::string Key; // scratch

  void reset() {
    HasFeatureSpecs = HasFeatureValues = HasAdvice = HasScore = false;
    HasContext = HasObservation = HasOutcome = Continue = false;
    SessionId = 0;
  }
};

enum class LineKind { Header, Context, Observation, Outcome };

/// Base of the two line formats (bitstream, JSON): they write the same
/// header and context lines, and read each compiler line into Ctl.
class ControlLineSerDes : public SerDes {
public:
  void encodeHeader(const std::vector<const TensorValue *> &Features,
                    const TensorSpec &Advice, bool ContinuesSession,
                    uint64_t SessionId, WireMessage &Out) final {
    encodeHeaderLine(Features, Advice, ContinuesSession, SessionId, Out);
  }
  using SerDes::encodeHeader;
  void encodeContext(std::string_view Name, WireMessage &Out) final {
    encodeContextLine(Name, Out);
  }

protected:
  /// Reads the next compiler line into Ctl (parseCompilerLine) and applies
  /// it to Msg and the current specs when it is a header or a context line.
  /// Kind says what it was: an observation or outcome is left to the format.
  template <typename FeatureValuesFn>
  Status readCompilerLine(ByteSource &In, const SerDesLimits &Limits,
                          std::vector<TensorSpec> &CurrentSpecs,
                          TensorSpec &CurrentAdvice, CompilerMessage &Msg,
                          LineKind &Kind, FeatureValuesFn &&OnFeatureValues);

  ControlLine Ctl;  // reused parse state
  std::string Line; // reused line buffer
};

/// Parses the member called Ctl.Key (the reader is at its value), except a
/// "features" object, which the caller handles. Unknown keys are skipped.
Status parseControlMember(json::Reader &R, const SerDesLimits &Limits,
                          ControlLine &Ctl);
/// Decides what a parsed line is; rejects lines that mix kinds.
Status classifyLine(const ControlLine &Ctl, LineKind &Kind);
/// Copies a parsed header into the message and the caller's current specs.
void applyHeader(const ControlLine &Ctl, std::vector<TensorSpec> &CurrentSpecs,
                 TensorSpec &CurrentAdvice, CompilerMessage &Msg);
/// Moves a parsed context line's name into the message.
inline void applyContext(ControlLine &Ctl, CompilerMessage &Msg) {
  Msg.Type = CompilerMessage::Kind::Context;
  Msg.Context.swap(Ctl.Context);
}
/// True once a header has been seen (or the caller installed specs).
inline bool haveHeader(const std::vector<TensorSpec> &Specs,
                       const TensorSpec &Advice) {
  return !Specs.empty() || !Advice.name().empty();
}

/// Parses one compiler -> model line and says what it is (classifyLine).
/// A JSON observation's "features" object is handed to
/// OnFeatureValues(json::Reader&) as it is met, so values are decoded in
/// place with no intermediate tree.
template <typename FeatureValuesFn>
Status parseCompilerLine(std::string_view Line, const SerDesLimits &Limits,
                         ControlLine &Ctl, LineKind &Kind,
                         FeatureValuesFn &&OnFeatureValues) {
  Ctl.reset();
  json::Reader R(Line);
  if (R.peek() != '{')
    return R.errorExpected("a JSON object (header, context or observation)");
  if (Status S = R.beginObject())
    return S;
  bool First = true, Has = false;
  for (;;) {
    if (Status S = R.nextMember(First, Has, Ctl.Key))
      return S;
    if (!Has)
      break;
    if (Ctl.Key == "features" && R.peek() == '{') {
      if (Ctl.HasFeatureValues || Ctl.HasFeatureSpecs)
        return Status(ErrorCode::Malformed, "duplicate key \"features\"");
      Ctl.HasFeatureValues = true;
      if (Status S = OnFeatureValues(R))
        return S;
      continue;
    }
    if (Status S = parseControlMember(R, Limits, Ctl))
      return S;
  }
  if (Status S = R.finish())
    return S;
  return classifyLine(Ctl, Kind);
}

template <typename FeatureValuesFn>
Status ControlLineSerDes::readCompilerLine(
    ByteSource &In, const SerDesLimits &Limits,
    std::vector<TensorSpec> &CurrentSpecs, TensorSpec &CurrentAdvice,
    CompilerMessage &Msg, LineKind &Kind, FeatureValuesFn &&OnFeatureValues) {
  if (Status S = In.readLine(Line, Limits.MaxHeaderBytes))
    return S;
  if (Status S =
          parseCompilerLine(Line, Limits, Ctl, Kind,
                            std::forward<FeatureValuesFn>(OnFeatureValues)))
    return S;
  if (Kind == LineKind::Header)
    applyHeader(Ctl, CurrentSpecs, CurrentAdvice, Msg);
  else if (Kind == LineKind::Context)
    applyContext(Ctl, Msg);
  return Status::ok();
}

} // namespace mlbridge::serdes_detail

#endif // MLBRIDGE_SERDES_SERDES_INTERNAL_H
