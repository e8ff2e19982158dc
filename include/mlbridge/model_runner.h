//===- mlbridge/model_runner.h - Features in, advice out --------*- C++ -*-===//
//
// ModelRunner is the one interface a compiler pass talks to, whatever model
// answers (a Python process over pipes, an in-process model, ...):
//
//   auto Runner = PipeModelRunner::create("/tmp/ch", Specs, AdviceSpec);
//   Runner->setFeature("callee_users", 3);           // or getTensor<T>(i)
//   int64_t Decision = Runner->evaluateOr<int64_t>(0); // fallback on error
//
// (A program that reads its runner from options or the environment makes
// it with makeRunner, mlbridge/runner_settings.h.)
//
// Features are declared up front (LLVM style, each with a buffer allocated
// once and written in place through getTensor<T>(Index)) or on first use
// (the paper's style: setFeature / populateFeatures with a new name appends
// a feature whose dtype and shape come from the value).
//
// Contract:
//  * Nothing throws; every fallible call returns Status or Expected<T>.
//  * A failed feature setter also makes the next evaluation fail with the
//    same error, so `setFeature(...); evaluateOr<T>(Fallback)` is safe
//    without checking each setter.
//  * evaluate<T>() checks the advice dtype and element count against T.
//  * After an I/O failure (dead or slow peer, malformed reply) the runner is
//    unavailable: later calls fail at once with ErrorCode::Unavailable
//    instead of waiting on a broken peer again.
//  * evaluateOr<T>(Fallback) reports its first fallback as a warning with
//    the cause, and later ones only as notes. A caller error (an unknown
//    feature, a value of the wrong type, T not fitting the advice spec) is
//    reported as such ("caller error, using fallback: ..."), never as the
//    model being unavailable: the model was not asked.
//  * A runner is used by one thread at a time (runners that allow more say
//    so in their header). A second thread entering evaluate or
//    switchContext while another is inside gets ErrorCode::InvalidArgument
//    ("in use by another thread"): always for inter-process runners (one
//    atomic flag against a round trip of microseconds), in debug builds
//    (no NDEBUG) for all.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_MODEL_RUNNER_H
#define MLBRIDGE_MODEL_RUNNER_H

#include "mlbridge/diagnostics.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"
#include "mlbridge/tensor_value.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace mlbridge {

/// Options every runner understands.
struct RunnerOptions {
  /// Receives warnings and errors; empty means silent.
  DiagnosticSink Diagnostics;
  /// Upper bound for any one feature or advice tensor, in bytes.
  size_t MaxTensorBytes = size_t(256) << 20;
};

namespace detail {
template <typename T> struct IsStdVector : std::false_type {};
template <typename E, typename A>
struct IsStdVector<std::vector<E, A>> : std::true_type {};
} // namespace detail

/// How a discrete action is read from a model's output (evaluateAction,
/// rl::Agent, the C API's mlb_evaluate_action).
enum class ActionRule {
  /// Value when the output is a single integer (or bool), Argmax otherwise.
  /// Lets one pass serve both a Python model that answers with the action
  /// and an in-process model that outputs one score per action.
  Auto,
  /// Index of the largest element over the whole output, the first on
  /// ties; a NaN anywhere is an error (a broken model, not a decision).
  Argmax,
  /// The output is one integer (or bool) element: the action itself.
  Value,
};

/// Picks an action from Output by Rule. Legal, when not empty, is the
/// legality mask: one entry per action, true where the action is allowed.
/// Argmax then takes the largest legal score (the first on ties) and the
/// mask must have one entry per score; a Value must be a legal action.
/// Errors: a caller error (InvalidArgument: a mask of the wrong length, or
/// with no legal action), or the output's fault (TypeMismatch: empty,
/// strings, not one integer for Value; Malformed: a NaN score, a value that
/// is not a legal action).
Expected<int64_t> decodeAction(const TensorValue &Output, ActionRule Rule,
                               const std::vector<bool> &Legal = {});

/// The advice evaluateAction (and rl::Agent) declare when the runner has
/// none: float "scores" [-1] for Argmax, else int64 "action" [1].
TensorSpec defaultActionSpec(ActionRule Rule);

class ModelRunner {
public:
  virtual ~ModelRunner();
  ModelRunner(const ModelRunner &) = delete;
  ModelRunner &operator=(const ModelRunner &) = delete;

  // ---- features -------------------------------------------------------

  size_t featureCount() const { return Features.size(); }
  /// Spec of feature I with its current concrete shape.
  const TensorSpec &featureSpec(size_t I) const { return Features[I].spec(); }
  /// Index of the feature called Name, if declared.
  std::optional<size_t> featureIndex(std::string_view Name) const;
  /// Feature I's current value (spec and bytes), e.g. for a TrainingLogWriter.
  const TensorValue &feature(size_t I) const { return Features[I]; }

  /// LLVM-style in-place access: the buffer of feature I, typed. nullptr if
  /// I is out of range or T is not the feature's dtype.
  template <typename T> T *getTensor(size_t I) {
    return I < Features.size() ? Features[I].template dataAs<T>() : nullptr;
  }

  /// Declares another feature (zero-filled). Error if the name is taken or
  /// the spec is invalid. Dynamic dims get length 0 until set.
  Expected<size_t> addFeature(TensorSpec Spec);

  /// Changes feature I's shape (for variable-length features written in
  /// place); the next evaluation announces the new shape to the model.
  Status reshapeFeature(size_t I, std::vector<int64_t> Shape);

  /// Sets a feature by name. Value may be an arithmetic scalar or bool, a
  /// std::vector of those, or a string (std::string, std::string_view,
  /// const char*; must be UTF-8). An unknown name declares a new feature
  /// when the runner was created without feature specs ("dynamic" runners)
  /// and is an error otherwise. The dtype must match the feature's; a
  /// vector's length must match unless the feature is variable-length
  /// (declared with a -1 dimension, or dynamic).
  template <typename T> Status setFeature(std::string_view Name, const T &Value) {
    return noteSetResult(setFeatureImpl(Name, Value));
  }
  Status setFeature(std::string_view Name, const char *Value) {
    return setFeatureString(Name, Value ? std::string_view(Value) : "");
  }

  /// The paper's form: populateFeatures(std::make_pair("a", 1),
  /// std::make_pair("b", std::vector<float>{...})). Stops at the first
  /// error and returns it.
  template <typename... Pairs> Status populateFeatures(Pairs &&...Ps) {
    Status S;
    (void)((S = setFeature(std::string_view(Ps.first), Ps.second), S.isOk()) &&
           ...);
    return S;
  }

  /// Untyped setter used by the C API: copies Bytes (dtype Type, shape Shape).
  Status setFeatureBytes(std::string_view Name, DType Type,
                         std::vector<int64_t> Shape, const void *Bytes,
                         size_t ByteCount);

  // ---- contexts -------------------------------------------------------

  /// Starts a new context (e.g. the function being compiled); observation
  /// indices restart at 0 per context.
  Status switchContext(std::string_view Name);

  // ---- advice ---------------------------------------------------------

  /// Declares the advice spec. Without it, each evaluate<T>() derives one
  /// named "advice" from T: shape [1] for scalars, [-1] for vectors and
  /// strings (a change of T announces the new spec to the model).
  Status setAdviceSpec(TensorSpec Spec);
  const std::optional<TensorSpec> &adviceSpec() const { return AdviceSpec; }

  /// Sends the current features and returns the model's advice as T: an
  /// arithmetic scalar, bool, std::vector of those, or std::string. Errors:
  /// TypeMismatch if T does not fit the advice spec (checked before
  /// anything is sent) or the reply's element count; I/O and protocol
  /// errors from the transport.

  template <typename T> Expected<T> evaluate() {
    bool ByCaller = false;
    return evaluateImpl<T>(ByCaller);
  }

  /// evaluate<T>(), or Fallback on any error. The usual choice inside a
  /// compiler. The first fallback caused by the model (dead peer, timeout,
  /// bad reply) is a warning "model unavailable, using fallback: <cause>";
  /// the first caused by the caller (unknown feature, wrong type) an error
  /// "caller error, using fallback: <cause>"; every later fallback only a
  /// note: one runner warns once, however many decisions fall back.
  template <typename T> T evaluateOr(T Fallback) {
    bool ByCaller = false;
    Expected<T> R = evaluateImpl<T>(ByCaller);
    if (R)
      return std::move(*R);
    reportFallback(R.status(), ByCaller);
    return Fallback;
  }

  /// One decision among discrete actions: evaluates and reads the action
  /// from the advice by Rule, within the legality mask Legal (decodeAction;
  /// empty: every action is legal). A runner without an advice spec is
  /// given defaultActionSpec(Rule) first. The rule is the one rl::Agent
  /// and the C API's mlb_evaluate_action use.
  Expected<int64_t> evaluateAction(const std::vector<bool> &Legal = {},
                                   ActionRule Rule = ActionRule::Auto);

  /// Untyped evaluation (C API): on success, advice() holds the reply.
  Status evaluateRaw() {
    bool ByCaller = false;
    return evaluateRawImpl(ByCaller);
  }
  const TensorValue &advice() const { return Advice; }

  /// True once an I/O or protocol error made the runner unavailable.
  bool isUnavailable() const { return !Broken.isOk(); }

  /// Writes a message to the diagnostics sink (if any).
  void report(Severity S, std::string_view Message) const;

protected:
  /// Features == empty and Dynamic == true: features are declared on first
  /// setFeature. Invalid specs make every later call fail with the reason.
  ModelRunner(std::vector<TensorSpec> FeatureSpecs,
              std::optional<TensorSpec> AdviceSpec, RunnerOptions Options);

  /// The one way to make a runner is its static create(), returning
  /// Expected<std::unique_ptr<X>>. create() builds the runner with the
  /// constructor that takes a CreateTag (private in every runner, so that
  /// no runner exists whose arguments were invalid) and ends with
  /// created(): the runner, or why its arguments were invalid.
  struct CreateTag {
    explicit CreateTag() = default;
  };
  template <typename Runner>
  static Expected<std::unique_ptr<Runner>>
  created(std::unique_ptr<Runner> R) {
    if (!R->constructionStatus().isOk())
      return R->constructionStatus();
    return R;
  }

  /// Implementations: exchange the current features for advice. Spec is
  /// the advice spec; Out must be filled (reshaped for dynamic specs).
  /// FeaturesChanged is true when the feature set or a shape changed since
  /// the previous call (the first call included).
  virtual Status doEvaluate(const std::vector<const TensorValue *> &Features,
                            bool FeaturesChanged, const TensorSpec &Spec,
                            TensorValue &Out) = 0;
  /// Implementations that forward contexts to the model override this.
  virtual Status doSwitchContext(std::string_view Name);

  /// A runner whose model reads feature I from a buffer of its own hands
  /// it over here (LLVM's MLModelRunner pattern): from then on getTensor,
  /// setFeature and the values passed to doEvaluate use Buffer itself, so
  /// features are written in place and never copied. Buffer must hold
  /// featureSpec(I).byteSize() bytes and outlive the runner's use of it;
  /// the feature must have a fixed shape. Its current value is copied in.
  Status useFeatureBuffer(size_t I, void *Buffer);

  /// Marks the runner unavailable with Reason (returned by later calls).
  void markUnavailable(const Status &Reason);
  /// Ok, or why the constructor's arguments were invalid.
  const Status &constructionStatus() const { return Constructed; }
  /// The current features for a header, or an error if a variable-length
  /// feature has no value yet or no advice spec is known. Out is reused.
  Status announcedState(std::vector<const TensorValue *> &Out,
                        const TensorSpec *&Spec);
  /// Called by implementations that sent a header outside doEvaluate, so
  /// the next doEvaluate does not report the features as changed.
  void markFeaturesAnnounced() { FeaturesChanged = false; }
  /// For subclasses with arguments of their own to validate.
  void setConstructionError(Status S) {
    if (Constructed.isOk())
      Constructed = std::move(S);
  }
  const RunnerOptions &options() const { return Options; }
  /// Makes evaluate and switchContext detect a second thread inside them
  /// in release builds too (debug builds always do).
  void detectConcurrentUse() { CheckConcurrentUse = true; }

private:
  class UseGuard;
  template <typename T> Expected<T> evaluateImpl(bool &ByCaller);
  /// evaluateRaw; ByCaller tells a caller error from a model failure.
  Status evaluateRawImpl(bool &ByCaller);
  /// evaluateOr's report of a fallback (once a warning, then notes).
  void reportFallback(const Status &Why, bool ByCaller);
  template <typename T> Status setFeatureImpl(std::string_view Name, const T &V);
  Status setFeatureString(std::string_view Name, std::string_view Value);
  /// Remembers a setter failure for the next evaluation; returns S.
  Status noteSetResult(Status S);
  Status setBytesImpl(std::string_view Name, DType Type,
                      std::vector<int64_t> Shape, const void *Bytes,
                      size_t ByteCount);
  Status reshapeImpl(size_t I, std::vector<int64_t> Shape);
  /// Checks T against the advice spec, deriving one if none is declared.
  Status prepareAdvice(DType Type, bool IsVector);
  Status checkUsable() const;
  bool isVariableLength(size_t I) const;
  Status fitShape(size_t I, size_t ElementCount,
                  const std::vector<int64_t> &Given,
                  std::vector<int64_t> &Shape) const;

  std::vector<TensorValue> Features;
  /// As declared; a -1 dim (or a string, or a feature declared by
  /// setFeature) means the length may change between evaluations.
  std::vector<TensorSpec> DeclaredSpecs;
  std::vector<const TensorValue *> FeatureViews;
  bool DynamicFeatures = false;
  bool FeaturesChanged = true;
  std::optional<TensorSpec> AdviceSpec;
  bool AdviceDerived = false; // AdviceSpec came from evaluate<T>(), not set
  TensorValue Advice;
  RunnerOptions Options;
  Status Broken;      // set by markUnavailable
  Status Constructed; // set if construction arguments were invalid
  Status FailedSet;   // first setter failure since the last evaluation
#ifdef NDEBUG
  bool CheckConcurrentUse = false;
#else
  bool CheckConcurrentUse = true;
#endif
  std::atomic<bool> InUse{false}; // a thread is in evaluate/switchContext
  bool WarnedModelFallback = false;  // evaluateOr warned of the model
  bool WarnedCallerFallback = false; // evaluateOr reported a caller error
};

// ---- template implementation -------------------------------------------

template <typename T>
Status ModelRunner::setFeatureImpl(std::string_view Name, const T &V) {
  using U = std::remove_cv_t<std::remove_reference_t<T>>;
  if constexpr (std::is_same_v<U, std::string> ||
                std::is_same_v<U, std::string_view>) {
    return setFeatureString(Name, std::string_view(V));
  } else if constexpr (std::is_same_v<std::decay_t<U>, char *> ||
                       std::is_same_v<std::decay_t<U>, const char *>) {
    return setFeatureString(Name, V ? std::string_view(V) : "");
  } else if constexpr (detail::IsStdVector<U>::value) {
    using E = typename U::value_type;
    static_assert(IsElementTypeV<E>,
                  "setFeature: vector elements must be arithmetic or bool");
    if constexpr (std::is_same_v<E, bool>) {
      // std::vector<bool> is packed; widen to one byte per element.
      std::vector<unsigned char> Bytes(V.begin(), V.end());
      return setFeatureBytes(Name, DType::Bool,
                             {static_cast<int64_t>(V.size())}, Bytes.data(),
                             Bytes.size());
    } else {
      return setFeatureBytes(Name, DTypeOf<E>::value,
                             {static_cast<int64_t>(V.size())}, V.data(),
                             V.size() * sizeof(E));
    }
  } else {
    static_assert(IsElementTypeV<U>,
                  "setFeature: value must be arithmetic, bool, a std::vector "
                  "of those, or a string");
    if constexpr (std::is_same_v<U, bool>) {
      unsigned char B = V ? 1 : 0;
      return setFeatureBytes(Name, DType::Bool, {1}, &B, 1);
    } else {
      return setFeatureBytes(Name, DTypeOf<U>::value, {1}, &V, sizeof(U));
    }
  }
}

template <typename T> Expected<T> ModelRunner::evaluateImpl(bool &ByCaller) {
  using U = std::remove_cv_t<T>;
  Status S;
  if constexpr (std::is_same_v<U, std::string>) {
    S = prepareAdvice(DType::String, true);
  } else if constexpr (detail::IsStdVector<U>::value) {
    using E = typename U::value_type;
    static_assert(IsElementTypeV<E>,
                  "evaluate: vector elements must be arithmetic or bool");
    S = prepareAdvice(DTypeOf<E>::value, true);
  } else {
    static_assert(IsElementTypeV<U>,
                  "evaluate<T>: T must be arithmetic, bool, std::string or "
                  "a std::vector of arithmetic/bool");
    S = prepareAdvice(DTypeOf<U>::value, false);
  }
  if (!S.isOk()) {
    // T does not fit the declared advice, or the runner cannot be used.
    ByCaller = S.code() != ErrorCode::Unavailable;
    return S;
  }
  S = evaluateRawImpl(ByCaller);
  if (!S.isOk())
    return S;

  if constexpr (std::is_same_v<U, std::string>) {
    return std::string(Advice.asString());
  } else if constexpr (detail::IsStdVector<U>::value) {
    using E = typename U::value_type;
    const size_t N = Advice.elementCount();
    if constexpr (std::is_same_v<E, bool>) {
      const auto *P = static_cast<const unsigned char *>(Advice.data());
      return U(P, P + N);
    } else {
      const E *P = Advice.template dataAs<E>();
      return U(P, P + N);
    }
  } else {
    if (Advice.elementCount() != 1)
      return Status(ErrorCode::TypeMismatch,
                    "evaluate: expected one advice element, got " +
                        std::to_string(Advice.elementCount()));
    if constexpr (std::is_same_v<U, bool>) {
      return *static_cast<const unsigned char *>(Advice.data()) != 0;
    } else {
      return *Advice.template dataAs<U>();
    }
  }
}

} // namespace mlbridge

#endif // MLBRIDGE_MODEL_RUNNER_H
