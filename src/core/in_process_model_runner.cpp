//===- core/in_process_model_runner.cpp - Models run in process -----------===//

#include "mlbridge/in_process_model_runner.h"

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
  if (!constructionStatus().isOk())
    return constructionStatus();
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

} // namespace mlbridge
