#include "mlbridge/tf_model_runner.h"

#include <cstring>

namespace mlbridge {

namespace {

TensorSpec specOf(const TfAotTensorInfo &T) {
  // Scalars are [1] in the feature API.
  std::vector<int64_t> Shape = T.Rank ? std::vector<int64_t>(T.Shape, T.Shape + T.Rank)
                                      : std::vector<int64_t>(1, 1);
  return TensorSpec(T.Name, T.Type, std::move(Shape));
}

std::vector<TensorSpec> inputSpecs(const TfAotModel &M) {
  std::vector<TensorSpec> Specs;
  Specs.reserve(M.NumInputs);
  for (size_t I = 0; I < M.NumInputs; ++I)
    Specs.push_back(specOf(M.Inputs[I]));
  return Specs;
}


// Index of the output called Name; NumOutputs if none.
size_t findOutput(const TfAotModel &M, std::string_view Name) {
  for (size_t I = 0; I < M.NumOutputs; ++I)
    if (Name == M.Outputs[I].Name)
      return I;
  return M.NumOutputs;
}


std::optional<TensorSpec> adviceOf(const TfAotModel &M,
                                   std::string_view Name) {
  if (M.NumOutputs == 0)
    return std::nullopt;
  size_t I = Name.empty() ? 0 : findOutput(M, Name);
  if (I == M.NumOutputs)
    return std::nullopt;
  return specOf(M.Outputs[I]);
}

} // namespace

/// One instance of the compiled class and where its tensors are.
struct TfModelRunner::Instance {
  const TfAotModel *Model = nullptr;
  void *Handle = nullptr;
  std::vector<int> ArgIndex;     // per input (feature order)
  std::vector<size_t> ArgBytes;  // per input
  std::vector<int> ResultIndex;  // per output
  std::vector<size_t> ResultBytes;

  ~Instance() {
    if (Handle)
      Model->Destroy(Handle);
  }

  Status init(const TfAotModel &M) {
    Model = &M;
    Handle = M.Create();
    if (!Handle)
      return Status(ErrorCode::Internal,
                    "TF-AOT model '" + std::string(M.Name) +
                        "': could not allocate its buffers");
    for (size_t I = 0; I < M.NumInputs; ++I) {
      const TfAotTensorInfo &T = M.Inputs[I];
      int Index = M.ArgIndex(Handle, T.XlaName);
      const size_t Bytes = specOf(T).byteSize();
      if (Index < 0 || M.ArgBytes(Handle, Index) != int64_t(Bytes))
        return Status(ErrorCode::Internal,
                      "TF-AOT model '" + std::string(M.Name) + "': input '" +
                          T.Name +
                          "' does not match the compiled code (rebuild the "
                          "model's generated files)");
      ArgIndex.push_back(Index);
      ArgBytes.push_back(Bytes);
    }
    for (size_t I = 0; I < M.NumOutputs; ++I) {
      const TfAotTensorInfo &T = M.Outputs[I];
      int Index = M.ResultIndex(Handle, T.XlaName);
      if (Index < 0)
        return Status(ErrorCode::Internal,
                      "TF-AOT model '" + std::string(M.Name) +
                          "': output '" + T.Name +
                          "' is not in the compiled code");
      ResultIndex.push_back(Index);
      ResultBytes.push_back(specOf(T).byteSize());
    }
    return Status::ok();
  }
};

Expected<std::unique_ptr<TfModelRunner>>
TfModelRunner::create(const TfAotModel &Model, TfOptions Options) {
  std::unique_ptr<TfModelRunner> R(new TfModelRunner(Model, std::move(Options)));
  if (!R->constructionStatus().isOk())
    return R->constructionStatus();
  return R;
}

TfModelRunner::TfModelRunner(const TfAotModel &M, TfOptions Options)
    : InProcessModelRunner(inputSpecs(M), adviceOf(M, Options.AdviceOutput),
                           Options),
      Model(&M), Inst(new Instance) {
  std::vector<TensorSpec> Specs;
  for (size_t I = 0; I < M.NumOutputs; ++I)
    Specs.push_back(specOf(M.Outputs[I]));
  setOutputs(std::move(Specs), "TF-AOT model '" + std::string(M.Name) + "'");
  if (M.NumOutputs == 0) {
    setConstructionError(Status(ErrorCode::InvalidArgument,
                                "TF-AOT model '" + std::string(M.Name) +
                                    "' has no outputs"));
    return;
  }
  if (!Options.AdviceOutput.empty() &&
      findOutput(M, Options.AdviceOutput) == M.NumOutputs) {
    setConstructionError(unknownOutput(Options.AdviceOutput));
    return;
  }
  if (Status S = Inst->init(M); !S.isOk()) {
    setConstructionError(std::move(S));
    return;
  }
  // Features live in the compiled function's argument buffers: setFeature
  // and getTensor write there, and evaluation copies nothing in.
  for (size_t I = 0; I < M.NumInputs; ++I) {
    if (Inst->ArgBytes[I] == 0)
      continue;
    if (Status S =
            useFeatureBuffer(I, M.ArgData(Inst->Handle, Inst->ArgIndex[I]));
        !S.isOk()) {
      setConstructionError(std::move(S));
      return;
    }
  }
  OutputViews.resize(M.NumOutputs); // made on the first evaluation
}

TfModelRunner::~TfModelRunner() = default;

const TensorValue *TfModelRunner::evaluatedOutput(size_t I) const {
  return HaveResults ? &OutputViews[I] : nullptr;
}

Expected<std::unique_ptr<TfModelRunner>> TfModelRunner::clone() const {
  TfOptions O;
  static_cast<RunnerOptions &>(O) = options();
  if (adviceSpec() && outputIndex(adviceSpec()->name()))
    O.AdviceOutput = adviceSpec()->name();
  return create(*Model, std::move(O));
}

Status TfModelRunner::doEvaluate(
    const std::vector<const TensorValue *> &Features, bool, const TensorSpec &Spec,
    TensorValue &Out) {
  HaveResults = false;
  const TfAotModel &M = *Model;
  // The advice: the output named by the spec, checked before running.
  const std::optional<size_t> Found = outputIndex(Spec.name());
  if (!Found)
    return unknownOutput(Spec.name());
  const size_t OutI = *Found;
  const TensorSpec &OutSpec = outputSpec(OutI);
  if (Spec.type() != OutSpec.type())
    return Status(ErrorCode::TypeMismatch,
                  "TF-AOT output '" + OutSpec.name() + "' is " +
                      std::string(dtypeName(OutSpec.type())) +
                      ", but the advice spec asks for " +
                      std::string(dtypeName(Spec.type())));
  if (!Spec.isDynamic() && Spec.elementCount() != OutSpec.elementCount())
    return Status(ErrorCode::TypeMismatch,
                  "TF-AOT output '" + OutSpec.name() + "' has " +
                      std::to_string(OutSpec.elementCount()) +
                      " elements, the advice spec " +
                      std::to_string(Spec.elementCount()));

  // Features come in declaration order, which is the model's input order
  // (the runner declares them all up front and accepts no other).
  if (Features.size() != Inst->ArgIndex.size()) {
    // addFeature() declared something the model has no input for.
    const std::string Extra = Features.size() > M.NumInputs
                                  ? Features[M.NumInputs]->spec().name()
                                  : std::string("?");
    return Status(ErrorCode::InvalidArgument,
                  "TF-AOT model '" + std::string(M.Name) +
                      "' has no input for feature '" + Extra + "'");
  }
  for (size_t I = 0; I < Features.size(); ++I) {
    const TensorValue &F = *Features[I];
    if (F.byteSize() != Inst->ArgBytes[I])
      return Status(ErrorCode::Internal,
                    "TF-AOT runner: feature '" + F.spec().name() +
                        "' has an unexpected size");
    void *Arg = M.ArgData(Inst->Handle, Inst->ArgIndex[I]);
    if (F.data() != Arg) // only if the feature stopped borrowing Arg
      std::memcpy(Arg, F.data(), F.byteSize());
  }
  if (!M.Run(Inst->Handle))
    return Status(ErrorCode::Internal,
                  "TF-AOT model '" + std::string(M.Name) + "' failed to run");
  // The result buffers are XLA's; it may place them anew on every run.
  for (size_t I = 0; I < OutputViews.size(); ++I) {
    void *Data = const_cast<void *>(M.ResultData(Inst->Handle, Inst->ResultIndex[I]));
    if (OutputViews[I].data() != Data)
      OutputViews[I] = TensorValue::borrowing(outputSpec(I), Data);
  }
  HaveResults = true;
  if (Spec.isDynamic())
    Out.reshape(OutSpec.shape());
  Out.assign(M.ResultData(Inst->Handle, Inst->ResultIndex[OutI]),
             Inst->ResultBytes[OutI]);
  return Status::ok();
}

} // namespace mlbridge
