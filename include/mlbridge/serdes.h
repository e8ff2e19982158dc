//===- mlbridge/serdes.h - How features and advice become bytes -*- C++ -*-===//
//
// A SerDes turns the compiler's messages (session header, context switch,
// observation) into bytes and parses the model's reply; it also implements
// the model side (parse compiler messages, encode advice) so C++ peers and
// tools can use it. The formats are specified byte by byte in
// docs/protocol.md. A SerDes holds no connection state and is cheap to
// create; transports own the bytes in flight.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SERDES_H
#define MLBRIDGE_SERDES_H

#include "mlbridge/byte_stream.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"
#include "mlbridge/tensor_value.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge {

enum class SerDesKind {
  Bitstream, ///< LLVM's training-log / interactive-mode format.
  Json,      ///< One compact JSON object per line.
  Protobuf,  ///< Length-delimited protobuf messages; needs the MLBridge::grpc
             ///< component (see mlbridge/protobuf_serdes.h).
};

/// "bitstream", "json" or "protobuf".
const char *serdesKindName(SerDesKind Kind);
/// Parses "bitstream" / "json" / "protobuf" (case-sensitive).
Expected<SerDesKind> serdesKindFromName(std::string_view Name);

/// Bounds checked before any allocation sized by the peer.
struct SerDesLimits {
  size_t MaxMessageBytes = size_t(256) << 20; ///< Any one message or tensor.
  size_t MaxHeaderBytes = size_t(16) << 20;   ///< A header / JSON line.
  /// Feature specs in one header: bounds the time and memory a header
  /// costs to parse, whatever its byte size.
  size_t MaxFeatures = 16384;
};

/// A message from the compiler, as seen by the model side.
struct CompilerMessage {
  enum class Kind { Header, Context, Observation } Type = Kind::Header;
  // Header: the new feature specs and advice spec; ContinuesSession is
  // false when the header starts a new session.
  std::vector<TensorSpec> FeatureSpecs;
  TensorSpec AdviceSpec;
  bool ContinuesSession = false;
  // The compiler's session id (protocol §5.1), 0 when it offered none: the
  // model side then frames every reply of the session with it.
  uint64_t SessionId = 0;
  // Context: the context name.
  std::string Context;
  // Observation: its index and one value per feature spec, in header order.
  int64_t ObservationIndex = 0;
  std::vector<TensorValue> Features;
};

/// A model reply as seen by the compiler: advice, or an error the model
/// reported (JSON only).
class SerDes {
public:
  virtual ~SerDes();
  virtual SerDesKind kind() const = 0;

  // ---- compiler side --------------------------------------------------
  /// Session header: features (concrete shapes) and the advice spec (may
  /// be dynamic). ContinuesSession marks a header that updates the specs
  /// within the current session (protocol §2.3); without it a header
  /// starts a new session, as in LLVM. A non-zero SessionId offers the
  /// session echo of protocol §5.1 (never sent to LLVM).
  virtual void encodeHeader(const std::vector<const TensorValue *> &Features,
                            const TensorSpec &Advice, bool ContinuesSession,
                            uint64_t SessionId, WireMessage &Out) = 0;
  /// A header without a session id, byte-identical to LLVM's.
  void encodeHeader(const std::vector<const TensorValue *> &Features,
                    const TensorSpec &Advice, bool ContinuesSession,
                    WireMessage &Out) {
    encodeHeader(Features, Advice, ContinuesSession, /*SessionId=*/0, Out);
  }
  virtual void encodeContext(std::string_view Name, WireMessage &Out) = 0;
  /// One observation. Bitstream borrows the feature buffers (no copy).
  virtual Status
  encodeObservation(int64_t Index,
                    const std::vector<const TensorValue *> &Features,
                    WireMessage &Out) = 0;
  /// Reads one reply for Spec into Advice (reshaped to the received length
  /// for dynamic specs). A model-reported error becomes a Status with
  /// ErrorCode::Unavailable and the model's message.
  virtual Status decodeAdvice(ByteSource &In, const TensorSpec &Spec,
                              const SerDesLimits &Limits,
                              TensorValue &Advice) = 0;

  // ---- model side -----------------------------------------------------
  /// Reads the next compiler message. CurrentSpecs/CurrentAdvice carry the
  /// specs from the last header (updated when a header is read).
  virtual Status decodeMessage(ByteSource &In, const SerDesLimits &Limits,
                               std::vector<TensorSpec> &CurrentSpecs,
                               TensorSpec &CurrentAdvice,
                               CompilerMessage &Msg) = 0;
  /// Encodes a reply for Spec from Advice.
  virtual Status encodeAdvice(const TensorSpec &Spec, const TensorValue &Advice,
                              WireMessage &Out) = 0;
};

/// Creates a SerDes of the kinds the core library builds in (Bitstream,
/// Json); nullptr for Protobuf, which is the MLBridge::grpc component's
/// (mlbridge::createProtobufSerDes, mlbridge/protobuf_serdes.h).
std::unique_ptr<SerDes> createSerDes(SerDesKind Kind);

/// Makes a new SerDes: how a component hands a kind the core library does
/// not build in to a runner (StreamOptions::ProtobufSerDes).
using SerDesFactory = std::unique_ptr<SerDes> (*)();

} // namespace mlbridge

#endif // MLBRIDGE_SERDES_H
