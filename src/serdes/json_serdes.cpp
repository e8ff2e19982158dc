//===- serdes/json_serdes.cpp - One compact JSON object per line ----------===//
//
// Lines (docs/protocol.md §3):
//   header       {"features":[SPEC,...],"advice":SPEC}
//   context      {"context":"NAME"}
//   observation  {"observation":N,"features":{"NAME":VALUE,...}}
//   reply        {"advice":VALUE}  or  {"error":"MESSAGE"}
// A VALUE is a bare scalar for shape [1], else a flat array; a string tensor
// is one JSON string. Typing is exact (§3.3).
//
//===----------------------------------------------------------------------===//

#include "serdes/json_serdes.h"
#include "support/utf8.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace mlbridge {

using namespace serdes_detail;

namespace {

bool isScalarShape(const TensorSpec &S) {
  return S.shape().size() == 1 && S.shape()[0] == 1;
}

// ---- encoding ----------------------------------------------------------------

/// Upper bound of the text of one element (without the separator).
size_t maxElementChars(DType T) {
  switch (T) {
  case DType::Float:
    return 24;
  case DType::Double:
    return json::kMaxNumberChars;
  case DType::Int8:
  case DType::Int16:
  case DType::UInt8:
  case DType::UInt16:
    return 6;
  case DType::Int32:
  case DType::UInt32:
    return 11;
  case DType::Int64:
  case DType::UInt64:
    return 20;
  case DType::Bool:
    return 5;
  case DType::String:
    return 0;
  }
  return json::kMaxNumberChars;
}

template <typename T> char *writeOne(char *P, T V) {
  if constexpr (std::is_same_v<T, float>)
    return json::writeFloat(P, V);
  else if constexpr (std::is_same_v<T, double>)
    return json::writeDouble(P, V);
  else
    return json::writeInteger(P, V);
}

/// Bool is stored as unsigned char (like uint8_t), hence the flag.
template <typename T, bool IsBool = false>
char *writeElements(char *P, const void *Data, size_t N) {
  const auto *Src = static_cast<const unsigned char *>(Data);
  for (size_t I = 0; I < N; ++I) {
    if (I)
      *P++ = ',';
    T V;
    std::memcpy(&V, Src + I * sizeof(T), sizeof(T));
    if constexpr (IsBool) {
      if (V) {
        std::memcpy(P, "true", 4);
        P += 4;
      } else {
        std::memcpy(P, "false", 5);
        P += 5;
      }
    } else {
      P = writeOne(P, V);
    }
  }
  return P;
}

/// Appends V as a JSON value: bare when Bare (one element), else an array.
/// Numbers are formatted straight into B's storage.
Status appendValue(std::string &B, const TensorValue &V, bool Bare,
                   std::string_view Role) {
  if (V.type() == DType::String) {
    size_t Bad = 0;
    if (!support::isValidUtf8(V.asString(), &Bad))
      return Status(ErrorCode::InvalidArgument,
                    subject(Role, V.spec()) +
                        ": string is not valid UTF-8 (bad byte at offset " +
                        std::to_string(Bad) + ")");
    json::appendQuoted(B, V.asString());
    return Status::ok();
  }
  const size_t N = V.elementCount();
  Bare = Bare && N == 1;
  const size_t Start = B.size();
  B.resize(Start + N * (maxElementChars(V.type()) + 1) + 2);
  char *P = &B[Start];
  if (!Bare)
    *P++ = '[';
  const void *D = V.data();
  switch (V.type()) {
#define MLBRIDGE_CASE(E, Ty, Name)                                              \
  case DType::E:                                                               \
    P = writeElements<Ty>(P, D, N);                                            \
    break;
    MLBRIDGE_NUMERIC_DTYPES(MLBRIDGE_CASE)
#undef MLBRIDGE_CASE
  case DType::Bool: P = writeElements<unsigned char, true>(P, D, N); break;
  case DType::String: break;
  }
  if (!Bare)
    *P++ = ']';
  B.resize(size_t(P - B.data()));
  return Status::ok();
}

/// Advice must have Spec's dtype and a compatible element count.
Status checkAdvice(const TensorSpec &Spec, const TensorValue &Advice) {
  const std::string_view Want = dtypeName(Spec.type());
  if (Advice.type() != Spec.type())
    return Status(ErrorCode::TypeMismatch,
                  subject("advice", Spec) + ": expected " + std::string(Want) +
                      ", got a " + std::string(dtypeName(Advice.type())) +
                      " value");
  size_t Row = 0;
  if (!rowElements(Spec, Row) || Row == 0)
    return Status(ErrorCode::InvalidArgument,
                  subject("advice", Spec) + ": invalid spec " +
                      Spec.describe());
  const size_t Count = Advice.elementCount();
  if (!Spec.isDynamic() && Count != Row)
    return Status(ErrorCode::TypeMismatch,
                  subject("advice", Spec) + ": expected " +
                      std::to_string(Row) + " elements, got " +
                      std::to_string(Count));
  if (Spec.isDynamic() && Count % Row != 0)
    return Status(ErrorCode::TypeMismatch,
                  subject("advice", Spec) + ": " + std::to_string(Count) +
                      " elements is not a multiple of " + std::to_string(Row));
  return Status::ok();
}

// ---- decoding ----------------------------------------------------------------

/// Where an element is, for messages; built into text only on error.
struct Where {
  std::string_view Role; // "advice" / "feature"
  const TensorSpec &Spec;
  bool InArray = false;
  size_t Index = 0;

  std::string prefix() const {
    std::string S = subject(Role, Spec);
    if (InArray)
      S += ": element " + std::to_string(Index);
    return S;
  }
  Status mismatch(const std::string &Got) const {
    return Status(ErrorCode::TypeMismatch,
                  prefix() + ": expected " +
                      std::string(dtypeName(Spec.type())) + ", got " + Got);
  }
  Status outOfRange(const json::NumberToken &Tok) const {
    return Status(ErrorCode::TypeMismatch,
                  prefix() + ": " + describe(Tok) + " is out of range for " +
                      std::string(dtypeName(Spec.type())));
  }
  static std::string describe(const json::NumberToken &Tok) {
    std::string_view T = Tok.Text.substr(0, 40);
    const char *Dots = Tok.Text.size() > 40 ? "..." : "";
    switch (Tok.Kind) {
    case json::NumberToken::Form::Integer:
      return "integer token " + std::string(T) + Dots;
    case json::NumberToken::Form::Decimal:
      return "float token " + std::string(T) + Dots;
    default:
      return std::string(T);
    }
  }
};

/// The value at the cursor has the wrong type, or is no value at all (a
/// syntax error such as a trailing comma, which is Malformed).
Status wrongValue(json::Reader &R, const Where &W) {
  bool IsValue = false;
  std::string Got = R.describeAhead(&IsValue);
  if (!IsValue)
    return R.errorExpected("a value").addContext(W.prefix());
  return W.mismatch(Got);
}

bool startsNumber(int C) {
  return C == '-' || (C >= '0' && C <= '9') || C == 'N' || C == 'I';
}

/// Reads the number token at the cursor; anything else is a wrong value.
Status readNumberToken(json::Reader &R, json::NumberToken &Tok,
                       const Where &W) {
  if (!startsNumber(R.peek()))
    return wrongValue(R, W);
  if (Status S = R.readNumber(Tok))
    return S.addContext(W.prefix());
  return Status::ok();
}

template <typename T>
Status readInteger(json::Reader &R, T &Out, const Where &W) {
  json::NumberToken Tok;
  if (Status S = readNumberToken(R, Tok, W))
    return S;
  if (Tok.Kind != json::NumberToken::Form::Integer)
    return W.mismatch(Where::describe(Tok));
  const char *B = Tok.Text.data();
  const char *E = B + Tok.Text.size();
  if (std::from_chars(B, E, Out).ec == std::errc())
    return Status::ok();
  if (Tok.Text == "-0") { // from_chars rejects '-' for unsigned types
    Out = 0;
    return Status::ok();
  }
  return W.outOfRange(Tok);
}

template <typename T>
Status readFloating(json::Reader &R, T &Out, const Where &W) {
  json::NumberToken Tok;
  if (Status S = readNumberToken(R, Tok, W))
    return S;
  switch (Tok.Kind) {
  case json::NumberToken::Form::NaN:
    Out = std::numeric_limits<T>::quiet_NaN();
    return Status::ok();
  case json::NumberToken::Form::Infinity:
    Out = std::numeric_limits<T>::infinity();
    return Status::ok();
  case json::NumberToken::Form::NegInfinity:
    Out = -std::numeric_limits<T>::infinity();
    return Status::ok();
  default:
    break;
  }
  bool Ok;
  if constexpr (std::is_same_v<T, float>)
    Ok = json::tokenToFloat(Tok.Text, Out);
  else
    Ok = json::tokenToDouble(Tok.Text, Out);
  return Ok ? Status::ok() : W.outOfRange(Tok);
}

Status readBoolean(json::Reader &R, unsigned char &Out, const Where &W) {
  const int C = R.peek();
  if (C != 't' && C != 'f')
    return wrongValue(R, W);
  bool B = false;
  if (Status S = R.readBool(B))
    return S.addContext(W.prefix());
  Out = B ? 1 : 0;
  return Status::ok();
}

template <typename T, bool IsBool>
Status readElement(json::Reader &R, T &Out, const Where &W) {
  if constexpr (IsBool)
    return readBoolean(R, Out, W);
  else if constexpr (std::is_floating_point_v<T>)
    return readFloating(R, Out, W);
  else
    return readInteger(R, Out, W);
}

Status tooLarge(const Where &W, size_t MaxBytes) {
  return Status(ErrorCode::TooLarge,
                W.prefix() + ": value exceeds the message size limit of " +
                    std::to_string(MaxBytes) + " bytes");
}

/// Decodes a numeric or bool tensor (a bare scalar or a flat array) straight
/// into Out's buffer.
template <typename T, bool IsBool = false>
Status decodeNumbers(json::Reader &R, const TensorSpec &Spec,
                     std::string_view Role, size_t Row, size_t MaxBytes,
                     TensorValue &Out) {
  Where W{Role, Spec};
  const int C = R.peek();
  if (!Spec.isDynamic()) {
    if (Row > MaxBytes / sizeof(T))
      return tooLarge(W, MaxBytes);
    setConcreteShape(Out, Spec, Row);
    T *P = static_cast<T *>(Out.data());
    if (Row == 1 && C != '[') // the usual scalar: {"advice":1}
      return readElement<T, IsBool>(R, *P, W);
    if (C != '[')
      return Status(ErrorCode::TypeMismatch,
                    W.prefix() + ": expected an array of " +
                        std::to_string(Row) + " " +
                        std::string(dtypeName(Spec.type())) + " values, got " +
                        R.describeAhead());
    if (Status S = R.beginArray())
      return S;
    W.InArray = true;
    bool First = true, Has = false;
    size_t I = 0;
    for (;; ++I) {
      if (Status S = R.nextElement(First, Has))
        return S.addContext(subject(Role, Spec));
      if (!Has)
        break;
      if (I >= Row) {
        // Too many: skip the rest to report the real count.
        if (Status S = R.skipValue())
          return S.addContext(subject(Role, Spec));
        continue;
      }
      W.Index = I;
      if (Status S = readElement<T, IsBool>(R, P[I], W))
        return S;
    }
    if (I != Row)
      return Status(ErrorCode::TypeMismatch,
                    subject(Role, Spec) + ": expected " + std::to_string(Row) +
                        " elements, got " + std::to_string(I));
    return Status::ok();
  }

  // Variable length: grow geometrically, bounded by the size limit.
  if (C != '[')
    return Status(ErrorCode::TypeMismatch,
                  W.prefix() + ": expected an array of " +
                      std::string(dtypeName(Spec.type())) + " values, got " +
                      R.describeAhead());
  if (Status S = R.beginArray())
    return S;
  W.InArray = true;
  const size_t MaxElems = MaxBytes / sizeof(T);
  size_t Cap = Out.byteSize() / sizeof(T);
  size_t I = 0;
  bool First = true, Has = false;
  for (;; ++I) {
    if (Status S = R.nextElement(First, Has))
      return S.addContext(subject(Role, Spec));
    if (!Has)
      break;
    if (I == Cap) {
      if (Cap >= MaxElems)
        return tooLarge(W, MaxBytes);
      Cap = Cap < 8 ? 8 : Cap * 2;
      if (Cap > MaxElems)
        Cap = MaxElems;
      Out.resizeBytes(Cap * sizeof(T));
    }
    W.Index = I;
    if (Status S =
            readElement<T, IsBool>(R, static_cast<T *>(Out.data())[I], W))
      return S;
  }
  if (Row && I % Row != 0)
    return Status(ErrorCode::TypeMismatch,
                  subject(Role, Spec) + ": " + std::to_string(I) +
                      " elements is not a multiple of " + std::to_string(Row) +
                      " (the fixed dimensions of " + Spec.describe() + ")");
  setConcreteShape(Out, Spec, I);
  return Status::ok();
}

/// Decodes one VALUE for Spec into Out (reusing its storage).
Status decodeValue(json::Reader &R, const TensorSpec &Spec,
                   std::string_view Role, size_t MaxBytes, TensorValue &Out,
                   std::string &Text) {
  size_t Row = 0;
  if (!rowElements(Spec, Row))
    return Status(ErrorCode::InvalidArgument,
                  subject(Role, Spec) + ": invalid spec " + Spec.describe());
  prepareValue(Out, Spec);
  switch (Spec.type()) {
#define MLBRIDGE_CASE(E, Ty, Name)                                              \
  case DType::E:                                                               \
    return decodeNumbers<Ty>(R, Spec, Role, Row, MaxBytes, Out);
    MLBRIDGE_NUMERIC_DTYPES(MLBRIDGE_CASE)
#undef MLBRIDGE_CASE
  case DType::Bool:
    return decodeNumbers<unsigned char, true>(R, Spec, Role, Row, MaxBytes, Out);
  case DType::String:
    break;
  }
  // A string tensor is one JSON string; its shape is its byte length.
  Where W{Role, Spec};
  if (R.peek() != '"')
    return wrongValue(R, W);
  if (Status S = R.readString(Text))
    return S.addContext(W.prefix());
  if (Text.size() > MaxBytes)
    return tooLarge(W, MaxBytes);
  if (!Spec.isDynamic() && Text.size() != Row)
    return Status(ErrorCode::TypeMismatch,
                  W.prefix() + ": expected a string of " + std::to_string(Row) +
                      " bytes (its shape), got " + std::to_string(Text.size()));
  if (Spec.isDynamic() && Row && Text.size() % Row != 0)
    return Status(ErrorCode::TypeMismatch,
                  W.prefix() + ": string length " +
                      std::to_string(Text.size()) +
                      " is not a multiple of " + std::to_string(Row));
  setConcreteShape(Out, Spec, Text.size());
  if (!Text.empty())
    std::memcpy(Out.data(), Text.data(), Text.size());
  return Status::ok();
}

} // namespace

// ---- compiler side ---------------------------------------------------------

Status
JsonSerDes::encodeObservation(int64_t Index,
                              const std::vector<const TensorValue *> &Features,
                              WireMessage &Out) {
  if (Index < 0)
    return Status(ErrorCode::InvalidArgument,
                  "observation index must be >= 0, got " +
                      std::to_string(Index));
  std::string &B = Out.ownedBuffer();
  const size_t Start = B.size();
  auto Fail = [&](Status S) {
    B.resize(Start); // leave Out as it was
    return S;
  };
  B += "{\"observation\":";
  json::appendInteger(B, Index);
  B += ",\"features\":{";
  for (size_t I = 0; I < Features.size(); ++I) {
    const TensorValue *F = Features[I];
    if (!F)
      return Fail(Status(ErrorCode::InvalidArgument, "null feature tensor"));
    const TensorSpec &S = F->spec();
    if (S.isDynamic() || F->byteSize() != S.byteSize())
      return Fail(Status(ErrorCode::InvalidArgument,
                         subject("feature", S) + ": buffer holds " +
                             std::to_string(F->byteSize()) +
                             " bytes but its shape " + S.describe() +
                             " needs " + std::to_string(S.byteSize())));
    if (!support::isValidUtf8(S.name()))
      return Fail(Status(ErrorCode::InvalidArgument,
                         "feature name is not valid UTF-8"));
    if (I)
      B.push_back(',');
    json::appendQuoted(B, S.name());
    B.push_back(':');
    if (Status St = appendValue(B, *F, isScalarShape(S), "feature"))
      return Fail(std::move(St));
  }
  B += "}}\n";
  Out.commitOwned(Start);
  return Status::ok();
}

Status JsonSerDes::decodeAdvice(ByteSource &In, const TensorSpec &Spec,
                                const SerDesLimits &Limits,
                                TensorValue &Advice) {
  if (Status S = In.readLine(Line, Limits.MaxHeaderBytes))
    return S.addContext("reading " + subject("advice", Spec));
  json::Reader R(Line);
  if (R.peek() != '{')
    return R.errorExpected("a JSON object {\"advice\":...}")
        .addContext("advice reply");
  if (Status S = R.beginObject())
    return S;
  bool HasAdvice = false, HasError = false, First = true, Has = false;
  std::string ModelError;
  for (;;) {
    if (Status S = R.nextMember(First, Has, Key))
      return S.addContext("advice reply");
    if (!Has)
      break;
    if (Key == "advice") {
      if (HasAdvice)
        return Status(ErrorCode::Malformed,
                      "advice reply: duplicate key \"advice\"");
      HasAdvice = true;
      if (Status S = decodeValue(R, Spec, "advice", Limits.MaxMessageBytes,
                                 Advice, Text))
        return S;
    } else if (Key == "error") {
      if (HasError)
        return Status(ErrorCode::Malformed,
                      "advice reply: duplicate key \"error\"");
      HasError = true;
      if (R.peek() != '"')
        return Status(ErrorCode::Malformed,
                      "advice reply: \"error\" must be a string, got " +
                          R.describeAhead());
      if (Status S = R.readString(ModelError))
        return S.addContext("advice reply");
    } else if (Status S = R.skipValue()) {
      return S.addContext("advice reply");
    }
  }
  if (Status S = R.finish())
    return S.addContext("advice reply");
  if (HasError)
    return Status(ErrorCode::Unavailable,
                  "model reported an error: " + ModelError);
  if (!HasAdvice)
    return Status(ErrorCode::Malformed,
                  "advice reply has no \"advice\" key (expected "
                  "{\"advice\":VALUE} or {\"error\":\"MESSAGE\"})");
  return Status::ok();
}

// ---- model side --------------------------------------------------------------

Status JsonSerDes::decodeFeatureValues(json::Reader &R,
                                       const SerDesLimits &Limits,
                                       const std::vector<TensorSpec> &Specs,
                                       CompilerMessage &Msg) {
  const size_t N = Specs.size();
  Msg.Features.resize(N);
  Seen.assign(N, 0);
  if (Status S = R.beginObject())
    return S;
  bool First = true, Has = false;
  size_t Hint = 0; // features normally arrive in header order
  for (;;) {
    if (Status S = R.nextMember(First, Has, Key))
      return S.addContext("observation features");
    if (!Has)
      break;
    size_t Idx = N;
    if (Hint < N && Specs[Hint].name() == Key) {
      Idx = Hint;
    } else {
      for (size_t I = 0; I < N; ++I)
        if (Specs[I].name() == Key) {
          Idx = I;
          break;
        }
    }
    if (Idx == N)
      return Status(ErrorCode::Malformed,
                    "observation: unknown feature \"" + Key +
                        "\" (not in the current header)");
    if (Seen[Idx])
      return Status(ErrorCode::Malformed,
                    "observation: duplicate feature \"" + Key + "\"");
    Seen[Idx] = 1;
    Hint = Idx + 1;
    if (Status S = decodeValue(R, Specs[Idx], "feature",
                               Limits.MaxMessageBytes, Msg.Features[Idx], Text))
      return S;
  }
  for (size_t I = 0; I < N; ++I)
    if (!Seen[I])
      return Status(ErrorCode::Malformed, "observation: missing feature \"" +
                                              Specs[I].name() + "\"");
  return Status::ok();
}

Status JsonSerDes::decodeMessage(ByteSource &In, const SerDesLimits &Limits,
                                 std::vector<TensorSpec> &CurrentSpecs,
                                 TensorSpec &CurrentAdvice,
                                 CompilerMessage &Msg) {
  const bool HadHeader = haveHeader(CurrentSpecs, CurrentAdvice);
  LineKind Kind;
  if (Status S = readCompilerLine(
          In, Limits, CurrentSpecs, CurrentAdvice, Msg, Kind,
          [&](json::Reader &R) {
            if (!HadHeader)
              return Status(ErrorCode::Malformed,
                            "observation before any header");
            return decodeFeatureValues(R, Limits, CurrentSpecs, Msg);
          }))
    return S;
  switch (Kind) {
  case LineKind::Header:
  case LineKind::Context:
    return Status::ok();
  case LineKind::Outcome:
    return Status(ErrorCode::Malformed,
                  "unexpected {\"outcome\":N} line in a JSON session");
  case LineKind::Observation:
    break;
  }
  auto What = [&] { return "observation " + std::to_string(Ctl.Observation); };
  if (!HadHeader)
    return Status(ErrorCode::Malformed, What() + " before any header");
  if (!Ctl.HasFeatureValues) {
    if (!CurrentSpecs.empty())
      return Status(ErrorCode::Malformed,
                    What() + " has no \"features\" object");
    Msg.Features.clear();
  }
  Msg.Type = CompilerMessage::Kind::Observation;
  Msg.ObservationIndex = Ctl.Observation;
  return Status::ok();
}

Status JsonSerDes::encodeAdvice(const TensorSpec &Spec,
                                const TensorValue &Advice, WireMessage &Out) {
  if (Status S = checkAdvice(Spec, Advice))
    return S;
  return encodeMemberLine("advice", Out, [&](std::string &B) {
    return appendValue(B, Advice, isScalarShape(Spec), "advice");
  });
}

} // namespace mlbridge
