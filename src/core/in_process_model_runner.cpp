//===- core/in_process_model_runner.cpp - Models run in process -----------===//

#include "mlbridge/in_process_model_runner.h"

#include <cstring>

namespace mlbridge {

std::optional<size_t>
InProcessModelRunner::outputIndex(std::string_view Name) const {
  for (size_t I = 0; I < Outputs.size(); ++I)
    if (Outputs[I].name() == Name)
      return I;
  return std::nullopt;
}

const TensorValue *
InProcessModelRunner::output(std::string_view Name) const {
  std::optional<size_t> I = outputIndex(Name);
  return I ? evaluatedOutput(*I) : nullptr;
}

Status InProcessModelRunner::selectAdvice(std::string_view Name) {
  std::optional<size_t> I = outputIndex(Name);
  if (!I)
    return unknownOutput(Name);
  return setAdviceSpec(Outputs[*I]);
}

void InProcessModelRunner::setOutputs(std::vector<TensorSpec> Specs,
                                      std::string Name) {
  Outputs = std::move(Specs);
  ModelName = std::move(Name);
}

Status InProcessModelRunner::unknownOutput(std::string_view Name) const {
  std::string Names;
  for (const TensorSpec &S : Outputs)
    Names += (Names.empty() ? "'" : ", '") + S.name() + "'";
  return Status(ErrorCode::InvalidArgument,
                ModelName + " has no output '" + std::string(Name) +
                    "' (outputs: " + (Names.empty() ? "none" : Names) + ")");
}

// ---- EmbeddedModelRunner ---------------------------------------------------

namespace {

bool abiOk(const EmbeddedModel &M) {
  return M.AbiVersion == kEmbeddedModelAbiVersion;
}

bool typeOk(const EmbeddedTensorInfo &T) {
  return T.Name && static_cast<int>(T.Type) < kNumDTypes &&
         T.Type != DType::String;
}

/// The spec of an input or output; scalars become shape [1].
TensorSpec specOf(const EmbeddedTensorInfo &T) {
  std::vector<int64_t> Shape(T.Rank ? T.Rank : 1, 1);
  for (size_t I = 0; I < T.Rank; ++I)
    Shape[I] = T.Shape[I];
  return TensorSpec(T.Name, T.Type, std::move(Shape));
}

/// Specs of N tensors; none if one is not usable.
std::vector<TensorSpec> specsOf(const EmbeddedTensorInfo *T, size_t N) {
  std::vector<TensorSpec> R;
  for (size_t I = 0; I < N; ++I) {
    if (!typeOk(T[I]))
      return {};
    R.push_back(specOf(T[I]));
  }
  return R;
}

std::vector<TensorSpec> inputSpecs(const EmbeddedModel &M) {
  if (!abiOk(M) || (M.NumInputs && !M.Inputs))
    return {};
  return specsOf(M.Inputs, M.NumInputs);
}

/// The output called Name (empty: the model's advice entry, else the
/// first output).
std::optional<TensorSpec> adviceSpecOf(const EmbeddedModel &M,
                                       std::string Name) {
  if (!abiOk(M) || !M.Outputs)
    return std::nullopt;
  if (Name.empty() && M.AdviceOutput)
    Name = M.AdviceOutput;
  for (size_t I = 0; I < M.NumOutputs; ++I) {
    if (!Name.empty() && (!M.Outputs[I].Name || Name != M.Outputs[I].Name))
      continue;
    if (typeOk(M.Outputs[I]))
      return specOf(M.Outputs[I]);
    return std::nullopt;
  }
  return std::nullopt;
}

} // namespace

EmbeddedModelRunner::EmbeddedModelRunner(const EmbeddedModel &M,
                                         std::string_view Kind,
                                         const std::string &AdviceOutput,
                                         RunnerOptions Options)
    : InProcessModelRunner(inputSpecs(M), adviceSpecOf(M, AdviceOutput),
                           std::move(Options)),
      Model(M) {
  setOutputs({}, std::string(Kind) + " " +
                     (abiOk(M) && M.Name ? M.Name : "?"));
  if (Status S = checkAndInstantiate(AdviceOutput); !S.isOk())
    setConstructionError(std::move(S));
}

Status
EmbeddedModelRunner::checkAndInstantiate(const std::string &AdviceOutput) {
  const EmbeddedModel &M = Model;
  if (!abiOk(M))
    return Status(ErrorCode::InvalidArgument,
                  modelName() + " was generated for ABI version " +
                      std::to_string(M.AbiVersion) + ", this library expects " +
                      std::to_string(kEmbeddedModelAbiVersion) +
                      "; regenerate it with this version's build "
                      "(mlbridge-model-compiler, mlbridge_add_tf_model)");
  if (!M.Create || !M.Destroy || !M.InputBuffer || !M.Run ||
      !M.OutputBuffer || (M.NumInputs && !M.Inputs) || !M.Outputs)
    return Status(ErrorCode::InvalidArgument,
                  modelName() + ": incomplete description");
  if (M.NumOutputs == 0)
    return Status(ErrorCode::InvalidArgument, modelName() + " has no outputs");
  for (size_t I = 0; I < M.NumInputs; ++I)
    if (!typeOk(M.Inputs[I]))
      return Status(ErrorCode::InvalidArgument,
                    modelName() + ": input " + std::to_string(I) +
                        " has an element type this library does not support");
  for (size_t I = 0; I < M.NumOutputs; ++I)
    if (!typeOk(M.Outputs[I]))
      return Status(ErrorCode::InvalidArgument,
                    modelName() + ": output " + std::to_string(I) +
                        " has an element type this library does not support");
  setOutputs(specsOf(M.Outputs, M.NumOutputs), modelName());
  if (!adviceSpec())
    return unknownOutput(AdviceOutput.empty() && M.AdviceOutput
                             ? std::string(M.AdviceOutput)
                             : AdviceOutput);
  Instance = M.Create();
  if (!Instance)
    return Status(ErrorCode::Internal,
                  modelName() + ": cannot allocate its buffers");
  // The features are the instance's input buffers: setFeature and
  // getTensor write there, and evaluation copies nothing in.
  for (size_t I = 0; I < M.NumInputs; ++I) {
    void *Buffer = featureSpec(I).byteSize() ? M.InputBuffer(Instance, I)
                                             : nullptr;
    InputBuffers.push_back(Buffer);
    if (!featureSpec(I).byteSize())
      continue;
    if (!Buffer)
      return Status(ErrorCode::Internal,
                    modelName() + ": input '" + featureSpec(I).name() +
                        "' does not match the compiled code (rebuild the "
                        "model's generated files)");
    if (Status S = useFeatureBuffer(I, Buffer); !S.isOk())
      return S;
  }
  // Owning placeholders until the first run says where the outputs are.
  for (size_t I = 0; I < M.NumOutputs; ++I)
    OutputViews.emplace_back(outputSpec(I));
  return Status::ok();
}

EmbeddedModelRunner::~EmbeddedModelRunner() {
  if (Instance)
    Model.Destroy(Instance);
}

const TensorValue *EmbeddedModelRunner::evaluatedOutput(size_t I) const {
  return HaveResults ? &OutputViews[I] : nullptr;
}

Status EmbeddedModelRunner::doEvaluate(
    const std::vector<const TensorValue *> &Features, bool,
    const TensorSpec &Spec, TensorValue &Out) {
  HaveResults = false;
  // The advice: the output named by the spec, checked before running.
  const std::optional<size_t> A = outputIndex(Spec.name());
  if (!A)
    return unknownOutput(Spec.name());
  const TensorSpec &OS = outputSpec(*A);
  if (OS.type() != Spec.type() ||
      (!Spec.isDynamic() && Spec.elementCount() != OS.elementCount()))
    return Status(ErrorCode::TypeMismatch,
                  "advice spec " + Spec.describe() + " does not match " +
                      modelName() + " output " + OS.describe());
  // Features come in declaration order, which is the model's input order;
  // more features than inputs were declared by addFeature().
  if (Features.size() > InputBuffers.size())
    return Status(ErrorCode::InvalidArgument,
                  "feature '" + Features[InputBuffers.size()]->spec().name() +
                      "' is not an input of " + modelName());
  for (size_t I = 0; I < InputBuffers.size(); ++I) {
    const TensorValue &F = *Features[I];
    if (F.data() == InputBuffers[I])
      continue; // written in place
    if (F.byteSize() != featureSpec(I).byteSize())
      return Status(ErrorCode::Internal,
                    "feature '" + F.spec().name() + "' has an unexpected size");
    std::memcpy(InputBuffers[I], F.data(), F.byteSize());
  }
  if (!Model.Run(Instance))
    return Status(ErrorCode::Internal, modelName() + " failed to run");
  // The model may place its outputs anew on every run (XLA does).
  for (size_t I = 0; I < OutputViews.size(); ++I) {
    const void *Data = Model.OutputBuffer(Instance, I);
    if (Data == OutputViews[I].data())
      continue;
    if (!Data && OutputViews[I].byteSize())
      return Status(ErrorCode::Internal,
                    modelName() + ": output '" + outputSpec(I).name() +
                        "' is not in the compiled code");
    OutputViews[I] =
        TensorValue::borrowing(outputSpec(I), const_cast<void *>(Data));
  }
  HaveResults = true;
  if (Spec.isDynamic())
    Out.reshape(OS.shape());
  Out.assign(OutputViews[*A].data(), OutputViews[*A].byteSize());
  return Status::ok();
}

Expected<std::unique_ptr<ModelRunner>>
adviceNamedLike(std::unique_ptr<InProcessModelRunner> R, const TensorSpec &Advice) {
  if (R->outputIndex(Advice.name()))
    if (Status S = R->selectAdvice(Advice.name()); !S.isOk())
      return S;
  return std::unique_ptr<ModelRunner>(std::move(R));
}

} // namespace mlbridge
