#include "mlbridge/model_runner.h"

#include "support/shape_text.h"
#include "support/utf8.h"

#include <cstring>

namespace mlbridge {

using support::shapeText;

ModelRunner::ModelRunner(std::vector<TensorSpec> FeatureSpecs,
                         std::optional<TensorSpec> Advice,
                         RunnerOptions Opts)
    : DynamicFeatures(FeatureSpecs.empty()), Options(std::move(Opts)) {
  Features.reserve(FeatureSpecs.size());
  for (TensorSpec &Spec : FeatureSpecs) {
    Expected<size_t> R = addFeature(std::move(Spec));
    if (!R) {
      Constructed = R.takeStatus();
      Constructed.addContext("invalid feature spec");
      return;
    }
  }
  if (Advice) {
    Status S = setAdviceSpec(std::move(*Advice));
    if (!S.isOk()) {
      Constructed = std::move(S);
      return;
    }
  }
}

ModelRunner::~ModelRunner() = default;

std::optional<size_t> ModelRunner::featureIndex(std::string_view Name) const {
  for (size_t I = 0; I < Features.size(); ++I)
    if (Features[I].spec().name() == Name)
      return I;
  return std::nullopt;
}

Expected<size_t> ModelRunner::addFeature(TensorSpec Spec) {
  if (Status S = Spec.validate(Options.MaxTensorBytes); !S.isOk())
    return S;
  if (featureIndex(Spec.name()))
    return Status(ErrorCode::InvalidArgument,
                  "feature '" + Spec.name() + "' is declared twice");
  DeclaredSpecs.push_back(Spec);
  Features.emplace_back(std::move(Spec));
  FeaturesChanged = true;
  return Features.size() - 1;
}

bool ModelRunner::isVariableLength(size_t I) const {
  const TensorSpec &D = DeclaredSpecs[I];
  return D.isDynamic() || D.type() == DType::String;
}

// Works out the concrete shape feature I takes for ElementCount elements,
// given the shape of the value (Given, [n] for vectors and scalars).
Status ModelRunner::fitShape(size_t I, size_t ElementCount,
                             const std::vector<int64_t> &Given,
                             std::vector<int64_t> &Shape) const {
  const TensorSpec &D = DeclaredSpecs[I];
  if (!isVariableLength(I)) {
    if (ElementCount != D.elementCount())
      return Status(ErrorCode::TypeMismatch,
                    "feature '" + D.name() + "' has shape " +
                        shapeText(D.shape()) + " (" +
                        std::to_string(D.elementCount()) +
                        " elements), got " + std::to_string(ElementCount));
    Shape = D.shape();
    return Status::ok();
  }
  if (DynamicFeatures || D.shape().size() == 1) {
    Shape = Given; // a vector or string of any length
    return Status::ok();
  }
  // A declared shape like [-1, 4]: resolve the -1 from the element count.
  size_t Fixed = 1;
  int DynamicAt = -1;
  for (size_t K = 0; K < D.shape().size(); ++K) {
    if (D.shape()[K] == kDynamicDim) {
      if (DynamicAt >= 0)
        return Status(ErrorCode::InvalidArgument,
                      "feature '" + D.name() +
                          "' has more than one variable dimension; use "
                          "reshapeFeature() to give its shape");
      DynamicAt = static_cast<int>(K);
    } else {
      Fixed *= static_cast<size_t>(D.shape()[K]);
    }
  }
  if (Fixed == 0 || ElementCount % Fixed != 0)
    return Status(ErrorCode::TypeMismatch,
                  "feature '" + D.name() + "' with shape " +
                      shapeText(D.shape()) + " cannot hold " +
                      std::to_string(ElementCount) + " elements");
  Shape = D.shape();
  Shape[DynamicAt] = static_cast<int64_t>(ElementCount / Fixed);
  return Status::ok();
}

Status ModelRunner::noteSetResult(Status S) {
  if (!S.isOk() && FailedSet.isOk())
    FailedSet = S;
  return S;
}

Status ModelRunner::setFeatureBytes(std::string_view Name, DType Type,
                                    std::vector<int64_t> Shape,
                                    const void *Bytes, size_t ByteCount) {
  return noteSetResult(
      setBytesImpl(Name, Type, std::move(Shape), Bytes, ByteCount));
}

Status ModelRunner::setBytesImpl(std::string_view Name, DType Type,
                                 std::vector<int64_t> Shape,
                                 const void *Bytes, size_t ByteCount) {
  // Only construction errors block setters: features stay writable after
  // the peer failed, so a pass need not special-case a broken model.
  if (!Constructed.isOk())
    return Constructed;
  if (ByteCount > Options.MaxTensorBytes)
    return Status(ErrorCode::TooLarge,
                  "feature '" + std::string(Name) + "' has " +
                      std::to_string(ByteCount) + " bytes, limit " +
                      std::to_string(Options.MaxTensorBytes));
  if (ByteCount % dtypeSize(Type) != 0 || (ByteCount && !Bytes))
    return Status(ErrorCode::InvalidArgument,
                  "feature '" + std::string(Name) +
                      "': byte count is not a whole number of elements");
  const size_t Count = ByteCount / dtypeSize(Type);

  std::optional<size_t> Index = featureIndex(Name);
  if (!Index) {
    if (!DynamicFeatures) {
      std::string Known;
      for (const TensorValue &F : Features)
        Known += (Known.empty() ? "" : ", ") + F.spec().name();
      return Status(ErrorCode::InvalidArgument,
                    "unknown feature '" + std::string(Name) +
                        "' (declared: " + Known + ")");
    }
    // Declared on use: a 1-D value may change length later (the paper's
    // variable-length vectors); its first shape is announced as usual.
    std::vector<int64_t> Declared = Shape;
    if (Shape.size() == 1)
      Declared = {kDynamicDim};
    Expected<size_t> R =
        addFeature(TensorSpec(std::string(Name), Type, std::move(Declared)));
    if (!R)
      return R.takeStatus();
    Index = *R;
  }
  TensorValue &F = Features[*Index];
  if (F.type() != Type)
    return Status(ErrorCode::TypeMismatch,
                  "feature '" + F.spec().name() + "' is " +
                      std::string(dtypeName(F.type())) + ", got a value of " +
                      std::string(dtypeName(Type)));

  std::vector<int64_t> NewShape;
  if (Status S = fitShape(*Index, Count, Shape, NewShape); !S.isOk())
    return S;
  if (NewShape != F.spec().shape() || F.byteSize() != ByteCount) {
    F.reshape(std::move(NewShape));
    FeaturesChanged = true;
  }
  if (ByteCount)
    std::memcpy(F.data(), Bytes, ByteCount);
  if (Type == DType::Bool) {
    // Any non-zero byte means true; the wire carries exactly 0 or 1.
    auto *P = static_cast<unsigned char *>(F.data());
    for (size_t K = 0; K < Count; ++K)
      P[K] = P[K] ? 1 : 0;
  }
  return Status::ok();
}

Status ModelRunner::setFeatureString(std::string_view Name,
                                     std::string_view Value) {
  if (size_t Bad = 0; !support::isValidUtf8(Value, &Bad))
    return noteSetResult(Status(ErrorCode::InvalidArgument,
                  "feature '" + std::string(Name) +
                      "': string is not valid UTF-8 (byte " +
                      std::to_string(Bad) + ")"));
  return setFeatureBytes(Name, DType::String,
                         {static_cast<int64_t>(Value.size())}, Value.data(),
                         Value.size());
}

Status ModelRunner::reshapeFeature(size_t I, std::vector<int64_t> Shape) {
  return noteSetResult(reshapeImpl(I, std::move(Shape)));
}

Status ModelRunner::reshapeImpl(size_t I, std::vector<int64_t> Shape) {
  if (!Constructed.isOk())
    return Constructed;
  if (I >= Features.size())
    return Status(ErrorCode::InvalidArgument,
                  "reshapeFeature: no feature " + std::to_string(I));
  const TensorSpec &D = DeclaredSpecs[I];
  TensorSpec Candidate(D.name(), D.type(), Shape);
  if (Status S = Candidate.validate(Options.MaxTensorBytes); !S.isOk())
    return S;
  if (Candidate.isDynamic())
    return Status(ErrorCode::InvalidArgument,
                  "reshapeFeature: shape " + shapeText(Shape) +
                      " still has a variable dimension");
  bool Fits = isVariableLength(I) && (DynamicFeatures ||
                                      D.shape().size() == Shape.size());
  for (size_t K = 0; Fits && !DynamicFeatures && K < Shape.size(); ++K)
    Fits = D.shape()[K] == kDynamicDim || D.shape()[K] == Shape[K];
  if (!Fits && Shape != D.shape())
    return Status(ErrorCode::TypeMismatch,
                  "feature '" + D.name() + "' declared " +
                      shapeText(D.shape()) + " cannot take shape " +
                      shapeText(Shape));
  if (Features[I].spec().shape() != Shape) {
    Features[I].reshape(std::move(Shape));
    FeaturesChanged = true;
  }
  return Status::ok();
}

/// Claims the runner for one call when concurrent use is checked.
class ModelRunner::UseGuard {
public:
  explicit UseGuard(ModelRunner &R)
      : Flag(R.CheckConcurrentUse ? &R.InUse : nullptr) {
    if (Flag && Flag->exchange(true, std::memory_order_acquire)) {
      Flag = nullptr; // another thread holds it
      Refused = true;
    }
  }
  ~UseGuard() {
    if (Flag)
      Flag->store(false, std::memory_order_release);
  }
  Status status() const {
    if (!Refused)
      return Status::ok();
    return Status(ErrorCode::InvalidArgument,
                  "this runner is in use by another thread: a runner serves "
                  "one thread at a time (give each thread its own runner)");
  }

private:
  std::atomic<bool> *Flag;
  bool Refused = false;
};

Status ModelRunner::switchContext(std::string_view Name) {
  UseGuard Guard(*this);
  if (Status S = Guard.status(); !S.isOk())
    return S;
  if (Status S = checkUsable(); !S.isOk())
    return S;
  return doSwitchContext(Name);
}

Status ModelRunner::doSwitchContext(std::string_view) { return Status::ok(); }

Status ModelRunner::setAdviceSpec(TensorSpec Spec) {
  if (Status S = Spec.validate(Options.MaxTensorBytes); !S.isOk())
    return S.addContext("invalid advice spec");
  Advice.reset(Spec);
  AdviceSpec = std::move(Spec);
  AdviceDerived = false;
  return Status::ok();
}

Status ModelRunner::prepareAdvice(DType Type, bool IsVector) {
  if (Status S = checkUsable(); !S.isOk())
    return S;
  if (!AdviceSpec || AdviceDerived) {
    // No declared spec: each evaluate<T>() says what it expects, and a
    // different T simply announces a new advice spec to the model.
    TensorSpec Derived(
        "advice", Type,
        {IsVector || Type == DType::String ? kDynamicDim : int64_t(1)});
    if (AdviceSpec && *AdviceSpec == Derived)
      return Status::ok();
    AdviceDerived = true;
    Advice.reset(Derived);
    AdviceSpec = std::move(Derived);
    return Status::ok();
  }
  if (AdviceSpec->type() != Type)
    return Status(ErrorCode::TypeMismatch,
                  "advice '" + AdviceSpec->name() + "' is " +
                      std::string(dtypeName(AdviceSpec->type())) +
                      ", but evaluate asked for " +
                      std::string(dtypeName(Type)));
  if (!IsVector && !AdviceSpec->isDynamic() &&
      AdviceSpec->elementCount() != 1)
    return Status(ErrorCode::TypeMismatch,
                  "advice '" + AdviceSpec->name() + "' has " +
                      std::to_string(AdviceSpec->elementCount()) +
                      " elements; evaluate it as a std::vector");
  return Status::ok();
}

Status ModelRunner::evaluateRawImpl(bool &ByCaller) {
  // Everything before doEvaluate is the caller's doing (the model was not
  // asked) but a runner made unavailable by an earlier failure.
  ByCaller = true;
  UseGuard Guard(*this);
  if (Status S = Guard.status(); !S.isOk())
    return S;
  if (Status S = checkUsable(); !S.isOk()) {
    ByCaller = S.code() != ErrorCode::Unavailable;
    return S;
  }
  if (!AdviceSpec)
    return Status(ErrorCode::InvalidArgument,
                  "no advice spec: call setAdviceSpec() or evaluate<T>()");
  if (!FailedSet.isOk()) {
    // Never send features the caller failed to set: report it instead.
    Status S = std::move(FailedSet);
    FailedSet = Status::ok();
    return S.addContext("a feature could not be set before this evaluation");
  }
  const TensorSpec *Spec = nullptr;
  if (Status S = announcedState(FeatureViews, Spec); !S.isOk())
    return S;
  ByCaller = false;
  Status S = doEvaluate(FeatureViews, FeaturesChanged, *AdviceSpec, Advice);
  if (!S.isOk())
    return S;
  FeaturesChanged = false;
  if (Advice.type() != AdviceSpec->type())
    return Status(ErrorCode::Internal, "runner returned advice of dtype " +
                                           std::string(dtypeName(
                                               Advice.type())));
  return Status::ok();
}

void ModelRunner::reportFallback(const Status &Why, bool ByCaller) {
  bool &Warned = ByCaller ? WarnedCallerFallback : WarnedModelFallback;
  if (Warned) {
    report(Severity::Note, "using fallback: " + Why.toString());
    return;
  }
  Warned = true;
  if (ByCaller)
    report(Severity::Error, "caller error, using fallback: " + Why.toString());
  else
    report(Severity::Warning,
           "model unavailable, using fallback: " + Why.toString());
}

Expected<int64_t> ModelRunner::evaluateAction(const std::vector<bool> &Legal,
                                              ActionRule Rule) {
  if (!AdviceSpec)
    if (Status S = setAdviceSpec(defaultActionSpec(Rule)); !S.isOk())
      return S;
  if (Status S = evaluateRaw(); !S.isOk())
    return S;
  return decodeAction(Advice, Rule, Legal);
}

Status ModelRunner::announcedState(std::vector<const TensorValue *> &Out,
                                   const TensorSpec *&Spec) {
  Out.clear();
  if (!AdviceSpec)
    return Status(ErrorCode::InvalidArgument, "no advice spec yet");
  Spec = &*AdviceSpec;
  for (size_t I = 0; I < Features.size(); ++I) {
    if (Features[I].spec().isDynamic())
      return Status(ErrorCode::InvalidArgument,
                    "feature '" + Features[I].spec().name() +
                        "' is variable-length and has not been set");
    Out.push_back(&Features[I]);
  }
  return Status::ok();
}

Status ModelRunner::useFeatureBuffer(size_t I, void *Buffer) {
  if (I >= Features.size() || !Buffer)
    return Status(ErrorCode::InvalidArgument,
                  "useFeatureBuffer: no feature " + std::to_string(I) +
                      " or no buffer");
  TensorValue &F = Features[I];
  if (F.spec().isDynamic() || isVariableLength(I))
    return Status(ErrorCode::InvalidArgument,
                  "useFeatureBuffer: feature '" + F.spec().name() +
                      "' has no fixed shape");
  if (F.byteSize())
    std::memcpy(Buffer, F.data(), F.byteSize());
  F = TensorValue::borrowing(F.spec(), Buffer);
  return Status::ok();
}

void ModelRunner::markUnavailable(const Status &Reason) {
  if (Broken.isOk() && !Reason.isOk()) {
    Broken = Reason;
    report(Severity::Error,
           "runner is now unavailable: " + Reason.toString());
  }
}

Status ModelRunner::checkUsable() const {
  if (!Constructed.isOk())
    return Constructed;
  if (!Broken.isOk())
    return Status(ErrorCode::Unavailable,
                  "runner unavailable after an earlier error (" +
                      Broken.toString() + ")");
  return Status::ok();
}

void ModelRunner::report(Severity S, std::string_view Message) const {
  if (Options.Diagnostics)
    Options.Diagnostics(S, Message);
}

} // namespace mlbridge
