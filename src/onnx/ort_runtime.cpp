#include "onnx/ort_runtime.h"

#include "mlbridge/diagnostics.h"
#include "mlbridge/onnx_model_runner.h"

#include <mutex>

// LeakSanitizer: libonnxruntime.so makes a one-time 14-byte allocation while
// it is loaded (before main, without any of our calls) and never frees it.
// The prebuilt library has no symbols to tell it apart from other
// allocations made inside ONNX Runtime, so sanitizer builds of programs
// using this runner suppress leaks reported from within that library.
#if defined(__SANITIZE_ADDRESS__)
#define MLBRIDGE_LSAN_HOOK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define MLBRIDGE_LSAN_HOOK 1
#endif
#endif
#ifdef MLBRIDGE_LSAN_HOOK
extern "C" const char *__lsan_default_suppressions() {
  return "leak:libonnxruntime.so\n";
}
#endif

namespace mlbridge {

namespace {
std::mutex LogMutex;
DiagnosticSink &logSink() {
  static DiagnosticSink *Sink = new DiagnosticSink(); // outlives every session
  return *Sink;
}

void ORT_API_CALL logFunction(void *, OrtLoggingLevel Level, const char *,
                             const char *, const char *, const char *Message) {
  std::lock_guard<std::mutex> Lock(LogMutex);
  DiagnosticSink &Sink = logSink();
  if (!Sink)
    return;
  Severity S = Level >= ORT_LOGGING_LEVEL_ERROR     ? Severity::Error
               : Level == ORT_LOGGING_LEVEL_WARNING ? Severity::Warning
                                                    : Severity::Note;
  std::string Text = "onnxruntime: ";
  Text += Message ? Message : "";
  Sink(S, Text);
}
} // namespace

void setOnnxRuntimeLogSink(DiagnosticSink Sink) {
  std::lock_guard<std::mutex> Lock(LogMutex);
  logSink() = std::move(Sink);
}

namespace ort {

namespace {
Runtime makeRuntime() {
  Runtime R;
  const OrtApiBase *Base = OrtGetApiBase();
  R.Api = Base ? Base->GetApi(ORT_API_VERSION) : nullptr;
  if (!R.Api) {
    R.Error = Status(ErrorCode::Unavailable,
                     std::string("the ONNX Runtime library (version ") +
                         (Base ? Base->GetVersionString() : "unknown") +
                         ") is older than the headers this library was "
                         "built with (API " +
                         std::to_string(ORT_API_VERSION) + ")");
    return R;
  }
  OrtStatus *S = R.Api->CreateEnvWithCustomLogger(
      logFunction, nullptr, ORT_LOGGING_LEVEL_WARNING, "mlbridge", &R.Env);
  if (S) {
    std::string Msg = R.Api->GetErrorMessage(S);
    R.Api->ReleaseStatus(S);
    R.Env = nullptr;
    R.Error = Status(ErrorCode::Unavailable,
                     "cannot create the ONNX Runtime environment: " + Msg);
    return R;
  }
  if (OrtStatus *T = R.Api->DisableTelemetryEvents(R.Env))
    R.Api->ReleaseStatus(T);
  return R;
}
} // namespace

const Runtime &runtime() {
  static const Runtime R = makeRuntime();
  return R;
}

Status takeStatus(OrtStatus *S, Phase P, std::string_view Context) {
  if (!S)
    return Status::ok();
  const OrtApi &A = api();
  const OrtErrorCode Code = A.GetErrorCode(S);
  std::string Msg(Context);
  Msg += ": ";
  Msg += A.GetErrorMessage(S);
  A.ReleaseStatus(S);
  ErrorCode C = ErrorCode::Internal;
  switch (Code) {
  case ORT_NO_SUCHFILE:
    C = ErrorCode::NotFound;
    break;
  case ORT_INVALID_ARGUMENT:
  case ORT_NOT_IMPLEMENTED:
  case ORT_NO_MODEL:
    C = P == Phase::Load ? ErrorCode::Malformed : ErrorCode::InvalidArgument;
    break;
  case ORT_INVALID_PROTOBUF:
  case ORT_INVALID_GRAPH:
  case ORT_MODEL_LOADED:
  case ORT_ENGINE_ERROR:
    C = ErrorCode::Malformed;
    break;
  default:
    // ORT_FAIL, ORT_RUNTIME_EXCEPTION, ...: while loading, the file is the
    // cause ("Protobuf parsing failed"); while running, the model failed
    // on these inputs.
    C = P == Phase::Load ? ErrorCode::Malformed : ErrorCode::InvalidArgument;
    break;
  }
  return Status(C, std::move(Msg));
}

std::optional<DType> fromOrtType(ONNXTensorElementDataType T) {
  switch (T) {
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
    return DType::Float;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
    return DType::Double;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
    return DType::Int8;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
    return DType::Int16;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
    return DType::Int32;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
    return DType::Int64;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
    return DType::UInt8;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
    return DType::UInt16;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
    return DType::UInt32;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
    return DType::UInt64;
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
    return DType::Bool;
  default:
    return std::nullopt;
  }
}

ONNXTensorElementDataType toOrtType(DType T) {
  switch (T) {
  case DType::Float:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  case DType::Double:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
  case DType::Int8:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
  case DType::Int16:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
  case DType::Int32:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
  case DType::Int64:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  case DType::UInt8:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
  case DType::UInt16:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16;
  case DType::UInt32:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32;
  case DType::UInt64:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64;
  case DType::Bool:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;
  case DType::String:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING;
  }
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}

const char *ortTypeName(ONNXTensorElementDataType T) {
  if (std::optional<DType> D = fromOrtType(T))
    return dtypeName(*D).data(); // the names are NUL-terminated literals
  switch (T) {
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING:
    return "string";
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
    return "float16";
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
    return "bfloat16";
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64:
    return "complex64";
  case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128:
    return "complex128";
  default:
    return "an unsupported element type";
  }
}

std::string takeAllocatedString(char *S) {
  if (!S)
    return std::string();
  std::string R(S);
  OrtAllocator *Alloc = nullptr;
  if (OrtStatus *St = api().GetAllocatorWithDefaultOptions(&Alloc)) {
    api().ReleaseStatus(St);
    return R; // cannot happen for the default allocator; leak over crash
  }
  if (OrtStatus *St = api().AllocatorFree(Alloc, S))
    api().ReleaseStatus(St);
  return R;
}

} // namespace ort
} // namespace mlbridge
