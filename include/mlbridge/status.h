//===- mlbridge/status.h - Errors as values ---------------------*- C++ -*-===//
//
// Every fallible operation of the library returns a Status or an Expected<T>.
// Nothing throws across the public API, so the headers are usable in code
// built with -fno-exceptions -fno-rtti (LLVM, most compilers). Part of the
// bottom layer (src/support): every other layer may use it.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_STATUS_H
#define MLBRIDGE_STATUS_H

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace mlbridge {

/// What went wrong, coarse enough to branch on. The message says the rest.
enum class ErrorCode : int {
  Ok = 0,
  InvalidArgument = 1, ///< Caller error: unknown feature, wrong type, bad spec.
  TypeMismatch = 2,    ///< A value's dtype or shape differs from what is expected.
  Malformed = 3,       ///< Bytes from the peer do not parse.
  TooLarge = 4,        ///< A length from the wire or the caller exceeds a limit.
  Timeout = 5,         ///< A deadline passed before the operation completed.
  PeerClosed = 6,      ///< The peer closed its end or exited.
  NotFound = 7,        ///< A file, FIFO or model does not exist.
  IOError = 8,         ///< Any other OS-level failure (errno text in message).
  Unavailable = 9,     ///< The runner failed earlier and refuses further calls.
  Internal = 10,       ///< A bug in the library; please report it.
};

/// Human-readable name of an ErrorCode ("timeout", "peer-closed", ...).
const char *errorCodeName(ErrorCode Code);

/// The outcome of an operation: Ok, or an error code and a message.
/// (Not [[nodiscard]] as a class: feature setters remember their failure
/// and the next evaluation reports it, so ignoring a setter is safe.)
class Status {
public:
  Status() = default;
  Status(ErrorCode Code, std::string Message)
      : Code(Code), Message(std::move(Message)) {}

  static Status ok() { return Status(); }

  bool isOk() const { return Code == ErrorCode::Ok; }
  explicit operator bool() const { return !isOk(); } ///< true on error.
  ErrorCode code() const { return Code; }
  const std::string &message() const { return Message; }

  /// Prefix the message with more context: "while X: <old message>".
  Status &addContext(const std::string &Context) {
    if (!isOk())
      Message = Context + ": " + Message;
    return *this;
  }

  /// "timeout: reading advice: no reply within 1000 ms".
  std::string toString() const;

private:
  ErrorCode Code = ErrorCode::Ok;
  std::string Message;
};

/// Either a T or an error Status. Check with `if (!E)` before `*E`. (In a
/// file with `using namespace llvm;`, see mlbridge/tensor_spec.h.)
///
/// An Expected<U> converts to Expected<T> when U converts to T, so a
/// function choosing a runner at run time returns each runner's create()
/// as it is:
///   Expected<std::unique_ptr<ModelRunner>> R = PipeModelRunner::create(B);
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T Value) : Value(std::move(Value)) {}
  Expected(Status Error) : Error(std::move(Error)) {
    if (this->Error.isOk())
      this->Error = Status(ErrorCode::Internal, "Expected built from Ok");
  }
  template <typename U,
            typename = std::enable_if_t<!std::is_same_v<U, T> &&
                                        std::is_convertible_v<U &&, T>>>
  Expected(Expected<U> &&Other) {
    if (Other)
      Value.emplace(std::move(*Other));
    else
      Error = Other.takeStatus();
  }

  bool hasValue() const { return Value.has_value(); }
  explicit operator bool() const { return hasValue(); }

  T &operator*() { return *Value; }
  const T &operator*() const { return *Value; }
  T *operator->() { return &*Value; }
  const T *operator->() const { return &*Value; }

  /// The error; an Ok Status when a value is present.
  const Status &status() const { return Error; }
  Status takeStatus() { return std::move(Error); }

  /// The value, or Fallback when this holds an error.
  T valueOr(T Fallback) const {
    return Value ? *Value : std::move(Fallback);
  }

private:
  std::optional<T> Value;
  Status Error;
};

} // namespace mlbridge

#endif // MLBRIDGE_STATUS_H
