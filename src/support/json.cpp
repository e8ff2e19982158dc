//===- support/json.cpp - Strict JSON reader and writers ------------------===//

#include "support/json.h"
#include "mlbridge/json_escape.h"
#include "support/utf8.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

namespace mlbridge::json {

namespace {

bool isDigit(char C) { return C >= '0' && C <= '9'; }

std::string hexByte(unsigned char C) {
  static const char Hex[] = "0123456789abcdef";
  std::string S = "0x";
  S.push_back(Hex[C >> 4]);
  S.push_back(Hex[C & 15]);
  return S;
}

/// For a token whose conversion is out of range: true when its magnitude is
/// >= 1 (an overflow), false when below 1 (an underflow).
bool magnitudeAtLeastOne(std::string_view T) {
  size_t I = 0;
  if (I < T.size() && T[I] == '-')
    ++I;
  const size_t IntBegin = I;
  while (I < T.size() && isDigit(T[I]))
    ++I;
  const size_t IntEnd = I;
  int64_t Order = 0; // decimal exponent of the leading non-zero digit
  bool Found = false;
  for (size_t J = IntBegin; J < IntEnd; ++J)
    if (T[J] != '0') {
      Order = int64_t(IntEnd - J) - 1;
      Found = true;
      break;
    }
  if (I < T.size() && T[I] == '.') {
    ++I;
    int64_t Zeros = 0;
    while (I < T.size() && isDigit(T[I])) {
      if (!Found) {
        if (T[I] != '0') {
          Order = -(Zeros + 1);
          Found = true;
        } else {
          ++Zeros;
        }
      }
      ++I;
    }
  }
  if (!Found)
    return false; // zero never overflows
  int64_t Exp = 0;
  if (I < T.size() && (T[I] == 'e' || T[I] == 'E')) {
    ++I;
    bool Neg = false;
    if (I < T.size() && (T[I] == '+' || T[I] == '-'))
      Neg = T[I++] == '-';
    while (I < T.size() && isDigit(T[I])) {
      if (Exp < 1000000000)
        Exp = Exp * 10 + (T[I] - '0');
      ++I;
    }
    if (Neg)
      Exp = -Exp;
  }
  return Order + Exp >= 0;
}

} // namespace


// ---- numbers -------------------------------------------------------------

bool tokenToDouble(std::string_view Text, double &Out) {
  const auto R = std::from_chars(Text.data(), Text.data() + Text.size(), Out);
  if (R.ec == std::errc())
    return true;
  if (magnitudeAtLeastOne(Text))
    return false;
  Out = (!Text.empty() && Text[0] == '-') ? -0.0 : 0.0;
  return true;
}

bool tokenToFloat(std::string_view Text, float &Out) {
  // Parse as float directly: decimal -> double -> float could round twice.
  const auto R = std::from_chars(Text.data(), Text.data() + Text.size(), Out);
  if (R.ec == std::errc())
    return true;
  // libstdc++ reports out_of_range for values that are representable after
  // rounding (just above FLT_MAX, or in the subnormal range); settle those
  // through double, where the value is in range and the cast well-defined.
  double D;
  if (!tokenToDouble(Text, D))
    return false;
  const double Mag = std::fabs(D);
  // Midpoint between FLT_MAX and 2^128: anything at or above rounds to inf.
  const double Overflow = 3.4028235677973366e38;
  if (Mag >= Overflow)
    return false;
  if (Mag > double(FLT_MAX))
    Out = D < 0 ? -FLT_MAX : FLT_MAX;
  else
    Out = static_cast<float>(D);
  return true;
}

Number toNumber(const NumberToken &Tok) {
  Number N;
  const char *B = Tok.Text.data();
  const char *E = B + Tok.Text.size();
  switch (Tok.Kind) {
  case NumberToken::Form::NaN:
    N.Double = std::numeric_limits<double>::quiet_NaN();
    return N;
  case NumberToken::Form::Infinity:
    N.Double = std::numeric_limits<double>::infinity();
    return N;
  case NumberToken::Form::NegInfinity:
    N.Double = -std::numeric_limits<double>::infinity();
    return N;
  case NumberToken::Form::Integer: {
    N.IsInteger = true;
    if (std::from_chars(B, E, N.Int).ec == std::errc()) {
      N.HasInt64 = true;
      N.Double = double(N.Int);
      if (N.Int >= 0) {
        N.HasUInt64 = true;
        N.UInt = uint64_t(N.Int);
      }
      return N;
    }
    if (*B != '-' && std::from_chars(B, E, N.UInt).ec == std::errc()) {
      N.HasUInt64 = true;
      N.Double = double(N.UInt);
      return N;
    }
    break; // beyond 64 bits: keep the nearest double only
  }
  case NumberToken::Form::Decimal:
    break;
  }
  if (!tokenToDouble(Tok.Text, N.Double))
    N.Double = *B == '-' ? -std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::infinity();
  return N;
}

// ---- value tree -----------------------------------------------------------

const char *kindName(Value::Kind K) {
  switch (K) {
  case Value::Kind::Null:
    return "null";
  case Value::Kind::Bool:
    return "boolean";
  case Value::Kind::Number:
    return "number";
  case Value::Kind::String:
    return "string";
  case Value::Kind::Array:
    return "array";
  case Value::Kind::Object:
    return "object";
  }
  return "?";
}

const Value *Value::find(std::string_view Key) const {
  for (size_t I = 0; I < Keys.size(); ++I)
    if (Keys[I] == Key)
      return &Items[I];
  return nullptr;
}

std::string Value::describe() const {
  switch (K) {
  case Kind::Bool:
    return B ? "true" : "false";
  case Kind::Number: {
    if (Num.HasInt64)
      return "integer " + std::to_string(Num.Int);
    if (Num.HasUInt64)
      return "integer " + std::to_string(Num.UInt);
    std::string S = Num.IsInteger ? "integer " : "number ";
    appendDouble(S, Num.Double);
    return S;
  }
  default:
    return kindName(K);
  }
}

Status parse(std::string_view Text, Value &Out, unsigned MaxDepth) {
  Reader R(Text, MaxDepth);
  if (Status S = R.readValue(Out))
    return S;
  return R.finish();
}

// ---- cursor ----------------------------------------------------------------

Status Reader::errorAt(const char *Pos, std::string_view Message) const {
  std::string M = "JSON: at offset ";
  M += std::to_string(Pos - Begin);
  M += ": ";
  M += Message;
  return Status(ErrorCode::Malformed, std::move(M));
}

std::string Reader::describeByte(const char *Pos) const {
  if (Pos == End)
    return "end of input";
  const auto C = static_cast<unsigned char>(*Pos);
  if (C >= 0x20 && C < 0x7F)
    return std::string("'") + char(C) + "'";
  return "byte " + hexByte(C);
}

Status Reader::errorExpected(std::string_view What) {
  skipWhitespace();
  std::string M = "expected ";
  M += What;
  M += ", got ";
  M += describeByte(Cur);
  return errorAt(Cur, M);
}

Status Reader::expect(char C, std::string_view Context) {
  if (consumeIf(C))
    return Status::ok();
  std::string What = "'";
  What += C;
  What += "' ";
  What += Context;
  return errorExpected(What);
}

Status Reader::nextMember(bool &First, bool &HasMember, std::string &Key) {
  const int C = peek();
  if (C == '}') {
    ++Cur;
    HasMember = false;
    return Status::ok();
  }
  if (!First) {
    if (C != ',')
      return errorExpected("',' or '}' after an object member");
    ++Cur;
    if (peek() != '"')
      return errorExpected("a string key after ','");
  } else if (C != '"') {
    return errorExpected("a string key or '}'");
  }
  First = false;
  if (Status S = readString(Key))
    return S;
  if (Status S = expect(':', "after an object key"))
    return S;
  HasMember = true;
  return Status::ok();
}

Status Reader::nextElement(bool &First, bool &HasElement) {
  const int C = peek();
  if (C == ']') {
    ++Cur;
    HasElement = false;
    return Status::ok();
  }
  if (!First) {
    if (C != ',')
      return errorExpected("',' or ']' after an array element");
    ++Cur;
  }
  First = false;
  HasElement = true;
  return Status::ok();
}

Status Reader::readString(std::string &Out) { return readStringImpl(&Out); }

Status Reader::readStringImpl(std::string *Out) {
  skipWhitespace();
  if (Cur == End || *Cur != '"')
    return errorExpected("a string");
  const char *Start = Cur++;
  if (Out)
    Out->clear();
  for (;;) {
    // Copy the longest run of bytes that need no attention in one go.
    const char *Run = Cur;
    while (Cur != End) {
      const auto C = static_cast<unsigned char>(*Cur);
      if (C == '"' || C == '\\' || C < 0x20 || C >= 0x80)
        break;
      ++Cur;
    }
    if (Out)
      Out->append(Run, size_t(Cur - Run));
    if (Cur == End)
      return errorAt(Start, "unterminated string");
    const auto C = static_cast<unsigned char>(*Cur);
    if (C == '"') {
      ++Cur;
      return Status::ok();
    }
    if (C < 0x20)
      return errorAt(Cur, "control character " + hexByte(C) +
                              " in a string must be escaped");
    if (C >= 0x80) {
      const size_t N = support::utf8SequenceLength(Cur, End);
      if (N == 0)
        return errorAt(Cur, "invalid UTF-8 byte " + hexByte(C) +
                                " in a string");
      if (Out)
        Out->append(Cur, N);
      Cur += N;
      continue;
    }
    // A backslash escape.
    const char *Esc = Cur++;
    if (Cur == End)
      return errorAt(Start, "unterminated string");
    char Simple = 0;
    switch (*Cur) {
    case '"': Simple = '"'; break;
    case '\\': Simple = '\\'; break;
    case '/': Simple = '/'; break;
    case 'b': Simple = '\b'; break;
    case 'f': Simple = '\f'; break;
    case 'n': Simple = '\n'; break;
    case 'r': Simple = '\r'; break;
    case 't': Simple = '\t'; break;
    case 'u': break;
    default:
      return errorAt(Esc, "invalid escape '\\" +
                              std::string(1, *Cur) + "' in a string");
    }
    ++Cur;
    if (Simple) {
      if (Out)
        Out->push_back(Simple);
      continue;
    }
    auto Hex4 = [&](uint32_t &V) {
      if (End - Cur < 4)
        return false;
      V = 0;
      for (int I = 0; I < 4; ++I) {
        const char H = Cur[I];
        V <<= 4;
        if (H >= '0' && H <= '9')
          V |= uint32_t(H - '0');
        else if (H >= 'a' && H <= 'f')
          V |= uint32_t(H - 'a' + 10);
        else if (H >= 'A' && H <= 'F')
          V |= uint32_t(H - 'A' + 10);
        else
          return false;
      }
      Cur += 4;
      return true;
    };
    uint32_t CP;
    if (!Hex4(CP))
      return errorAt(Esc, "expected four hex digits after '\\u'");
    if (CP >= 0xDC00 && CP <= 0xDFFF)
      return errorAt(Esc, "unpaired low surrogate in '\\u' escape");
    if (CP >= 0xD800 && CP <= 0xDBFF) {
      // A high surrogate must be followed by an escaped low surrogate.
      uint32_t Lo;
      if (End - Cur < 2 || Cur[0] != '\\' || Cur[1] != 'u')
        return errorAt(Esc, "unpaired high surrogate in '\\u' escape");
      Cur += 2;
      if (!Hex4(Lo))
        return errorAt(Cur - 2, "expected four hex digits after '\\u'");
      if (Lo < 0xDC00 || Lo > 0xDFFF)
        return errorAt(Esc, "unpaired high surrogate in '\\u' escape");
      CP = 0x10000 + ((CP - 0xD800) << 10) + (Lo - 0xDC00);
    }
    if (Out)
      support::appendUtf8(*Out, CP);
  }
}

Status Reader::matchLiteral(std::string_view Literal) {
  if (size_t(End - Cur) >= Literal.size() &&
      std::memcmp(Cur, Literal.data(), Literal.size()) == 0) {
    Cur += Literal.size();
    return Status::ok();
  }
  return errorExpected("a value");
}

Status Reader::readBool(bool &Out) {
  const int C = peek();
  if (C == 't' && matchLiteral("true").isOk()) {
    Out = true;
    return Status::ok();
  }
  if (C == 'f' && matchLiteral("false").isOk()) {
    Out = false;
    return Status::ok();
  }
  return errorExpected("true or false");
}

Status Reader::readNumber(NumberToken &Tok) {
  skipWhitespace();
  const char *Start = Cur;
  auto Lit = [&](std::string_view L, NumberToken::Form F) {
    if (size_t(End - Cur) >= L.size() &&
        std::memcmp(Cur, L.data(), L.size()) == 0) {
      Cur += L.size();
      Tok.Text = std::string_view(Start, L.size());
      Tok.Kind = F;
      return true;
    }
    return false;
  };
  if (Cur != End && *Cur == 'N') {
    if (Lit("NaN", NumberToken::Form::NaN))
      return Status::ok();
    return errorExpected("a number");
  }
  if (Cur != End && *Cur == 'I') {
    if (Lit("Infinity", NumberToken::Form::Infinity))
      return Status::ok();
    return errorExpected("a number");
  }
  if (Cur != End && *Cur == '-') {
    if (Lit("-Infinity", NumberToken::Form::NegInfinity))
      return Status::ok();
    ++Cur;
  }
  if (Cur == End || !isDigit(*Cur))
    return errorExpected("a digit");
  if (*Cur == '0') {
    ++Cur;
    if (Cur != End && isDigit(*Cur))
      return errorAt(Cur, "leading zeros are not allowed in numbers");
  } else {
    while (Cur != End && isDigit(*Cur))
      ++Cur;
  }
  Tok.Kind = NumberToken::Form::Integer;
  if (Cur != End && *Cur == '.') {
    ++Cur;
    if (Cur == End || !isDigit(*Cur))
      return errorExpected("a digit after '.'");
    while (Cur != End && isDigit(*Cur))
      ++Cur;
    Tok.Kind = NumberToken::Form::Decimal;
  }
  if (Cur != End && (*Cur == 'e' || *Cur == 'E')) {
    ++Cur;
    if (Cur != End && (*Cur == '+' || *Cur == '-'))
      ++Cur;
    if (Cur == End || !isDigit(*Cur))
      return errorExpected("a digit in the exponent");
    while (Cur != End && isDigit(*Cur))
      ++Cur;
    Tok.Kind = NumberToken::Form::Decimal;
  }
  Tok.Text = std::string_view(Start, size_t(Cur - Start));
  return Status::ok();
}

Status Reader::readValue(Value &Out) { return readValueImpl(Out, 0); }

Status Reader::readValueImpl(Value &Out, unsigned Depth) {
  Out.Str.clear();
  Out.Items.clear();
  Out.Keys.clear();
  const int C = peek();
  switch (C) {
  case '{':
  case '[': {
    if (Depth >= MaxDepth)
      return errorAt(Cur, "nesting deeper than " + std::to_string(MaxDepth) +
                              " levels");
    ++Cur;
    bool First = true, Has = false;
    if (C == '[') {
      Out.K = Value::Kind::Array;
      for (;;) {
        if (Status S = nextElement(First, Has))
          return S;
        if (!Has)
          return Status::ok();
        Out.Items.emplace_back();
        if (Status S = readValueImpl(Out.Items.back(), Depth + 1))
          return S;
      }
    }
    Out.K = Value::Kind::Object;
    const char *ObjStart = Cur - 1;
    std::string Key;
    for (;;) {
      if (Status S = nextMember(First, Has, Key))
        return S;
      if (!Has)
        break;
      Out.Keys.push_back(Key);
      Out.Items.emplace_back();
      if (Status S = readValueImpl(Out.Items.back(), Depth + 1))
        return S;
    }
    // Duplicate keys make "which one wins" ambiguous: reject them. Sorting
    // keeps adversarial objects with many keys O(n log n).
    if (Out.Keys.size() > 1) {
      std::vector<std::string_view> Sorted(Out.Keys.begin(), Out.Keys.end());
      std::sort(Sorted.begin(), Sorted.end());
      for (size_t I = 1; I < Sorted.size(); ++I)
        if (Sorted[I] == Sorted[I - 1])
          return errorAt(ObjStart, "duplicate key \"" +
                                       std::string(Sorted[I]) +
                                       "\" in object");
    }
    return Status::ok();
  }
  case '"':
    Out.K = Value::Kind::String;
    return readStringImpl(&Out.Str);
  case 't':
  case 'f':
    Out.K = Value::Kind::Bool;
    return readBool(Out.B);
  case 'n':
    Out.K = Value::Kind::Null;
    return matchLiteral("null");
  default: {
    if (C == '-' || C == 'N' || C == 'I' || (C >= '0' && C <= '9')) {
      NumberToken Tok;
      if (Status S = readNumber(Tok))
        return S;
      Out.K = Value::Kind::Number;
      Out.Num = toNumber(Tok);
      return Status::ok();
    }
    return errorExpected("a value");
  }
  }
}

Status Reader::skipValue() { return skipValueImpl(0); }

Status Reader::skipValueImpl(unsigned Depth) {
  const int C = peek();
  if (C == '{' || C == '[') {
    if (Depth >= MaxDepth)
      return errorAt(Cur, "nesting deeper than " + std::to_string(MaxDepth) +
                              " levels");
    ++Cur;
    bool First = true, Has = false;
    std::string Key;
    for (;;) {
      Status S = C == '[' ? nextElement(First, Has)
                          : nextMember(First, Has, Key);
      if (S)
        return S;
      if (!Has)
        return Status::ok();
      if (Status S2 = skipValueImpl(Depth + 1))
        return S2;
    }
  }
  if (C == '"')
    return readStringImpl(nullptr);
  if (C == 't' || C == 'f') {
    bool B;
    return readBool(B);
  }
  if (C == 'n')
    return matchLiteral("null");
  if (C == '-' || C == 'N' || C == 'I' || (C >= '0' && C <= '9')) {
    NumberToken Tok;
    return readNumber(Tok);
  }
  return errorExpected("a value");
}

Status Reader::finish() {
  skipWhitespace();
  if (Cur != End)
    return errorExpected("end of input");
  return Status::ok();
}

std::string Reader::describeAhead(bool *IsValue) {
  const int C = peek();
  const char *Saved = Cur;
  std::string D;
  if (IsValue)
    *IsValue = true;
  switch (C) {
  case -1:
    if (IsValue)
      *IsValue = false;
    return "end of input";
  case '"':
    return "string";
  case '[':
    return "array";
  case '{':
    return "object";
  case 't':
  case 'f':
  case 'n': {
    const std::string_view L = C == 't' ? "true" : C == 'f' ? "false" : "null";
    if (matchLiteral(L).isOk())
      D = std::string(L);
    break;
  }
  default: {
    NumberToken Tok;
    if ((C == '-' || C == 'N' || C == 'I' || (C >= '0' && C <= '9')) &&
        readNumber(Tok).isOk()) {
      std::string_view Text = Tok.Text;
      const bool Cut = Text.size() > 40;
      if (Cut)
        Text = Text.substr(0, 40);
      switch (Tok.Kind) {
      case NumberToken::Form::Integer:
        D = "integer token ";
        break;
      case NumberToken::Form::Decimal:
        D = "float token ";
        break;
      default:
        break;
      }
      D += Text;
      if (Cut)
        D += "...";
    }
    break;
  }
  }
  Cur = Saved;
  if (D.empty()) {
    if (IsValue)
      *IsValue = false;
    D = "invalid token at " + describeByte(Cur);
  }
  return D;
}

// ---- writers ---------------------------------------------------------------

} // namespace mlbridge::json

namespace mlbridge {

void appendJsonEscaped(std::string &Out, std::string_view S) {
  static const char Hex[] = "0123456789abcdef";
  const char *P = S.data();
  const char *End = P + S.size();
  while (P != End) {
    const char *Run = P;
    while (P != End) {
      const auto C = static_cast<unsigned char>(*P);
      if (C < 0x20 || C == '"' || C == '\\')
        break;
      ++P;
    }
    Out.append(Run, size_t(P - Run));
    if (P == End)
      break;
    const auto C = static_cast<unsigned char>(*P++);
    Out.push_back('\\');
    switch (C) {
    case '"':
    case '\\':
      Out.push_back(char(C));
      break;
    case '\t':
      Out.push_back('t');
      break;
    case '\n':
      Out.push_back('n');
      break;
    case '\r':
      Out.push_back('r');
      break;
    default: {
      const char U[5] = {'u', '0', '0', Hex[C >> 4], Hex[C & 15]};
      Out.append(U, 5);
      break;
    }
    }
  }
}

std::string jsonEscape(std::string_view S) {
  std::string Out;
  Out.reserve(S.size());
  appendJsonEscaped(Out, S);
  return Out;
}

} // namespace mlbridge

namespace mlbridge::json {

void appendQuoted(std::string &Out, std::string_view S) {
  Out.push_back('"');
  appendJsonEscaped(Out, S);
  Out.push_back('"');
}

namespace {
template <typename F> char *writeFloating(char *P, F V) {
  if (std::isnan(V)) {
    std::memcpy(P, "NaN", 3);
    return P + 3;
  }
  if (std::isinf(V)) {
    if (V < 0) {
      std::memcpy(P, "-Infinity", 9);
      return P + 9;
    }
    std::memcpy(P, "Infinity", 8);
    return P + 8;
  }
  char *E = std::to_chars(P, P + kMaxNumberChars, V).ptr;
  // Shortest form may look like an integer ("1", "-0"); the protocol wants
  // float tokens to stay float tokens.
  for (char *Q = P; Q != E; ++Q)
    if (*Q == '.' || *Q == 'e')
      return E;
  E[0] = '.';
  E[1] = '0';
  return E + 2;
}
} // namespace

char *writeDouble(char *P, double V) { return writeFloating(P, V); }
char *writeFloat(char *P, float V) { return writeFloating(P, V); }

void appendDouble(std::string &Out, double V) {
  char Buf[kMaxNumberChars];
  Out.append(Buf, size_t(writeDouble(Buf, V) - Buf));
}

void appendFloat(std::string &Out, float V) {
  char Buf[kMaxNumberChars];
  Out.append(Buf, size_t(writeFloat(Buf, V) - Buf));
}

} // namespace mlbridge::json
