//===- grpc/proto_tensor.h - Tensors <-> proto/mlbridge.proto ---*- C++ -*-===//
//
// Internal to MLBridge::grpc. Converts specs and tensor values to and from
// the generic messages, with every check a value from the wire needs
// (dtype, element count against the spec and the shape, size limit, bool
// bytes, UTF-8) done before the value is used.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_GRPC_PROTO_TENSOR_H
#define MLBRIDGE_GRPC_PROTO_TENSOR_H

#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"
#include "mlbridge/tensor_value.h"

#include "mlbridge.pb.h"

#include <string>
#include <vector>

namespace mlbridge::grpc_detail {

namespace pb = ::mlbridge::v1;

inline pb::DType toProto(DType T) {
  return static_cast<pb::DType>(static_cast<int>(T) + 1);
}
/// Parses Bytes into M without protobuf's own logging: a string field
/// with invalid UTF-8 would print "[libprotobuf ERROR ...]" to stderr, and
/// the library never prints. The caller reports the failure.
bool parseQuietly(google::protobuf::MessageLite &M, const std::string &Bytes);

/// The core dtype of a proto dtype; Malformed for 0 or an unknown value.
Status fromProto(int Value, DType &Out, const char *What);

void specToProto(const TensorSpec &Spec, pb::TensorSpec *Out);
/// A spec from the wire. AllowDynamic: one -1 dimension is accepted
/// (advice). The payload (of one row, for a dynamic spec) must fit MaxBytes.
Status specFromProto(const pb::TensorSpec &In, bool AllowDynamic,
                     size_t MaxBytes, TensorSpec &Out);

/// Fills Out from V (reusing Out's storage).
void tensorToProto(const TensorValue &V, pb::Tensor *Out);
/// Same, from a spec and raw bytes.
void tensorToProto(const TensorSpec &Spec, const void *Data, size_t Bytes,
                   pb::Tensor *Out);

/// Reads an advice tensor for Spec into Out (reshaped for dynamic specs).
/// TypeMismatch for a dtype or element count that does not fit Spec,
/// Malformed for an inconsistent tensor, TooLarge above MaxBytes.
Status adviceFromProto(const pb::Tensor &In, const TensorSpec &Spec,
                       size_t MaxBytes, TensorValue &Out);

/// Reads a tensor with a concrete shape (a feature) into Out.
Status tensorFromProto(const pb::Tensor &In, size_t MaxBytes,
                       TensorValue &Out);

/// The features of an observation, in order. Out's tensors are kept and
/// overwritten, so a steady feature set allocates nothing per request. The
/// one observation builder of the Protobuf SerDes and both gRPC modes.
void featuresToProto(const std::vector<const TensorValue *> &Features,
                     google::protobuf::RepeatedPtrField<pb::Tensor> *Out);

/// What an Advice message (a model's reply, a trainer's action) holds.
enum class ReplyKind {
  Advice,     ///< a tensor: decoded into Out, or why it does not fit
  PeerError,  ///< the model's (or trainer's) own error message
  NoResult,   ///< neither: the peer does not speak the protocol
};

/// The one decoder of Advice messages (pipes with the Protobuf SerDes, gRPC
/// inference replies, gRPC training actions). Ok with the advice in Out;
/// else PeerError: Unavailable, "the <Peer> reported an error: ..."
/// (the request failed, the transport is fine); NoResult: Malformed; an
/// unusable tensor: as adviceFromProto. Kind (if given) says which.
Status adviceFromReply(const pb::Advice &Reply, const TensorSpec &Spec,
                       size_t MaxBytes, const char *Peer, TensorValue &Out,
                       ReplyKind *Kind = nullptr);

} // namespace mlbridge::grpc_detail

#endif // MLBRIDGE_GRPC_PROTO_TENSOR_H
