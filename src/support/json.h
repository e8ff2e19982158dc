//===- support/json.h - Strict JSON reader and writers -----*- C++ -*-===//
//
// Internal to the library. A small JSON reader in two layers:
//  * Reader: a cursor over one message. SerDes code uses it to decode
//    tensors straight into TensorValue buffers (no value tree on the hot
//    path) and to walk objects key by key.
//  * Value + parse(): a value tree for small, rare documents (tensor specs,
//    headers).
// Both are strict RFC 8259 (plus the NaN / Infinity / -Infinity tokens that
// Python's json module writes), validate UTF-8, bound nesting depth, never
// throw, and report errors as ErrorCode::Malformed with the byte offset and
// what was expected.
//
// The writers produce the exact bytes the protocol specifies: LLVM's string
// escaping and shortest round-trip numbers.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SUPPORT_JSON_H
#define MLBRIDGE_SUPPORT_JSON_H

#include "mlbridge/status.h"

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge::json {

/// Maximum nesting of arrays/objects accepted by default.
inline constexpr unsigned kDefaultMaxDepth = 64;

// ---- numbers -------------------------------------------------------------

/// A number token as lexed, before conversion.
struct NumberToken {
  enum class Form : uint8_t {
    Integer, ///< -?digits, no fraction, no exponent.
    Decimal, ///< Has a fraction and/or an exponent.
    NaN,
    Infinity,
    NegInfinity,
  };
  std::string_view Text; ///< The token's bytes.
  Form Kind = Form::Integer;
};

/// A converted number, as stored in a Value.
struct Number {
  bool IsInteger = false; ///< The token was an integer token.
  bool HasInt64 = false;  ///< IsInteger and the value fits int64_t (Int).
  bool HasUInt64 = false; ///< IsInteger, >= 0, and fits uint64_t (UInt).
  int64_t Int = 0;
  uint64_t UInt = 0;
  double Double = 0; ///< Nearest double (±inf / ±0 when out of range).
};

/// Converts a lexed token into a Number (never fails).
Number toNumber(const NumberToken &Tok);

/// Converts a decimal or integer token to the nearest float / double. On
/// overflow returns false (the value is out of the type's range); underflow
/// gives a correctly signed zero or subnormal.
bool tokenToFloat(std::string_view Text, float &Out);
bool tokenToDouble(std::string_view Text, double &Out);

// ---- value tree -----------------------------------------------------------

class Value {
public:
  enum class Kind : uint8_t { Null, Bool, Number, String, Array, Object };

  Kind kind() const { return K; }
  bool isNull() const { return K == Kind::Null; }
  bool isBool() const { return K == Kind::Bool; }
  bool isNumber() const { return K == Kind::Number; }
  bool isString() const { return K == Kind::String; }
  bool isArray() const { return K == Kind::Array; }
  bool isObject() const { return K == Kind::Object; }

  bool boolean() const { return B; }
  const json::Number &number() const { return Num; }
  const std::string &string() const { return Str; }
  /// Array elements, or object member values (parallel to keys()).
  const std::vector<Value> &items() const { return Items; }
  /// Object member names, in document order.
  const std::vector<std::string> &keys() const { return Keys; }
  /// The member called Key, or nullptr (objects only).
  const Value *find(std::string_view Key) const;

  /// Short text for messages: "null", "true", "integer 3", "number 2.5",
  /// "string", "array", "object".
  std::string describe() const;

private:
  friend class Reader;
  Kind K = Kind::Null;
  bool B = false;
  json::Number Num;
  std::string Str;
  std::vector<Value> Items;
  std::vector<std::string> Keys;
};

/// Name of a kind for messages ("null", "boolean", "number", ...).
const char *kindName(Value::Kind K);

/// Parses a complete document (surrounding whitespace allowed).
Status parse(std::string_view Text, Value &Out,
             unsigned MaxDepth = kDefaultMaxDepth);

// ---- cursor ----------------------------------------------------------------

/// A cursor over one JSON text. All methods skip leading whitespace. Errors
/// are Malformed with "JSON: at offset N: expected X, got Y".
class Reader {
public:
  explicit Reader(std::string_view Text, unsigned MaxDepth = kDefaultMaxDepth)
      : Begin(Text.data()), Cur(Text.data()), End(Text.data() + Text.size()),
        MaxDepth(MaxDepth) {}

  size_t offset() const { return size_t(Cur - Begin); }
  /// The next non-whitespace byte (0..255), or -1 at the end.
  int peek() {
    skipWhitespace();
    return Cur == End ? -1 : static_cast<unsigned char>(*Cur);
  }
  /// Consumes C if it is the next non-whitespace byte.
  bool consumeIf(char C) {
    if (peek() != static_cast<unsigned char>(C))
      return false;
    ++Cur;
    return true;
  }
  /// Consumes C or fails with "expected 'C' <Context>".
  Status expect(char C, std::string_view Context);

  /// Object iteration (the caller keeps First, so iterations nest):
  ///   bool First = true, Has;
  ///   beginObject(); while (nextMember(First, Has, Key) ok && Has) {value}
  /// After each member the caller reads or skips its value.
  Status beginObject() { return expect('{', "to start an object"); }
  Status nextMember(bool &First, bool &HasMember, std::string &Key);
  /// Array iteration, same pattern.
  Status beginArray() { return expect('[', "to start an array"); }
  Status nextElement(bool &First, bool &HasElement);

  /// A JSON string, unescaped into Out (valid UTF-8 guaranteed).
  Status readString(std::string &Out);
  /// Lexes a number token (including NaN / Infinity / -Infinity).
  Status readNumber(NumberToken &Tok);
  /// Consumes `true` or `false`.
  Status readBool(bool &Out);
  /// A whole value as a tree.
  Status readValue(Value &Out);
  /// Skips one value of any type (still fully validated).
  Status skipValue();
  /// Fails unless only whitespace remains.
  Status finish();

  /// Describes the value starting at the cursor without consuming it, for
  /// type errors: "string", "array", "object", "null", "true", "false",
  /// "integer token 12", "float token 2.5", "NaN", "Infinity", "-Infinity".
  /// *IsValue (if given) is false when no valid value starts here.
  std::string describeAhead(bool *IsValue = nullptr);
  /// Malformed error at the cursor: "expected <What>, got <next>".
  Status errorExpected(std::string_view What);

private:
  void skipWhitespace() {
    while (Cur != End &&
           (*Cur == ' ' || *Cur == '\n' || *Cur == '\r' || *Cur == '\t'))
      ++Cur;
  }
  Status errorAt(const char *Pos, std::string_view Message) const;
  std::string describeByte(const char *Pos) const;
  Status readValueImpl(Value &Out, unsigned Depth);
  Status skipValueImpl(unsigned Depth);
  Status matchLiteral(std::string_view Literal);
  Status readStringImpl(std::string *Out);

  const char *Begin;
  const char *Cur;
  const char *End;
  unsigned MaxDepth;
};

// ---- writers ---------------------------------------------------------------

/// Bytes always sufficient for one number written by the functions below.
inline constexpr size_t kMaxNumberChars = 32;

/// Appends S as a JSON string, quotes included, escaped exactly as LLVM's
/// llvm::json does: `"` and `\` get a backslash, \t \n \r their short
/// escapes, other bytes below 0x20 \u00xx (lower-case hex); all other bytes
/// (DEL, UTF-8) are copied. Callers ensure S is valid UTF-8.
void appendQuoted(std::string &Out, std::string_view S);

/// Shortest round-trip text of V, always with a '.' or an exponent
/// ("1.0", "0.1", "1e+20"); non-finite values are NaN, Infinity, -Infinity.
/// P must have kMaxNumberChars bytes of room; returns the new end.
char *writeDouble(char *P, double V);
char *writeFloat(char *P, float V);

/// Decimal text of an integer.
template <typename IntT> char *writeInteger(char *P, IntT V) {
  return std::to_chars(P, P + kMaxNumberChars, V).ptr;
}

void appendDouble(std::string &Out, double V);
void appendFloat(std::string &Out, float V);
template <typename IntT> void appendInteger(std::string &Out, IntT V) {
  char Buf[kMaxNumberChars];
  Out.append(Buf, size_t(writeInteger(Buf, V) - Buf));
}

} // namespace mlbridge::json

#endif // MLBRIDGE_SUPPORT_JSON_H
