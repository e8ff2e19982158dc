//===- onnx/onnx_model_runner.cpp - In-process ONNX Runtime runner --------===//
//
// Hot path (doEvaluate with unchanged shapes): one OrtApi::Run over
// OrtValues created earlier on the runner's own buffers -- the feature
// buffers of ModelRunner for inputs, the advice buffer and this runner's
// output buffers for outputs. Shape changes (or a first call) rebuild the
// input values and run once with outputs allocated by ONNX Runtime, to
// learn the output shapes; the next calls write into bound buffers again.
//
//===----------------------------------------------------------------------===//

#include "onnx/onnx_model_impl.h"
#include "support/shape_text.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

namespace mlbridge {

using namespace ort;

using support::shapeText;

namespace {

constexpr size_t kNone = static_cast<size_t>(-1);

// ONNX Runtime wants a non-null pointer even for empty tensors.
alignas(16) unsigned char EmptyBuffer[16];

std::string nameList(const std::vector<TensorSpec> &Specs) {
  std::string R;
  for (const TensorSpec &S : Specs)
    R += (R.empty() ? "" : ", ") + S.describe();
  return R.empty() ? "none" : R;
}

/// True when Given fits Declared (same rank; -1 matches anything).
bool shapeFits(const std::vector<int64_t> &Declared,
               const std::vector<int64_t> &Given) {
  if (Declared.size() != Given.size())
    return false;
  for (size_t K = 0; K < Declared.size(); ++K)
    if (Declared[K] != kDynamicDim && Given[K] != kDynamicDim &&
        Declared[K] != Given[K])
      return false;
  return true;
}

} // namespace

// ---- per-runner state ----------------------------------------------------

struct OnnxModelRunner::State {
  const OnnxModel::Impl *M = nullptr;
  MemoryInfoPtr Mem;

  // Inputs, in model order.
  std::vector<const char *> InNames;
  std::vector<ValuePtr> InOwned;
  std::vector<const OrtValue *> InValues;
  std::vector<const void *> InPtr; // buffer each value was made over
  std::vector<const TensorValue *> InSource;
  bool InputsBound = false;

  // Outputs, in the order of OnnxModel::outputs().
  std::vector<const char *> OutNames;
  std::vector<TensorValue> Outs; // unused at AdviceIndex (the advice buffer)
  std::vector<ValuePtr> OutOwned;
  std::vector<OrtValue *> OutValues;
  std::vector<OrtValue *> Fresh; // for runs that let ONNX Runtime allocate
  bool OutputsBound = false;

  size_t AdviceIndex = kNone;
  TensorSpec CheckedAdvice;
  const void *AdvicePtr = nullptr;
  size_t AdviceBytes = 0;
  bool HaveResults = false;

  Expected<ValuePtr> tensorOver(const void *Data, size_t Bytes,
                                const std::vector<int64_t> &Shape, bool Rank0,
                                DType T) {
    OrtValue *V = nullptr;
    void *P = Bytes ? const_cast<void *>(Data) : EmptyBuffer;
    Status S = takeStatus(api().CreateTensorWithDataAsOrtValue(
                              Mem.get(), P, Bytes, Shape.data(),
                              Rank0 ? 0 : Shape.size(), toOrtType(T), &V),
                          Phase::Run, "binding a tensor");
    if (!S.isOk())
      return S;
    return ValuePtr(V);
  }

  Status bindInputs(const std::vector<const TensorValue *> &Features);
  Status checkAdvice(const TensorSpec &Spec);
  Status learnOutputs(TensorValue &Out);
  Status bindOutputs(TensorValue &Out);
  Status run(OrtValue **Outputs) {
    return takeStatus(api().Run(M->Session.get(), nullptr, InNames.data(),
                                InValues.data(), InValues.size(),
                                OutNames.data(), OutNames.size(), Outputs),
                      Phase::Run, "ONNX Runtime could not evaluate the model");
  }
};

Status
OnnxModelRunner::State::bindInputs(const std::vector<const TensorValue *> &F) {
  InputsBound = false;
  OutputsBound = false; // output shapes may follow input shapes
  const std::vector<TensorSpec> &Inputs = M->Inputs;
  std::fill(InSource.begin(), InSource.end(), nullptr);
  for (const TensorValue *V : F) {
    const TensorSpec &Given = V->spec();
    size_t K = 0;
    while (K < Inputs.size() && Inputs[K].name() != Given.name())
      ++K;
    if (K == Inputs.size())
      return Status(ErrorCode::InvalidArgument,
                    "feature '" + Given.name() +
                        "' is not an input of the model (inputs: " +
                        nameList(Inputs) + ")");
    if (Given.type() != Inputs[K].type() ||
        !shapeFits(Inputs[K].shape(), Given.shape()))
      return Status(ErrorCode::TypeMismatch,
                    "feature " + Given.describe() + " does not fit input " +
                        Inputs[K].describe());
    InSource[K] = V;
  }
  for (size_t K = 0; K < Inputs.size(); ++K) {
    if (!InSource[K])
      return Status(ErrorCode::InvalidArgument,
                    "model input " + Inputs[K].describe() +
                        " has no feature value");
    const TensorValue &V = *InSource[K];
    Expected<ValuePtr> T = tensorOver(V.data(), V.byteSize(), V.spec().shape(),
                                      M->InputIsRank0[K], V.type());
    if (!T)
      return T.takeStatus().addContext("input '" + Inputs[K].name() + "'");
    InOwned[K] = std::move(*T);
    InValues[K] = InOwned[K].get();
    InPtr[K] = V.data();
  }
  InputsBound = true;
  return Status::ok();
}

Status OnnxModelRunner::State::checkAdvice(const TensorSpec &Spec) {
  if (AdviceIndex != kNone && Spec == CheckedAdvice)
    return Status::ok();
  size_t K = 0;
  while (K < M->Outputs.size() && M->Outputs[K].name() != Spec.name())
    ++K;
  if (K == M->Outputs.size())
    return Status(ErrorCode::InvalidArgument,
                  "advice '" + Spec.name() +
                      "' is not an output of the model (outputs: " +
                      nameList(M->Outputs) + ")");
  const TensorSpec &O = M->Outputs[K];
  if (O.type() != Spec.type() || !shapeFits(O.shape(), Spec.shape()))
    return Status(ErrorCode::TypeMismatch, "advice spec " + Spec.describe() +
                                               " does not fit model output " +
                                               O.describe());
  AdviceIndex = K;
  CheckedAdvice = Spec;
  OutputsBound = false;
  return Status::ok();
}

Status OnnxModelRunner::State::learnOutputs(TensorValue &Out) {
  HaveResults = false;
  OutputsBound = false;
  std::fill(Fresh.begin(), Fresh.end(), nullptr);
  Status S = run(Fresh.data());
  std::vector<ValuePtr> Results(Fresh.size());
  for (size_t K = 0; K < Fresh.size(); ++K)
    Results[K].reset(Fresh[K]);
  if (!S.isOk())
    return S;
  const OrtApi &A = api();
  for (size_t K = 0; K < Results.size(); ++K) {
    const TensorSpec &Declared = M->Outputs[K];
    OrtTensorTypeAndShapeInfo *RawInfo = nullptr;
    if (Status E = takeStatus(A.GetTensorTypeAndShape(Results[K].get(), &RawInfo),
                              Phase::Run, "reading output '" + Declared.name() + "'");
        !E.isOk())
      return E;
    TensorTypeAndShapeInfoPtr Info(RawInfo);
    size_t Rank = 0;
    ONNXTensorElementDataType T = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    OrtStatus *St = A.GetDimensionsCount(Info.get(), &Rank);
    if (!St)
      St = A.GetTensorElementType(Info.get(), &T);
    std::vector<int64_t> Shape(Rank);
    if (!St && Rank)
      St = A.GetDimensions(Info.get(), Shape.data(), Rank);
    void *Data = nullptr;
    if (!St)
      St = A.GetTensorMutableData(Results[K].get(), &Data);
    if (Status E = takeStatus(St, Phase::Run,
                              "reading output '" + Declared.name() + "'");
        !E.isOk())
      return E;
    if (Shape.empty())
      Shape = {1};
    if (fromOrtType(T) != Declared.type() || !shapeFits(Declared.shape(), Shape))
      return Status(ErrorCode::Internal,
                    "ONNX Runtime returned output '" + Declared.name() +
                        "' as " + ortTypeName(T) + shapeText(Shape) +
                        ", the model declares " + Declared.describe());
    TensorValue &Dst = K == AdviceIndex ? Out : Outs[K];
    Dst.reshape(std::move(Shape));
    if (Dst.byteSize())
      std::memcpy(Dst.data(), Data, Dst.byteSize());
  }
  HaveResults = true;
  return bindOutputs(Out);
}

Status OnnxModelRunner::State::bindOutputs(TensorValue &Out) {
  for (size_t K = 0; K < OutOwned.size(); ++K) {
    TensorValue &Dst = K == AdviceIndex ? Out : Outs[K];
    Expected<ValuePtr> T =
        tensorOver(Dst.data(), Dst.byteSize(), Dst.spec().shape(),
                   M->OutputIsRank0[K], Dst.type());
    if (!T)
      return T.takeStatus().addContext("output '" + M->Outputs[K].name() + "'");
    OutOwned[K] = std::move(*T);
    OutValues[K] = OutOwned[K].get();
  }
  AdvicePtr = Out.data();
  AdviceBytes = Out.byteSize();
  OutputsBound = true;
  return Status::ok();
}

// ---- construction --------------------------------------------------------

struct OnnxModelRunner::Prepared {
  std::shared_ptr<const OnnxModel> Model;
  std::vector<TensorSpec> Features;
  std::optional<TensorSpec> Advice;
  OnnxOptions Options;
  Status Error;
};

OnnxModelRunner::Prepared
OnnxModelRunner::prepare(std::shared_ptr<const OnnxModel> M,
                         const OnnxOptions &Options) {
  Prepared P;
  P.Options = Options;
  if (!M) {
    P.Error = Status(ErrorCode::InvalidArgument, "null OnnxModel");
    return P;
  }
  P.Model = std::move(M);
  const OnnxModel &Model = *P.Model;
  P.Features = Model.inputs();
  std::string Advice = Options.AdviceOutput;
  const char *From = "OnnxOptions::AdviceOutput";
  if (Advice.empty()) {
    if (std::optional<std::string> Meta = Model.metadata("mlbridge.advice")) {
      Advice = *Meta;
      From = "the model's metadata entry 'mlbridge.advice'";
    }
  }
  if (Advice.empty()) {
    if (Model.outputs().empty()) {
      P.Error = Status(ErrorCode::InvalidArgument,
                       "model '" + Model.source() +
                           "' has no tensor output this library can read");
      return P;
    }
    P.Advice = Model.outputs().front();
    return P;
  }
  std::optional<size_t> K = Model.outputIndex(Advice);
  if (!K) {
    P.Error = Status(ErrorCode::InvalidArgument,
                     std::string(From) + " names '" + Advice +
                         "', which is not an output of model '" +
                         Model.source() + "' (outputs: " +
                         nameList(Model.outputs()) + ")");
    return P;
  }
  P.Advice = Model.outputs()[*K];
  return P;
}

OnnxModelRunner::OnnxModelRunner(Prepared &&P)
    : InProcessModelRunner(std::move(P.Features), std::move(P.Advice),
                           P.Options),
      Model(std::move(P.Model)) {
  if (!P.Error.isOk()) {
    setConstructionError(std::move(P.Error));
    return;
  }
  setOutputs(Model->outputs(), "ONNX model '" + Model->source() + "'");
  if (!constructionStatus().isOk())
    return;
  auto St = std::make_unique<State>();
  St->M = &Model->impl();
  OrtMemoryInfo *Mem = nullptr;
  if (Status E = takeStatus(api().CreateCpuMemoryInfo(OrtDeviceAllocator,
                                                      OrtMemTypeDefault, &Mem),
                            Phase::Other, "creating ONNX Runtime memory info");
      !E.isOk()) {
    setConstructionError(std::move(E));
    return;
  }
  St->Mem.reset(Mem);
  const size_t NumIn = St->M->Inputs.size();
  const size_t NumOut = St->M->Outputs.size();
  for (const TensorSpec &In : St->M->Inputs)
    St->InNames.push_back(In.name().c_str());
  St->InOwned.resize(NumIn);
  St->InValues.assign(NumIn, nullptr);
  St->InPtr.assign(NumIn, nullptr);
  St->InSource.assign(NumIn, nullptr);
  for (const std::string &Name : St->M->OutputNames)
    St->OutNames.push_back(Name.c_str());
  for (const TensorSpec &O : St->M->Outputs)
    St->Outs.emplace_back(TensorSpec(O.name(), O.type(), {0}));
  St->OutOwned.resize(NumOut);
  St->OutValues.assign(NumOut, nullptr);
  St->Fresh.assign(NumOut, nullptr);
  S = std::move(St);
}

OnnxModelRunner::~OnnxModelRunner() = default;

Expected<std::unique_ptr<OnnxModelRunner>>
OnnxModelRunner::create(const std::string &ModelPath, OnnxOptions Options) {
  Expected<std::shared_ptr<const OnnxModel>> M =
      OnnxModel::load(ModelPath, Options.Model);
  if (!M)
    return M.takeStatus();
  return create(std::move(*M), std::move(Options));
}

Expected<std::unique_ptr<OnnxModelRunner>>
OnnxModelRunner::create(std::shared_ptr<const OnnxModel> M,
                        OnnxOptions Options) {
  return created(std::unique_ptr<OnnxModelRunner>(
      new OnnxModelRunner(prepare(std::move(M), Options))));
}

Expected<std::unique_ptr<OnnxModelRunner>>
OnnxModelRunner::createFromBytes(const void *Data, size_t Size,
                                 OnnxOptions Options) {
  Expected<std::shared_ptr<const OnnxModel>> M =
      OnnxModel::loadFromBytes(Data, Size, Options.Model);
  if (!M)
    return M.takeStatus();
  return create(std::move(*M), std::move(Options));
}

Expected<std::unique_ptr<OnnxModelRunner>> OnnxModelRunner::clone() const {
  OnnxOptions O;
  static_cast<RunnerOptions &>(O) = options();
  if (adviceSpec())
    O.AdviceOutput = adviceSpec()->name();
  return create(Model, std::move(O));
}

const TensorValue *OnnxModelRunner::evaluatedOutput(size_t I) const {
  if (!S || !S->HaveResults || I >= S->Outs.size())
    return nullptr;
  return I == S->AdviceIndex ? &advice() : &S->Outs[I];
}

// ---- evaluation ----------------------------------------------------------

Status
OnnxModelRunner::doEvaluate(const std::vector<const TensorValue *> &Features,
                            bool FeaturesChanged, const TensorSpec &Spec,
                            TensorValue &Out) {
  if (!S)
    return Status(ErrorCode::Internal, "ONNX runner without a session");
  State &St = *S;
  bool Rebind = FeaturesChanged || !St.InputsBound;
  for (size_t K = 0; !Rebind && K < St.InSource.size(); ++K)
    Rebind = St.InSource[K]->data() != St.InPtr[K];
  if (Rebind) {
    if (Status E = St.bindInputs(Features); !E.isOk())
      return E;
  }
  if (Status E = St.checkAdvice(Spec); !E.isOk())
    return E;
  if (St.OutputsBound &&
      (Out.data() != St.AdvicePtr || Out.byteSize() != St.AdviceBytes))
    St.OutputsBound = false;
  if (!St.OutputsBound)
    return St.learnOutputs(Out);

  Status E = St.run(St.OutValues.data());
  if (E.isOk())
    return E;
  // A bound output may have changed shape (data-dependent shapes): learn
  // the shapes again once before reporting an error.
  for (const TensorSpec &O : St.M->Outputs)
    if (O.isDynamic())
      return St.learnOutputs(Out);
  St.HaveResults = false;
  return E;
}

namespace {

/// One loaded session per model file and process (an OnnxModel is
/// immutable and shareable).
Expected<std::shared_ptr<const OnnxModel>> loadShared(const std::string &Path) {
  static std::mutex Lock;
  static std::map<std::string, std::shared_ptr<const OnnxModel>> Cache;
  std::lock_guard<std::mutex> G(Lock);
  auto It = Cache.find(Path);
  if (It != Cache.end())
    return It->second;
  auto M = OnnxModel::load(Path);
  if (!M)
    return M.takeStatus();
  Cache.emplace(Path, *M);
  return std::move(*M);
}

Expected<std::unique_ptr<ModelRunner>>
makeOnnx(const RunnerSettings &S, const std::vector<TensorSpec> &,
         const TensorSpec &Advice) {
  if (S.Model.empty())
    return Status(ErrorCode::NotFound, "onnx: no model file given");
  auto M = loadShared(S.Model);
  if (!M)
    return M.takeStatus().addContext("onnx: loading '" + S.Model + "'");
  OnnxOptions O;
  O.Diagnostics = S.Diagnostics;
  auto R = OnnxModelRunner::create(*M, O);
  if (!R)
    return R.takeStatus().addContext("onnx: '" + S.Model + "'");
  return adviceNamedLike(std::move(*R), Advice);
}

} // namespace

RunnerFactory onnxRunnerFactory() { return {RunnerKind::Onnx, "", makeOnnx}; }

} // namespace mlbridge
