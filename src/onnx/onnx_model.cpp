//===- onnx/onnx_model.cpp - Loading a model into an ONNX Runtime session --===//

#include "onnx/onnx_model_impl.h"
#include "support/shape_text.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/stat.h>

namespace mlbridge {

using namespace ort;

using support::shapeText;

namespace {


Expected<SessionOptionsPtr> makeSessionOptions(const OnnxModelOptions &O) {
  const OrtApi &A = api();
  if (O.IntraOpThreads < 1)
    return Status(ErrorCode::InvalidArgument,
                  "OnnxModelOptions::IntraOpThreads must be >= 1, got " +
                      std::to_string(O.IntraOpThreads));
  OrtSessionOptions *Raw = nullptr;
  if (Status S = takeStatus(A.CreateSessionOptions(&Raw), Phase::Other,
                            "creating ONNX Runtime session options");
      !S.isOk())
    return S;
  SessionOptionsPtr SO(Raw);
  GraphOptimizationLevel Level = ORT_ENABLE_ALL;
  switch (O.Optimization) {
  case OnnxOptimization::None:
    Level = ORT_DISABLE_ALL;
    break;
  case OnnxOptimization::Basic:
    Level = ORT_ENABLE_BASIC;
    break;
  case OnnxOptimization::Extended:
    Level = ORT_ENABLE_EXTENDED;
    break;
  case OnnxOptimization::All:
    Level = ORT_ENABLE_ALL;
    break;
  }
  OrtStatus *St = A.SetIntraOpNumThreads(SO.get(), O.IntraOpThreads);
  if (!St)
    St = A.SetInterOpNumThreads(SO.get(), 1);
  if (!St)
    St = A.SetSessionExecutionMode(SO.get(), ORT_SEQUENTIAL);
  if (!St)
    St = A.SetSessionGraphOptimizationLevel(SO.get(), Level);
  if (!St) // worker threads (if any) sleep instead of spinning between calls
    St = A.AddSessionConfigEntry(SO.get(), "session.intra_op.allow_spinning",
                                 "0");
  for (const auto &[Name, Value] : O.DimValues) {
    if (St)
      break;
    if (Name.empty() || Value < 1)
      return Status(ErrorCode::InvalidArgument,
                    "OnnxModelOptions::DimValues: dimension '" + Name +
                        "' needs a name and a value >= 1, got " +
                        std::to_string(Value));
    St = A.AddFreeDimensionOverrideByName(SO.get(), Name.c_str(), Value);
  }
  if (Status S = takeStatus(St, Phase::Other, "setting session options");
      !S.isOk())
    return S;
  return SO;
}

/// Reads one input's or output's type. Kind is "input"/"output".
struct ValueInfo {
  bool IsTensor = false;
  ONNXTensorElementDataType OrtType = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<int64_t> Dims;
  std::vector<std::string> DimNames;
};

Status readValueInfo(OrtTypeInfo *RawInfo, ValueInfo &Out) {
  const OrtApi &A = api();
  TypeInfoPtr Info(RawInfo);
  ONNXType Kind = ONNX_TYPE_UNKNOWN;
  if (Status S = takeStatus(A.GetOnnxTypeFromTypeInfo(Info.get(), &Kind),
                            Phase::Other, "reading model metadata");
      !S.isOk())
    return S;
  if (Kind != ONNX_TYPE_TENSOR)
    return Status::ok();
  const OrtTensorTypeAndShapeInfo *T = nullptr;
  if (Status S = takeStatus(A.CastTypeInfoToTensorInfo(Info.get(), &T),
                            Phase::Other, "reading model metadata");
      !S.isOk())
    return S;
  size_t Rank = 0;
  OrtStatus *St = A.GetTensorElementType(T, &Out.OrtType);
  if (!St)
    St = A.GetDimensionsCount(T, &Rank);
  Out.Dims.assign(Rank, 0);
  std::vector<const char *> Names(Rank, nullptr);
  if (!St && Rank)
    St = A.GetDimensions(T, Out.Dims.data(), Rank);
  if (!St && Rank)
    St = A.GetSymbolicDimensions(T, Names.data(), Rank);
  if (Status S = takeStatus(St, Phase::Other, "reading model metadata");
      !S.isOk())
    return S;
  for (const char *N : Names)
    Out.DimNames.emplace_back(N ? N : "");
  Out.IsTensor = true;
  return Status::ok();
}

/// Applies DimValues, turns unknown dims into kDynamicDim.
std::vector<int64_t> resolveDims(const ValueInfo &V,
                                 const OnnxModelOptions &O) {
  std::vector<int64_t> Shape = V.Dims;
  for (size_t K = 0; K < Shape.size(); ++K) {
    if (Shape[K] >= 0)
      continue;
    Shape[K] = kDynamicDim;
    for (const auto &[Name, Value] : O.DimValues)
      if (!V.DimNames[K].empty() && V.DimNames[K] == Name)
        Shape[K] = Value;
  }
  return Shape;
}

/// The name and value info of input or output I of Session.
Status readPort(OrtSession &Session, OrtAllocator *Alloc, bool Input, size_t I,
                std::string &Name, ValueInfo &V) {
  const OrtApi &A = api();
  char *RawName = nullptr;
  OrtTypeInfo *Info = nullptr;
  OrtStatus *St = Input ? A.SessionGetInputName(&Session, I, Alloc, &RawName)
                        : A.SessionGetOutputName(&Session, I, Alloc, &RawName);
  Name = takeAllocatedString(RawName);
  if (!St)
    St = Input ? A.SessionGetInputTypeInfo(&Session, I, &Info)
               : A.SessionGetOutputTypeInfo(&Session, I, &Info);
  if (Status S = takeStatus(St, Phase::Other,
                            Input ? "reading model inputs"
                                  : "reading model outputs");
      !S.isOk())
    return S;
  return readValueInfo(Info, V);
}

Expected<std::unique_ptr<OnnxModel::Impl>>
describe(SessionPtr Session, std::string Source, const OnnxModelOptions &O) {
  const OrtApi &A = api();
  auto M = std::make_unique<OnnxModel::Impl>();
  M->Session = std::move(Session);
  M->Source = std::move(Source);
  OrtAllocator *Alloc = nullptr;
  size_t NumIn = 0, NumOut = 0;
  OrtStatus *St = A.GetAllocatorWithDefaultOptions(&Alloc);
  if (!St)
    St = A.SessionGetInputCount(M->Session.get(), &NumIn);
  if (!St)
    St = A.SessionGetOutputCount(M->Session.get(), &NumOut);
  if (Status S = takeStatus(St, Phase::Other, "reading model metadata");
      !S.isOk())
    return S;

  for (size_t I = 0; I < NumIn; ++I) {
    std::string Name;
    ValueInfo V;
    if (Status S = readPort(*M->Session, Alloc, /*Input=*/true, I, Name, V);
        !S.isOk())
      return S;
    std::optional<DType> T = V.IsTensor ? fromOrtType(V.OrtType) : std::nullopt;
    if (!T)
      return Status(ErrorCode::InvalidArgument,
                    "model input '" + Name + "' is " +
                        (V.IsTensor ? std::string("a tensor of ") +
                                          ortTypeName(V.OrtType)
                                    : std::string("not a tensor")) +
                        "; supported inputs are tensors of float, double, "
                        "int8..int64, uint8..uint64 and bool");
    std::vector<int64_t> Shape = resolveDims(V, O);
    std::string Open;
    for (size_t K = 0; K < Shape.size(); ++K)
      if (Shape[K] == kDynamicDim)
        Open += (Open.empty() ? "" : ", ") +
                (V.DimNames[K].empty() ? "dim " + std::to_string(K)
                                       : "'" + V.DimNames[K] + "'");
    if (std::count(Shape.begin(), Shape.end(), kDynamicDim) > 1)
      return Status(ErrorCode::InvalidArgument,
                    "model input '" + Name + "' " + shapeText(Shape) +
                        " has several variable dimensions (" + Open +
                        "); give all but one a value with "
                        "OnnxModelOptions::DimValues");
    M->InputIsRank0.push_back(Shape.empty());
    if (Shape.empty())
      Shape = {1};
    M->Inputs.emplace_back(std::move(Name), *T, std::move(Shape));
  }

  for (size_t I = 0; I < NumOut; ++I) {
    std::string Name;
    ValueInfo V;
    if (Status S = readPort(*M->Session, Alloc, /*Input=*/false, I, Name, V);
        !S.isOk())
      return S;
    std::optional<DType> T = V.IsTensor ? fromOrtType(V.OrtType) : std::nullopt;
    if (!T)
      continue; // not readable here; never requested from ONNX Runtime
    std::vector<int64_t> Shape = resolveDims(V, O);
    M->OutputIsRank0.push_back(Shape.empty());
    if (Shape.empty())
      Shape = {1};
    M->OutputNames.push_back(Name);
    M->Outputs.emplace_back(std::move(Name), *T, std::move(Shape));
  }

  // Custom metadata (metadata_props), e.g. "mlbridge.advice".
  OrtModelMetadata *RawMeta = nullptr;
  if (takeStatus(A.SessionGetModelMetadata(M->Session.get(), &RawMeta),
                 Phase::Other, "")
          .isOk()) {
    ModelMetadataPtr Meta(RawMeta);
    char **Keys = nullptr;
    int64_t NumKeys = 0;
    if (takeStatus(A.ModelMetadataGetCustomMetadataMapKeys(Meta.get(), Alloc,
                                                           &Keys, &NumKeys),
                   Phase::Other, "")
            .isOk() &&
        Keys) {
      for (int64_t K = 0; K < NumKeys; ++K) {
        std::string Key = takeAllocatedString(Keys[K]);
        char *Value = nullptr;
        if (takeStatus(A.ModelMetadataLookupCustomMetadataMap(
                           Meta.get(), Alloc, Key.c_str(), &Value),
                       Phase::Other, "")
                .isOk())
          M->Metadata.emplace_back(std::move(Key),
                                   takeAllocatedString(Value));
      }
      if (OrtStatus *F = A.AllocatorFree(Alloc, Keys))
        A.ReleaseStatus(F);
    }
  }
  return M;
}

} // namespace

OnnxModel::OnnxModel(std::unique_ptr<Impl> I) : I(std::move(I)) {}
OnnxModel::~OnnxModel() = default;

const std::vector<TensorSpec> &OnnxModel::inputs() const { return I->Inputs; }
const std::vector<TensorSpec> &OnnxModel::outputs() const {
  return I->Outputs;
}
const std::string &OnnxModel::source() const { return I->Source; }

std::optional<size_t> OnnxModel::outputIndex(std::string_view Name) const {
  for (size_t K = 0; K < I->Outputs.size(); ++K)
    if (I->Outputs[K].name() == Name)
      return K;
  return std::nullopt;
}

std::optional<std::string> OnnxModel::metadata(std::string_view Key) const {
  for (const auto &[K, V] : I->Metadata)
    if (K == Key)
      return V;
  return std::nullopt;
}

Expected<std::shared_ptr<const OnnxModel>>
OnnxModel::load(const std::string &Path, const OnnxModelOptions &Options) {
  const Runtime &R = runtime();
  if (!R.Error.isOk())
    return R.Error;
  const std::string What = "ONNX model '" + Path + "'";
  struct stat St;
  if (Path.empty())
    return Status(ErrorCode::InvalidArgument, "empty ONNX model path");
  if (::stat(Path.c_str(), &St) != 0)
    return Status(errno == ENOENT ? ErrorCode::NotFound : ErrorCode::IOError,
                  What + ": " + std::strerror(errno));
  if (!S_ISREG(St.st_mode))
    return Status(ErrorCode::InvalidArgument, What + " is not a regular file");
  Expected<SessionOptionsPtr> SO = makeSessionOptions(Options);
  if (!SO)
    return SO.takeStatus();
  OrtSession *Raw = nullptr;
  if (Status S = takeStatus(R.Api->CreateSession(R.Env, Path.c_str(),
                                                 SO->get(), &Raw),
                            Phase::Load, "cannot load " + What);
      !S.isOk())
    return S;
  Expected<std::unique_ptr<Impl>> M = describe(SessionPtr(Raw), Path, Options);
  if (!M)
    return M.takeStatus().addContext(What);
  return std::shared_ptr<const OnnxModel>(new OnnxModel(std::move(*M)));
}

Expected<std::shared_ptr<const OnnxModel>>
OnnxModel::loadFromBytes(const void *Data, size_t Size,
                         const OnnxModelOptions &Options) {
  const Runtime &R = runtime();
  if (!R.Error.isOk())
    return R.Error;
  if (!Data || Size == 0)
    return Status(ErrorCode::InvalidArgument, "empty ONNX model bytes");
  Expected<SessionOptionsPtr> SO = makeSessionOptions(Options);
  if (!SO)
    return SO.takeStatus();
  OrtSession *Raw = nullptr;
  if (Status S = takeStatus(R.Api->CreateSessionFromArray(R.Env, Data, Size,
                                                          SO->get(), &Raw),
                            Phase::Load, "cannot load ONNX model from memory");
      !S.isOk())
    return S;
  Expected<std::unique_ptr<Impl>> M =
      describe(SessionPtr(Raw), "<memory>", Options);
  if (!M)
    return M.takeStatus().addContext("ONNX model from memory");
  return std::shared_ptr<const OnnxModel>(new OnnxModel(std::move(*M)));
}

} // namespace mlbridge
