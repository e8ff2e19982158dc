//===- onnx_model_impl.h - What a loaded OnnxModel holds (internal) --------===//
#ifndef MLBRIDGE_SRC_ONNX_ONNX_MODEL_IMPL_H
#define MLBRIDGE_SRC_ONNX_ONNX_MODEL_IMPL_H

#include "mlbridge/onnx_model_runner.h"
#include "onnx/ort_runtime.h"

#include <string>
#include <utility>
#include <vector>

namespace mlbridge {

struct OnnxModel::Impl {
  ort::SessionPtr Session; // OrtApi::Run is safe to call concurrently
  std::string Source;
  std::vector<TensorSpec> Inputs;  // model order; rank-0 inputs as [1]
  std::vector<TensorSpec> Outputs; // readable tensor outputs only
  std::vector<std::string> OutputNames; // same order as Outputs
  std::vector<bool> InputIsRank0;  // fed to ONNX Runtime with rank 0
  std::vector<bool> OutputIsRank0;
  std::vector<std::pair<std::string, std::string>> Metadata;
};

} // namespace mlbridge

#endif // MLBRIDGE_SRC_ONNX_ONNX_MODEL_IMPL_H
