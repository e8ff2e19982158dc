//===- mlbridge/protobuf_serdes.h - Protobuf over pipes ---------*- C++ -*-===//
//
// The Protobuf SerDes (SerDesKind::Protobuf), part of the MLBridge::grpc
// component: the generic messages of proto/mlbridge.proto on a byte
// stream, each preceded by its length as a base-128 varint (protobuf's
// "delimited" form). The compiler sends PipeMessage (header, context or
// observation), the model answers with Advice. The Python side is
// mlbridge.serdes.get("protobuf").
//
// The core library has no protobuf dependency, so this SerDes is made
// available to createSerDes() (and to PipeModelRunner) by registering it:
//
//   mlbridge::enableProtobufSerDes();
//   PipeOptions O; O.Format = SerDesKind::Protobuf;
//   auto Runner = PipeModelRunner::create("/tmp/ch", {}, std::nullopt, O);
//
// Only this call registers it (a GrpcModelRunner uses no SerDes).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_PROTOBUF_SERDES_H
#define MLBRIDGE_PROTOBUF_SERDES_H

#include "mlbridge/serdes.h"

#include <memory>

namespace mlbridge {

/// Registers the Protobuf SerDes with createSerDes(). Idempotent, thread
/// safe.
void enableProtobufSerDes();

/// A new Protobuf SerDes (without going through the registry).
std::unique_ptr<SerDes> createProtobufSerDes();

} // namespace mlbridge

#endif // MLBRIDGE_PROTOBUF_SERDES_H
