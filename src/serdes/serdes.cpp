//===- serdes/serdes.cpp - SerDes factory and shared pieces ---------------===//

#include "mlbridge/serdes.h"

#include "core/tensor_spec_json.h"
#include "serdes/bitstream_serdes.h"
#include "serdes/json_serdes.h"
#include "serdes/serdes_internal.h"
#include "support/enum_names.h"
#include "support/utf8.h"

#include <cstdio>

namespace mlbridge {

SerDes::~SerDes() = default;

namespace {
constexpr const char *SerDesKindNames[] = {"bitstream", "json", "protobuf"};
} // namespace

const char *serdesKindName(SerDesKind Kind) {
  return support::enumName<SerDesKind::Protobuf>(Kind, SerDesKindNames);
}

Expected<SerDesKind> serdesKindFromName(std::string_view Name) {
  if (std::optional<SerDesKind> K =
          support::enumFromName<SerDesKind::Protobuf>(Name, SerDesKindNames))
    return *K;
  return Status(ErrorCode::InvalidArgument,
                "unknown SerDes \"" + std::string(Name) +
                    "\" (expected \"bitstream\", \"json\" or \"protobuf\")");
}

std::unique_ptr<SerDes> createSerDes(SerDesKind Kind) {
  switch (Kind) {
  case SerDesKind::Bitstream:
    return std::make_unique<BitstreamSerDes>();
  case SerDesKind::Json:
    return std::make_unique<JsonSerDes>();
  case SerDesKind::Protobuf: // the MLBridge::grpc component's
    return nullptr;
  }
  return nullptr;
}

namespace serdes_detail {

// ---- encoding ----------------------------------------------------------------

void encodeHeaderLine(const std::vector<const TensorValue *> &Features,
                      const TensorSpec &Advice, bool ContinuesSession,
                      uint64_t SessionId, WireMessage &Out) {
  std::string &B = Out.ownedBuffer();
  const size_t Start = B.size();
  B += "{\"features\":[";
  for (size_t I = 0; I < Features.size(); ++I) {
    if (I)
      B.push_back(',');
    Features[I]->spec().appendJson(B);
  }
  B += "],\"advice\":";
  Advice.appendJson(B);
  // Only our spec-update headers carry this key, so a first header stays
  // byte-identical to LLVM's.
  if (ContinuesSession)
    B += ",\"continue\":true";
  // Likewise only offered by our own runner, never by LLVM.
  if (SessionId) {
    char Hex[17];
    std::snprintf(Hex, sizeof Hex, "%016llx",
                  static_cast<unsigned long long>(SessionId));
    B += ",\"session\":\"";
    B.append(Hex, 16);
    B += '"';
  }
  B += "}\n";
  Out.commitOwned(Start);
}

void encodeContextLine(std::string_view Name, WireMessage &Out) {
  encodeMemberLine("context", Out,
                   [&](std::string &B) { json::appendQuoted(B, Name); });
}

// ---- tensor buffers ----------------------------------------------------------

void prepareValue(TensorValue &Out, const TensorSpec &Spec) {
  const TensorSpec &Cur = Out.spec();
  if (Cur.type() != Spec.type() || Cur.port() != Spec.port() ||
      Cur.name() != Spec.name())
    Out.reset(Spec);
}

bool rowElements(const TensorSpec &Spec, size_t &Elements) {
  size_t Bytes;
  if (!detail::specPayloadBytes(Spec, Bytes))
    return false;
  Elements = Bytes / dtypeSize(Spec.type());
  return true;
}

void setConcreteShape(TensorValue &Out, const TensorSpec &Spec,
                      size_t Elements) {
  const std::vector<int64_t> &Want = Spec.shape();
  const std::vector<int64_t> &Have = Out.spec().shape();
  int64_t DynLen = 0;
  if (Spec.isDynamic()) {
    size_t Row = 0;
    if (rowElements(Spec, Row) && Row)
      DynLen = static_cast<int64_t>(Elements / Row);
  }
  bool Same = Have.size() == Want.size();
  for (size_t I = 0; Same && I < Want.size(); ++I)
    Same = Have[I] == (Want[I] == kDynamicDim ? DynLen : Want[I]);
  if (!Same) {
    std::vector<int64_t> Shape(Want);
    for (int64_t &D : Shape)
      if (D == kDynamicDim)
        D = DynLen;
    Out.reshape(std::move(Shape));
  }
  Out.resizeBytes(Elements * dtypeSize(Spec.type()));
}

Status checkTensorBytes(const TensorValue &V, std::string_view What) {
  if (V.type() == DType::String) {
    size_t Bad = 0;
    if (!support::isValidUtf8(V.asString(), &Bad))
      return Status(ErrorCode::Malformed,
                    std::string(What) + ": string is not valid UTF-8 (byte " +
                        std::to_string(Bad) + ")");
    return Status::ok();
  }
  if (V.type() != DType::Bool)
    return Status::ok();
  const auto *P = static_cast<const unsigned char *>(V.data());
  for (size_t I = 0, N = V.byteSize(); I < N; ++I)
    if (P[I] > 1) {
      static const char Hex[] = "0123456789abcdef";
      const char Byte[] = {'0', 'x', Hex[P[I] >> 4], Hex[P[I] & 15], 0};
      return Status(ErrorCode::Malformed,
                    std::string(What) + ": bool element " + std::to_string(I) +
                        " is byte " + Byte + ", not 0 or 1");
    }
  return Status::ok();
}

std::string subject(std::string_view Role, const TensorSpec &Spec) {
  std::string S(Role);
  S += " \"";
  S += Spec.name();
  S += '"';
  return S;
}

// ---- decoding compiler lines ---------------------------------------------------

namespace {

Status checkSpecSize(const TensorSpec &Spec, const SerDesLimits &Limits,
                     size_t &Bytes) {
  if (!detail::specPayloadBytes(Spec, Bytes) || Bytes > Limits.MaxMessageBytes)
    return Status(ErrorCode::TooLarge,
                  "tensor spec \"" + Spec.name() + "\": " + Spec.describe() +
                      " exceeds the message size limit of " +
                      std::to_string(Limits.MaxMessageBytes) + " bytes");
  return Status::ok();
}

Status parseSpec(json::Reader &R, unsigned Flags, const SerDesLimits &Limits,
                 TensorSpec &Out, size_t &Bytes) {
  json::Value V;
  if (Status S = R.readValue(V))
    return S;
  if (Status S = detail::specFromJSONValue(V, Flags, Out))
    return S;
  return checkSpecSize(Out, Limits, Bytes);
}

Status parseFeatureSpecs(json::Reader &R, const SerDesLimits &Limits,
                         ControlLine &Ctl) {
  Ctl.Features.clear();
  if (R.peek() != '[')
    return R.errorExpected("an array of tensor specs for \"features\"");
  if (Status S = R.beginArray())
    return S;
  bool First = true, Has = false;
  size_t Total = 0;
  for (;;) {
    if (Status S = R.nextElement(First, Has))
      return S;
    if (!Has)
      return Status::ok();
    if (Ctl.Features.size() == Limits.MaxFeatures)
      return Status(ErrorCode::TooLarge,
                    "header: more than " + std::to_string(Limits.MaxFeatures) +
                        " features (the feature-count limit)");
    Ctl.Features.emplace_back();
    size_t Bytes = 0;
    // Features carry concrete shapes: 0 is an empty vector/string, -1 is
    // meaningless (the payload size would be unknown).
    if (Status S = parseSpec(R, detail::SpecAllowEmpty, Limits,
                             Ctl.Features.back(), Bytes))
      return S.addContext("header: feature " +
                          std::to_string(Ctl.Features.size() - 1));
    // One observation carries all payloads: bound their sum as well.
    if (__builtin_add_overflow(Total, Bytes, &Total) ||
        Total > Limits.MaxMessageBytes)
      return Status(ErrorCode::TooLarge,
                    "header: the features total more than the message size "
                    "limit of " +
                        std::to_string(Limits.MaxMessageBytes) + " bytes");
  }
}

Status parseIndex(json::Reader &R, std::string_view Key, int64_t &Out) {
  if (R.peek() == '-' || (R.peek() >= '0' && R.peek() <= '9')) {
    json::NumberToken Tok;
    if (Status S = R.readNumber(Tok))
      return S;
    const json::Number N = json::toNumber(Tok);
    if (N.HasInt64 && N.Int >= 0) {
      Out = N.Int;
      return Status::ok();
    }
    return Status(ErrorCode::Malformed,
                  "\"" + std::string(Key) +
                      "\" must be a non-negative 64-bit integer, got " +
                      std::string(Tok.Text));
  }
  return Status(ErrorCode::Malformed,
                "\"" + std::string(Key) +
                    "\" must be a non-negative integer, got " +
                    R.describeAhead());
}

/// "session":"<16 hex digits>", not all zero (protocol §5.1).
Status parseSessionId(json::Reader &R, uint64_t &Out) {
  std::string Hex;
  if (R.peek() != '"')
    return Status(ErrorCode::Malformed,
                  "\"session\" must be a string, got " + R.describeAhead());
  if (Status S = R.readString(Hex))
    return S;
  uint64_t V = 0;
  bool Valid = Hex.size() == 16;
  for (size_t I = 0; Valid && I < Hex.size(); ++I) {
    const char C = Hex[I];
    const int D = C >= '0' && C <= '9'   ? C - '0'
                  : C >= 'a' && C <= 'f' ? C - 'a' + 10
                                         : -1;
    Valid = D >= 0;
    V = V << 4 | static_cast<uint64_t>(D);
  }
  if (!Valid || V == 0)
    return Status(ErrorCode::Malformed,
                  "\"session\" must be 16 lower-case hex digits, not all "
                  "zero");
  Out = V;
  return Status::ok();
}

Status duplicate(std::string_view Key) {
  return Status(ErrorCode::Malformed,
                "duplicate key \"" + std::string(Key) + "\"");
}

/// Marks Key, which a line may hold once, as seen; a second one is an error.
Status claimOnce(bool &Seen, std::string_view Key) {
  if (Seen)
    return duplicate(Key);
  Seen = true;
  return Status::ok();
}

/// A header's "advice" or "score" spec.
Status parseSpecMember(json::Reader &R, unsigned Flags,
                       const SerDesLimits &Limits, std::string_view Key,
                       bool &Seen, TensorSpec &Out) {
  if (Status S = claimOnce(Seen, Key))
    return S;
  size_t Bytes = 0;
  if (Status S = parseSpec(R, Flags, Limits, Out, Bytes))
    return S.addContext("header: " + std::string(Key));
  return Status::ok();
}

/// "observation":N or "outcome":N.
Status parseIndexMember(json::Reader &R, std::string_view Key, bool &Seen,
                        int64_t &Out) {
  if (Status S = claimOnce(Seen, Key))
    return S;
  return parseIndex(R, Key, Out);
}

} // namespace

Status parseControlMember(json::Reader &R, const SerDesLimits &Limits,
                          ControlLine &Ctl) {
  const std::string &K = Ctl.Key;
  if (K == "features") {
    if (Ctl.HasFeatureSpecs || Ctl.HasFeatureValues)
      return duplicate(K);
    Ctl.HasFeatureSpecs = true;
    return parseFeatureSpecs(R, Limits, Ctl);
  }
  if (K == "advice")
    return parseSpecMember(R, detail::SpecAllowDynamic, Limits, K,
                           Ctl.HasAdvice, Ctl.Advice);
  if (K == "score")
    return parseSpecMember(R, 0, Limits, K, Ctl.HasScore, Ctl.Score);
  if (K == "context") {
    if (Status S = claimOnce(Ctl.HasContext, K))
      return S;
    if (R.peek() != '"')
      return Status(ErrorCode::Malformed,
                    "\"context\" must be a string, got " + R.describeAhead());
    return R.readString(Ctl.Context);
  }
  if (K == "observation")
    return parseIndexMember(R, K, Ctl.HasObservation, Ctl.Observation);
  if (K == "outcome")
    return parseIndexMember(R, K, Ctl.HasOutcome, Ctl.Outcome);
  if (K == "continue") {
    if (R.peek() != 't' && R.peek() != 'f')
      return Status(ErrorCode::Malformed,
                    "\"continue\" must be true or false, got " +
                        R.describeAhead());
    return R.readBool(Ctl.Continue);
  }
  if (K == "session")
    return parseSessionId(R, Ctl.SessionId);
  return R.skipValue(); // unknown keys are for future extensions
}

Status classifyLine(const ControlLine &Ctl, LineKind &Kind) {
  const int Kinds = int(Ctl.HasFeatureSpecs) + int(Ctl.HasContext) +
                    int(Ctl.HasObservation) + int(Ctl.HasOutcome);
  if (Kinds > 1)
    return Status(ErrorCode::Malformed,
                  "a line mixes the keys of different messages (header "
                  "\"features\" array, \"context\", \"observation\", "
                  "\"outcome\")");
  if (Ctl.HasFeatureSpecs)
    Kind = LineKind::Header;
  else if (Ctl.HasObservation)
    Kind = LineKind::Observation;
  else if (Ctl.HasContext)
    Kind = LineKind::Context;
  else if (Ctl.HasOutcome)
    Kind = LineKind::Outcome;
  else
    return Status(ErrorCode::Malformed,
                  "unrecognized message: expected a header (\"features\"), "
                  "a \"context\" or an \"observation\"");
  if (Ctl.HasFeatureValues && Kind != LineKind::Observation)
    return Status(ErrorCode::Malformed,
                  "a \"features\" object outside an observation");
  return Status::ok();
}

void applyHeader(const ControlLine &Ctl, std::vector<TensorSpec> &CurrentSpecs,
                 TensorSpec &CurrentAdvice, CompilerMessage &Msg) {
  Msg.Type = CompilerMessage::Kind::Header;
  Msg.FeatureSpecs = Ctl.Features;
  // LLVM's training logs may omit "advice"; an empty name marks "none".
  Msg.AdviceSpec = Ctl.HasAdvice ? Ctl.Advice : TensorSpec();
  Msg.ContinuesSession = Ctl.Continue;
  Msg.SessionId = Ctl.SessionId;
  CurrentSpecs = Msg.FeatureSpecs;
  CurrentAdvice = Msg.AdviceSpec;
}

} // namespace serdes_detail
} // namespace mlbridge
