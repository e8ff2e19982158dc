//===- grpc/proto_tensor.cpp - Tensors <-> proto/mlbridge.proto -----------===//

#include "proto_tensor.h"
#include "support/shape_text.h"

#include "core/tensor_spec_json.h"
#include "serdes/serdes_internal.h"

#include <cstring>

#include <google/protobuf/stubs/logging.h>

namespace mlbridge::grpc_detail {

bool parseQuietly(google::protobuf::MessageLite &M, const std::string &Bytes) {
  google::protobuf::LogSilencer Quiet;
  return M.ParseFromString(Bytes);
}

using serdes_detail::checkTensorBytes;
using serdes_detail::prepareValue;
using serdes_detail::rowElements;
using serdes_detail::setConcreteShape;

using support::shapeText;

namespace {

/// Element count of a concrete wire shape; false on a negative dimension or
/// overflow.
bool shapeElements(const google::protobuf::RepeatedField<int64_t> &Shape,
                   size_t &Count) {
  Count = 1;
  for (int64_t D : Shape) {
    if (D < 0)
      return false;
    if (__builtin_mul_overflow(Count, static_cast<size_t>(D), &Count))
      return false;
  }
  return true;
}

std::string tensorName(const pb::Tensor &In) {
  return In.name().empty() ? std::string("(unnamed)") : "\"" + In.name() + "\"";
}

/// The checks shared by advice and features: dtype known, bytes a whole
/// number of elements, within MaxBytes, consistent with the shape.
Status checkTensor(const pb::Tensor &In, size_t MaxBytes, DType &Type,
                   size_t &Elements, const char *What) {
  if (Status S = fromProto(In.dtype(), Type, What); !S.isOk())
    return S;
  const size_t Bytes = In.data().size();
  if (Bytes > MaxBytes)
    return Status(ErrorCode::TooLarge,
                  std::string(What) + " " + tensorName(In) + " has " +
                      std::to_string(Bytes) + " bytes, limit " +
                      std::to_string(MaxBytes));
  const size_t Size = dtypeSize(Type);
  if (Bytes % Size != 0)
    return Status(ErrorCode::Malformed,
                  std::string(What) + " " + tensorName(In) + ": " +
                      std::to_string(Bytes) +
                      " bytes is not a whole number of " +
                      std::string(dtypeName(Type)) + " elements");
  Elements = Bytes / Size;
  size_t FromShape = 0;
  if (In.shape_size() == 0 || !shapeElements(In.shape(), FromShape) ||
      FromShape != Elements)
    return Status(ErrorCode::Malformed,
                  std::string(What) + " " + tensorName(In) + ": shape " +
                      shapeText(In.shape()) + " does not describe its " +
                      std::to_string(Elements) + " elements");
  return Status::ok();
}

Status checkPayload(const TensorValue &V, const char *What,
                    const std::string &Name) {
  return checkTensorBytes(V, std::string(What) + " \"" + Name + "\"");
}

} // namespace

Status fromProto(int Value, DType &Out, const char *What) {
  if (Value <= 0 || Value > kNumDTypes)
    return Status(ErrorCode::Malformed,
                  std::string(What) + ": " +
                      (Value == 0 ? std::string("dtype is not set")
                                  : "unknown dtype " + std::to_string(Value)));
  Out = static_cast<DType>(Value - 1);
  return Status::ok();
}

void specToProto(const TensorSpec &Spec, pb::TensorSpec *Out) {
  Out->set_name(Spec.name());
  Out->set_dtype(toProto(Spec.type()));
  auto *Shape = Out->mutable_shape();
  Shape->Clear();
  for (int64_t D : Spec.shape())
    Shape->Add(D);
}

Status specFromProto(const pb::TensorSpec &In, bool AllowDynamic,
                     size_t MaxBytes, TensorSpec &Out) {
  DType Type;
  const std::string What = "tensor spec \"" + In.name() + "\"";
  if (Status S = fromProto(In.dtype(), Type, What.c_str()); !S.isOk())
    return S;
  if (In.name().empty())
    return Status(ErrorCode::Malformed, "tensor spec has an empty name");
  if (In.shape_size() == 0)
    return Status(ErrorCode::Malformed, What + ": empty shape (scalars are [1])");
  std::vector<int64_t> Shape(In.shape().begin(), In.shape().end());
  int Dynamic = 0;
  for (int64_t D : Shape) {
    if (D == kDynamicDim)
      ++Dynamic;
    else if (D < 0)
      return Status(ErrorCode::Malformed,
                    What + ": invalid dimension " + std::to_string(D));
  }
  if (Dynamic > (AllowDynamic ? 1 : 0))
    return Status(ErrorCode::Malformed,
                  What + (AllowDynamic ? ": more than one -1 dimension"
                                       : ": a -1 dimension is not allowed here"));
  TensorSpec Spec(In.name(), Type, std::move(Shape));
  size_t Bytes = 0;
  if (!detail::specPayloadBytes(Spec, Bytes) || Bytes > MaxBytes)
    return Status(ErrorCode::TooLarge,
                  What + ": " + Spec.describe() + " exceeds the limit of " +
                      std::to_string(MaxBytes) + " bytes");
  Out = std::move(Spec);
  return Status::ok();
}

void tensorToProto(const TensorSpec &Spec, const void *Data, size_t Bytes,
                   pb::Tensor *Out) {
  if (Out->name() != Spec.name())
    Out->set_name(Spec.name());
  Out->set_dtype(toProto(Spec.type()));
  auto *Shape = Out->mutable_shape();
  if (Shape->size() != static_cast<int>(Spec.shape().size()))
    Shape->Resize(static_cast<int>(Spec.shape().size()), 0);
  for (size_t I = 0; I < Spec.shape().size(); ++I)
    Shape->Set(static_cast<int>(I), Spec.shape()[I]);
  Out->mutable_data()->assign(static_cast<const char *>(Data), Bytes);
}

void tensorToProto(const TensorValue &V, pb::Tensor *Out) {
  tensorToProto(V.spec(), V.data(), V.byteSize(), Out);
}

Status adviceFromProto(const pb::Tensor &In, const TensorSpec &Spec,
                       size_t MaxBytes, TensorValue &Out) {
  DType Type;
  size_t Elements = 0;
  if (Status S = checkTensor(In, MaxBytes, Type, Elements, "advice");
      !S.isOk())
    return S;
  auto Subject = [&] { return "advice \"" + Spec.name() + "\""; };
  if (Type != Spec.type())
    return Status(ErrorCode::TypeMismatch,
                  Subject() + " is " + std::string(dtypeName(Spec.type())) +
                      ", the model sent " + std::string(dtypeName(Type)));
  size_t Row = 0;
  if (!rowElements(Spec, Row))
    return Status(ErrorCode::InvalidArgument,
                  Subject() + ": invalid spec " + Spec.describe());
  if (Spec.isDynamic()) {
    if (Row == 0 ? Elements != 0 : Elements % Row != 0)
      return Status(ErrorCode::TypeMismatch,
                    Subject() + " " + Spec.describe() + ": " +
                        std::to_string(Elements) +
                        " elements is not a multiple of " +
                        std::to_string(Row));
  } else if (Elements != Row) {
    return Status(ErrorCode::TypeMismatch,
                  Subject() + " " + Spec.describe() + ": expected " +
                      std::to_string(Row) + " element(s), the model sent " +
                      std::to_string(Elements));
  }
  prepareValue(Out, Spec);
  setConcreteShape(Out, Spec, Elements);
  if (Elements)
    std::memcpy(Out.data(), In.data().data(), In.data().size());
  return checkPayload(Out, "advice", Spec.name());
}

Status tensorFromProto(const pb::Tensor &In, size_t MaxBytes,
                       TensorValue &Out) {
  DType Type;
  size_t Elements = 0;
  if (Status S = checkTensor(In, MaxBytes, Type, Elements, "feature");
      !S.isOk())
    return S;
  if (In.name().empty())
    return Status(ErrorCode::Malformed, "feature tensor without a name");
  std::vector<int64_t> Shape(In.shape().begin(), In.shape().end());
  if (Out.spec().name() != In.name() || Out.type() != Type ||
      Out.spec().shape() != Shape)
    Out.reset(TensorSpec(In.name(), Type, std::move(Shape)));
  Out.assign(In.data().data(), In.data().size());
  return checkPayload(Out, "feature", In.name());
}

void featuresToProto(const std::vector<const TensorValue *> &Features,
                     google::protobuf::RepeatedPtrField<pb::Tensor> *Out) {
  while (Out->size() > static_cast<int>(Features.size()))
    Out->RemoveLast();
  for (size_t I = 0; I < Features.size(); ++I)
    tensorToProto(*Features[I], static_cast<int>(I) < Out->size()
                                    ? Out->Mutable(static_cast<int>(I))
                                    : Out->Add());
}

Status adviceFromReply(const pb::Advice &Reply, const TensorSpec &Spec,
                       size_t MaxBytes, const char *Peer, TensorValue &Out,
                       ReplyKind *Kind) {
  ReplyKind Unused;
  ReplyKind &K = Kind ? *Kind : Unused;
  switch (Reply.result_case()) {
  case pb::Advice::kTensor:
    K = ReplyKind::Advice;
    return adviceFromProto(Reply.tensor(), Spec, MaxBytes, Out);
  case pb::Advice::kError:
    K = ReplyKind::PeerError;
    return Status(ErrorCode::Unavailable,
                  std::string("the ") + Peer + " reported an error: " +
                      (Reply.error().empty() ? "(no message)" : Reply.error()));
  default:
    K = ReplyKind::NoResult;
    return Status(ErrorCode::Malformed, std::string("the ") + Peer +
                                            "'s reply holds neither advice "
                                            "nor an error");
  }
}

} // namespace mlbridge::grpc_detail
