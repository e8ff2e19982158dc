//===- ort_runtime.h - ONNX Runtime C API helpers (internal) ---------------===//
//
// The ONNX runner talks to ONNX Runtime through its C API only: nothing is
// thrown, so no exception can cross our API whatever flags the caller
// builds with. This header holds the process-wide environment, status and
// dtype conversions and RAII owners for C API objects.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SRC_ONNX_ORT_RUNTIME_H
#define MLBRIDGE_SRC_ONNX_ORT_RUNTIME_H

#include "mlbridge/dtype.h"
#include "mlbridge/status.h"

#include <onnxruntime_c_api.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace mlbridge::ort {

/// The API table and the one OrtEnv of the process (created on first use,
/// never destroyed: sessions may outlive static destructors).
struct Runtime {
  const OrtApi *Api = nullptr;
  OrtEnv *Env = nullptr;
  Status Error; // why Api/Env are unusable
};
const Runtime &runtime();

/// The API table (valid once runtime() succeeded).
inline const OrtApi &api() { return *runtime().Api; }

/// Converts and releases an OrtStatus (nullptr = ok). Context goes first in
/// the message. Load errors map to NotFound / Malformed; others by code.
enum class Phase { Load, Run, Other };
Status takeStatus(OrtStatus *S, Phase P, std::string_view Context);

std::optional<DType> fromOrtType(ONNXTensorElementDataType T);
ONNXTensorElementDataType toOrtType(DType T);
/// "float16", "string", ... for messages.
const char *ortTypeName(ONNXTensorElementDataType T);

// ---- owners ----------------------------------------------------------------
#define MLBRIDGE_ORT_OWNER(Type)                                               \
  struct Type##Deleter {                                                       \
    void operator()(Ort##Type *P) const {                                      \
      if (P)                                                                   \
        api().Release##Type(P);                                                \
    }                                                                          \
  };                                                                           \
  using Type##Ptr = std::unique_ptr<Ort##Type, Type##Deleter>;
MLBRIDGE_ORT_OWNER(Session)
MLBRIDGE_ORT_OWNER(SessionOptions)
MLBRIDGE_ORT_OWNER(Value)
MLBRIDGE_ORT_OWNER(TypeInfo)
MLBRIDGE_ORT_OWNER(TensorTypeAndShapeInfo)
MLBRIDGE_ORT_OWNER(MemoryInfo)
MLBRIDGE_ORT_OWNER(ModelMetadata)
#undef MLBRIDGE_ORT_OWNER

/// Takes a string ONNX Runtime allocated with the default allocator.
std::string takeAllocatedString(char *S);

} // namespace mlbridge::ort

#endif // MLBRIDGE_SRC_ONNX_ORT_RUNTIME_H
