#include "mlbridge/compiled_model_runner.h"

#include <cstring>

namespace mlbridge {

namespace {

bool dtypeOf(CompiledElemType T, DType &Out) {
  switch (T) {
  case CompiledElemType::Float: Out = DType::Float; return true;
  case CompiledElemType::Double: Out = DType::Double; return true;
  case CompiledElemType::Int8: Out = DType::Int8; return true;
  case CompiledElemType::Int16: Out = DType::Int16; return true;
  case CompiledElemType::Int32: Out = DType::Int32; return true;
  case CompiledElemType::Int64: Out = DType::Int64; return true;
  case CompiledElemType::UInt8: Out = DType::UInt8; return true;
  case CompiledElemType::UInt16: Out = DType::UInt16; return true;
  case CompiledElemType::UInt32: Out = DType::UInt32; return true;
  case CompiledElemType::UInt64: Out = DType::UInt64; return true;
  case CompiledElemType::Bool: Out = DType::Bool; return true;
  }
  return false;
}

bool abiOk(const CompiledModelInfo &M) {
  return M.AbiVersion == kCompiledModelAbiVersion;
}

/// The spec of a model input or output; scalars become shape [1].
bool specOf(const CompiledTensorInfo &T, TensorSpec &Out) {
  DType D;
  if (!T.Name || !dtypeOf(T.Type, D))
    return false;
  std::vector<int64_t> Shape(T.Rank ? T.Rank : 1, 1);
  for (size_t I = 0; I < T.Rank; ++I)
    Shape[I] = T.Shape[I];
  Out = TensorSpec(T.Name, D, std::move(Shape));
  return true;
}

std::vector<TensorSpec> inputSpecs(const CompiledModelInfo &M) {
  std::vector<TensorSpec> R;
  if (!abiOk(M))
    return R;
  for (size_t I = 0; I < M.NumInputs; ++I) {
    TensorSpec S;
    if (!specOf(M.Inputs[I], S))
      return {};
    R.push_back(std::move(S));
  }
  return R;
}

std::optional<TensorSpec> adviceSpecOf(const CompiledModelInfo &M,
                                       std::string Name) {
  if (!abiOk(M))
    return std::nullopt;
  if (Name.empty() && M.AdviceOutput)
    Name = M.AdviceOutput;
  for (size_t I = 0; I < M.NumOutputs; ++I) {
    if (!Name.empty() && (!M.Outputs[I].Name || Name != M.Outputs[I].Name))
      continue;
    TensorSpec S;
    if (specOf(M.Outputs[I], S))
      return S;
    return std::nullopt;
  }
  return std::nullopt;
}

std::string modelName(const CompiledModelInfo &M) {
  return std::string("compiled model ") +
         (abiOk(M) && M.ClassName ? M.ClassName : "?");
}

} // namespace

Expected<std::unique_ptr<CompiledModelRunner>>
CompiledModelRunner::create(const CompiledModelInfo &Model,
                            CompiledModelOptions Options) {
  auto R = std::unique_ptr<CompiledModelRunner>(
      new CompiledModelRunner(Model, std::move(Options)));
  if (!R->constructionStatus().isOk())
    return R->constructionStatus();
  return R;
}

CompiledModelRunner::CompiledModelRunner(const CompiledModelInfo &M,
                                         CompiledModelOptions Options)
    : InProcessModelRunner(inputSpecs(M), adviceSpecOf(M, Options.AdviceOutput),
                  Options),
      Model(M) {
  if (!abiOk(M)) {
    setConstructionError(Status(
        ErrorCode::InvalidArgument,
        "compiled model was generated for ABI version " +
            std::to_string(M.AbiVersion) + ", this library expects " +
            std::to_string(kCompiledModelAbiVersion) +
            "; regenerate it with this version's mlbridge-model-compiler"));
    return;
  }
  if (!M.Run || !M.CreateWorkspace || !M.DestroyWorkspace ||
      (M.NumInputs && !M.Inputs) || !M.Outputs || M.NumOutputs == 0) {
    setConstructionError(Status(ErrorCode::InvalidArgument,
                                modelName(M) + ": incomplete description"));
    return;
  }
  for (size_t I = 0; I < M.NumInputs; ++I) {
    TensorSpec S;
    if (!specOf(M.Inputs[I], S)) {
      setConstructionError(Status(
          ErrorCode::InvalidArgument,
          modelName(M) + ": input " + std::to_string(I) +
              " has an element type this library does not know"));
      return;
    }
  }
  std::vector<TensorSpec> Specs;
  for (size_t I = 0; I < M.NumOutputs; ++I) {
    TensorSpec S;
    if (!specOf(M.Outputs[I], S)) {
      setConstructionError(Status(
          ErrorCode::InvalidArgument,
          modelName(M) + ": output " + std::to_string(I) +
              " has an element type this library does not know"));
      return;
    }
    Specs.push_back(S);
    Outputs.emplace_back(std::move(S));
  }
  setOutputs(std::move(Specs), modelName(M));
  if (!adviceSpec()) {
    setConstructionError(unknownOutput(
        Options.AdviceOutput.empty() && M.AdviceOutput
            ? std::string(M.AdviceOutput)
            : Options.AdviceOutput));
    return;
  }
  InputPtrs.assign(M.NumInputs, nullptr);
  InputFeature.assign(M.NumInputs, 0);
  OutputPtrs.assign(M.NumOutputs, nullptr);
  for (size_t I = 0; I < M.NumOutputs; ++I)
    OutputPtrs[I] = Outputs[I].data();
  Workspace = M.CreateWorkspace();
  if (!Workspace)
    setConstructionError(Status(ErrorCode::Internal,
                                modelName(M) + ": cannot allocate its " +
                                    std::to_string(M.WorkspaceBytes) +
                                    "-byte workspace"));
}

CompiledModelRunner::~CompiledModelRunner() {
  if (Workspace)
    Model.DestroyWorkspace(Workspace);
}

Expected<std::unique_ptr<CompiledModelRunner>>
CompiledModelRunner::clone() const {
  CompiledModelOptions O;
  static_cast<RunnerOptions &>(O) = options();
  if (adviceSpec())
    O.AdviceOutput = adviceSpec()->name();
  return create(Model, std::move(O));
}

const TensorValue *CompiledModelRunner::evaluatedOutput(size_t I) const {
  return Evaluated ? &Outputs[I] : nullptr;
}

Status CompiledModelRunner::bindInputs(
    const std::vector<const TensorValue *> &Features) {
  std::vector<bool> Used(Features.size(), false);
  for (size_t I = 0; I < Model.NumInputs; ++I) {
    const CompiledTensorInfo &In = Model.Inputs[I];
    bool Found = false;
    for (size_t F = 0; F < Features.size(); ++F) {
      const TensorSpec &S = Features[F]->spec();
      if (S.name() != In.Name)
        continue;
      DType Want = DType::Float; // set by dtypeOf; initialised for -O3
      dtypeOf(In.Type, Want);
      if (S.type() != Want)
        return Status(ErrorCode::TypeMismatch,
                      "feature '" + S.name() + "' is " +
                          std::string(dtypeName(S.type())) + ", " +
                          modelName(Model) + " takes " +
                          std::string(dtypeName(Want)));
      if (Features[F]->elementCount() != In.ElementCount)
        return Status(ErrorCode::TypeMismatch,
                      "feature '" + S.name() + "' has " +
                          std::to_string(Features[F]->elementCount()) +
                          " elements, " + modelName(Model) + " takes " +
                          std::to_string(In.ElementCount));
      InputFeature[I] = F;
      Used[F] = true;
      Found = true;
      break;
    }
    if (!Found)
      return Status(ErrorCode::InvalidArgument,
                    modelName(Model) + " input '" + In.Name +
                        "' has no feature");
  }
  for (size_t F = 0; F < Features.size(); ++F)
    if (!Used[F])
      return Status(ErrorCode::InvalidArgument,
                    "feature '" + Features[F]->spec().name() +
                        "' is not an input of " + modelName(Model));
  return Status::ok();
}

Status CompiledModelRunner::doEvaluate(
    const std::vector<const TensorValue *> &Features, bool FeaturesChanged,
    const TensorSpec &Spec, TensorValue &Out) {
  if (FeaturesChanged || !Evaluated)
    if (Status S = bindInputs(Features); !S.isOk())
      return S;
  // The advice: one of the outputs, by the spec's name.
  std::optional<size_t> A = outputIndex(Spec.name());
  if (!A)
    return Status(ErrorCode::InvalidArgument,
                  "advice '" + Spec.name() + "' is not an output of " +
                      modelName(Model));
  const TensorSpec &OS = outputSpec(*A);
  if (OS.type() != Spec.type() ||
      (!Spec.isDynamic() && Spec.elementCount() != OS.elementCount()))
    return Status(ErrorCode::TypeMismatch,
                  "advice spec " + Spec.describe() + " does not match " +
                      modelName(Model) + " output " + OS.describe());
  for (size_t I = 0; I < InputPtrs.size(); ++I)
    InputPtrs[I] = Features[InputFeature[I]]->data();
  Model.Run(InputPtrs.data(), OutputPtrs.data(), Workspace);
  Evaluated = true;
  if (Spec.isDynamic())
    Out.reshape(OS.shape());
  std::memcpy(Out.data(), Outputs[*A].data(), Outputs[*A].byteSize());
  return Status::ok();
}

} // namespace mlbridge
