//===- grpc/protobuf_serdes.cpp - Length-delimited protobuf messages ------===//
//
// Byte layout (docs/grpc.md, "The Protobuf SerDes"): every message is
//   <varint: byte length N> <N bytes: a serialized message>
// compiler -> model: mlbridge.v1.PipeMessage (header | context | observation)
// model -> compiler: mlbridge.v1.Advice (tensor | error)
//
//===----------------------------------------------------------------------===//

#include "mlbridge/protobuf_serdes.h"

#include "proto_tensor.h"
#include "serdes/serdes_internal.h"

#include <google/protobuf/io/coded_stream.h>

#include <atomic>

namespace mlbridge {

using namespace grpc_detail;

namespace {

class ProtobufSerDes final : public SerDes {
public:
  SerDesKind kind() const override { return SerDesKind::Protobuf; }

  void encodeHeader(const std::vector<const TensorValue *> &Features,
                    const TensorSpec &Advice, bool ContinuesSession,
                    uint64_t SessionId, WireMessage &Out) override {
    Scratch.Clear();
    pb::Header *H = Scratch.mutable_header();
    for (const TensorValue *F : Features)
      specToProto(F->spec(), H->add_features());
    specToProto(Advice, H->mutable_advice());
    H->set_continues(ContinuesSession);
    H->set_session(SessionId);
    append(Scratch, Out);
  }
  using SerDes::encodeHeader;

  void encodeContext(std::string_view Name, WireMessage &Out) override {
    Scratch.Clear();
    Scratch.set_context(std::string(Name));
    append(Scratch, Out);
  }

  Status encodeObservation(int64_t Index,
                           const std::vector<const TensorValue *> &Features,
                           WireMessage &Out) override {
    if (Index < 0)
      return Status(ErrorCode::InvalidArgument,
                    "observation index must be >= 0, got " +
                        std::to_string(Index));
    for (const TensorValue *F : Features)
      if (!F || F->spec().isDynamic() ||
          F->byteSize() != F->spec().byteSize())
        return Status(ErrorCode::InvalidArgument,
                      "feature buffer does not match its concrete shape");
    // Keep the observation's tensors between calls: their string storage
    // is reused, so a steady feature set allocates nothing.
    pb::Observation *O = ObsScratch.mutable_observation();
    O->set_index(Index);
    featuresToProto(Features, O->mutable_features());
    append(ObsScratch, Out);
    return Status::ok();
  }

  Status decodeAdvice(ByteSource &In, const TensorSpec &Spec,
                      const SerDesLimits &Limits,
                      TensorValue &Advice) override {
    if (Status S = readDelimited(In, Limits); !S.isOk())
      return S.addContext("reading advice");
    if (!parseQuietly(Reply, Buffer))
      return Status(ErrorCode::Malformed,
                    "reply of " + std::to_string(Buffer.size()) +
                        " bytes is not an mlbridge.v1.Advice message (or "
                        "has a string that is not UTF-8)");
    return adviceFromReply(Reply, Spec, Limits.MaxMessageBytes, "model",
                           Advice);
  }

  Status decodeMessage(ByteSource &In, const SerDesLimits &Limits,
                       std::vector<TensorSpec> &CurrentSpecs,
                       TensorSpec &CurrentAdvice,
                       CompilerMessage &Msg) override {
    if (Status S = readDelimited(In, Limits); !S.isOk())
      return S;
    if (!parseQuietly(Incoming, Buffer))
      return Status(ErrorCode::Malformed,
                    "message of " + std::to_string(Buffer.size()) +
                        " bytes is not an mlbridge.v1.PipeMessage (or has a "
                        "string that is not UTF-8)");
    switch (Incoming.kind_case()) {
    case pb::PipeMessage::kHeader:
      return decodeHeader(Incoming.header(), Limits, CurrentSpecs,
                          CurrentAdvice, Msg);
    case pb::PipeMessage::kContext:
      Msg.Type = CompilerMessage::Kind::Context;
      Msg.Context = Incoming.context();
      return Status::ok();
    case pb::PipeMessage::kObservation:
      return decodeObservation(Incoming.observation(), Limits, CurrentSpecs,
                               CurrentAdvice, Msg);
    default:
      return Status(ErrorCode::Malformed,
                    "message is neither a header, a context nor an "
                    "observation");
    }
  }

  Status encodeAdvice(const TensorSpec &Spec, const TensorValue &Advice,
                      WireMessage &Out) override {
    if (Advice.type() != Spec.type())
      return Status(ErrorCode::TypeMismatch,
                    "advice \"" + Spec.name() + "\" is " +
                        std::string(dtypeName(Spec.type())) + ", got " +
                        std::string(dtypeName(Advice.type())));
    if (!Spec.isDynamic() && Advice.byteSize() != Spec.byteSize())
      return Status(ErrorCode::TypeMismatch,
                    "advice \"" + Spec.name() + "\" " + Spec.describe() +
                        " needs " + std::to_string(Spec.byteSize()) +
                        " bytes, got " + std::to_string(Advice.byteSize()));
    ReplyOut.Clear();
    tensorToProto(Spec.isDynamic() ? Advice.spec() : Spec, Advice.data(),
                  Advice.byteSize(), ReplyOut.mutable_tensor());
    ReplyOut.mutable_tensor()->set_name(Spec.name());
    append(ReplyOut, Out);
    return Status::ok();
  }

private:
  static void append(const google::protobuf::MessageLite &M,
                     WireMessage &Out) {
    std::string &B = Out.ownedBuffer();
    const size_t Start = B.size();
    const size_t Size = M.ByteSizeLong();
    uint8_t Prefix[10];
    uint8_t *End = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(
        Size, Prefix);
    B.append(reinterpret_cast<const char *>(Prefix), End - Prefix);
    const size_t Body = B.size();
    B.resize(Body + Size);
    M.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t *>(&B[Body]));
    Out.commitOwned(Start);
  }

  /// Reads one varint length and that many bytes into Buffer.
  Status readDelimited(ByteSource &In, const SerDesLimits &Limits) {
    uint64_t Length = 0;
    for (int Shift = 0;; Shift += 7) {
      unsigned char Byte;
      if (Status S = In.readExact(&Byte, 1); !S.isOk())
        return S;
      if (Shift == 63 && Byte > 1)
        return Status(ErrorCode::Malformed, "message length varint overflows");
      Length |= uint64_t(Byte & 0x7f) << Shift;
      if (!(Byte & 0x80))
        break;
      if (Shift >= 63)
        return Status(ErrorCode::Malformed,
                      "message length varint is longer than 10 bytes");
    }
    if (Length > Limits.MaxMessageBytes)
      return Status(ErrorCode::TooLarge,
                    "message of " + std::to_string(Length) +
                        " bytes exceeds the limit of " +
                        std::to_string(Limits.MaxMessageBytes));
    Buffer.resize(Length);
    return Length ? In.readExact(Buffer.data(), Length) : Status::ok();
  }

  Status decodeHeader(const pb::Header &H, const SerDesLimits &Limits,
                      std::vector<TensorSpec> &CurrentSpecs,
                      TensorSpec &CurrentAdvice, CompilerMessage &Msg) {
    if (static_cast<size_t>(H.features_size()) > Limits.MaxFeatures)
      return Status(ErrorCode::TooLarge,
                    "header: " + std::to_string(H.features_size()) +
                        " features exceed the feature-count limit of " +
                        std::to_string(Limits.MaxFeatures));
    std::vector<TensorSpec> Specs;
    Specs.reserve(H.features_size());
    size_t Total = 0;
    for (const pb::TensorSpec &P : H.features()) {
      TensorSpec S;
      if (Status E = specFromProto(P, false, Limits.MaxMessageBytes, S);
          !E.isOk())
        return E.addContext("header: feature " +
                            std::to_string(Specs.size()));
      for (const TensorSpec &Prev : Specs)
        if (Prev.name() == S.name())
          return Status(ErrorCode::Malformed,
                        "header: duplicate feature name \"" + S.name() + "\"");
      if (__builtin_add_overflow(Total, S.byteSize(), &Total) ||
          Total > Limits.MaxMessageBytes)
        return Status(ErrorCode::TooLarge,
                      "header: the features total more than the message "
                      "size limit of " +
                          std::to_string(Limits.MaxMessageBytes) + " bytes");
      Specs.push_back(std::move(S));
    }
    TensorSpec Advice;
    if (!H.has_advice())
      return Status(ErrorCode::Malformed, "header: no advice spec");
    if (Status E = specFromProto(H.advice(), true, Limits.MaxMessageBytes,
                                 Advice);
        !E.isOk())
      return E.addContext("header: advice");
    Msg.Type = CompilerMessage::Kind::Header;
    Msg.FeatureSpecs = Specs;
    Msg.AdviceSpec = Advice;
    Msg.ContinuesSession = H.continues();
    Msg.SessionId = H.session();
    CurrentSpecs = std::move(Specs);
    CurrentAdvice = std::move(Advice);
    return Status::ok();
  }

  Status decodeObservation(const pb::Observation &O, const SerDesLimits &Limits,
                           const std::vector<TensorSpec> &CurrentSpecs,
                           const TensorSpec &CurrentAdvice,
                           CompilerMessage &Msg) {
    const std::string What = "observation " + std::to_string(O.index());
    if (!serdes_detail::haveHeader(CurrentSpecs, CurrentAdvice))
      return Status(ErrorCode::Malformed, What + " before any header");
    if (O.index() < 0)
      return Status(ErrorCode::Malformed, What + ": negative index");
    if (O.features_size() != static_cast<int>(CurrentSpecs.size()))
      return Status(ErrorCode::Malformed,
                    What + ": " + std::to_string(O.features_size()) +
                        " features, the header declared " +
                        std::to_string(CurrentSpecs.size()));
    Msg.Type = CompilerMessage::Kind::Observation;
    Msg.ObservationIndex = O.index();
    Msg.Features.resize(CurrentSpecs.size());
    for (size_t I = 0; I < CurrentSpecs.size(); ++I) {
      const pb::Tensor &T = O.features(static_cast<int>(I));
      if (Status S = tensorFromProto(T, Limits.MaxMessageBytes,
                                     Msg.Features[I]);
          !S.isOk())
        return S.addContext(What);
      if (Msg.Features[I].spec() != CurrentSpecs[I])
        return Status(ErrorCode::Malformed,
                      What + ": feature " + std::to_string(I) + " is " +
                          Msg.Features[I].spec().describe() +
                          ", the header declared " +
                          CurrentSpecs[I].describe());
    }
    return Status::ok();
  }

  pb::PipeMessage Scratch, ObsScratch, Incoming;
  pb::Advice Reply, ReplyOut;
  std::string Buffer;
};

} // namespace

std::unique_ptr<SerDes> createProtobufSerDes() {
  return std::make_unique<ProtobufSerDes>();
}

} // namespace mlbridge
