//===- grpc/user_message.h - User-defined messages by field name -*- C++ -*-===//
//
// Internal to MLBridge::grpc. Fills a user-defined request message from
// named features and reads the advice from a reply message, through
// protobuf reflection (docs/grpc.md, "User-defined messages").
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_GRPC_USER_MESSAGE_H
#define MLBRIDGE_GRPC_USER_MESSAGE_H

#include "mlbridge/grpc_model_runner.h"

#include <google/protobuf/compiler/importer.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>

#include <memory>
#include <string>

namespace mlbridge::grpc_detail {

class UserMessageCodec {
public:
  /// Loads the schema (parsing ProtoFile, or from the generated pool) and
  /// checks the method, message types and advice field.
  static Expected<std::unique_ptr<UserMessageCodec>>
  load(const UserMessageSchema &Schema);
  ~UserMessageCodec();

  /// Clears the request and sets each feature into the field its name
  /// designates. Nothing is sent on error.
  Status fillRequest(const std::vector<const TensorValue *> &Features);
  /// Reads the advice field of the reply into Out, converted to Spec's
  /// dtype (exactly: out-of-range or fractional values are errors).
  Status readAdvice(const TensorSpec &Spec, TensorValue &Out);

  google::protobuf::Message &request() { return *Request; }
  google::protobuf::Message &reply() { return *Reply; }
  const UserMessageSchema &schema() const { return Schema; }

  /// Sets one value by field path into M (creating nested messages).
  static Status setField(google::protobuf::Message &M, const std::string &Path,
                         const TensorValue &V);
  /// Reads the field at Path of M into Out, converted to Spec's dtype.
  static Status getField(const google::protobuf::Message &M,
                         const std::string &Path, const TensorSpec &Spec,
                         TensorValue &Out);

private:
  UserMessageCodec() = default;

  UserMessageSchema Schema;
  std::unique_ptr<google::protobuf::compiler::DiskSourceTree> Tree;
  std::unique_ptr<google::protobuf::compiler::MultiFileErrorCollector> Errors;
  std::unique_ptr<google::protobuf::compiler::Importer> Importer;
  std::unique_ptr<google::protobuf::DynamicMessageFactory> Factory;
  std::unique_ptr<google::protobuf::Message> Request, Reply;
};

} // namespace mlbridge::grpc_detail

#endif // MLBRIDGE_GRPC_USER_MESSAGE_H
