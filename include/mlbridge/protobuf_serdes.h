//===- mlbridge/protobuf_serdes.h - Protobuf over pipes ---------*- C++ -*-===//
//
// The Protobuf SerDes (SerDesKind::Protobuf), part of the MLBridge::grpc
// component: the generic messages of proto/mlbridge.proto on a byte
// stream, each preceded by its length as a base-128 varint (protobuf's
// "delimited" form). The compiler sends PipeMessage (header, context or
// observation), the model answers with Advice. The Python side is
// mlbridge.serdes.get("protobuf").
//
// The core library has no protobuf dependency, so a runner gets this
// SerDes through its options, not by name alone:
//
//   PipeOptions O;
//   O.Format = SerDesKind::Protobuf;
//   O.ProtobufSerDes = mlbridge::createProtobufSerDes;
//   auto Runner = PipeModelRunner::create("/tmp/ch", {}, std::nullopt, O);
//
// (ShmOptions alike; a GrpcModelRunner uses no SerDes.)
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_PROTOBUF_SERDES_H
#define MLBRIDGE_PROTOBUF_SERDES_H

#include "mlbridge/serdes.h"

#include <memory>

namespace mlbridge {

/// A new Protobuf SerDes; a SerDesFactory, for StreamOptions::ProtobufSerDes.
std::unique_ptr<SerDes> createProtobufSerDes();

} // namespace mlbridge

#endif // MLBRIDGE_PROTOBUF_SERDES_H
