//===- bitstream_replay.cpp - Replay a captured stream through a runner ---===//
//
// Reads bytes a compiler sent over a bitstream channel (for example what
// LLVM's interactive ML inliner wrote, captured by the Python host's trace
// option), parses them with mlbridge's bitstream SerDes and replays every
// message through a real mlbridge::PipeModelRunner talking to a model at
// <base>:
//
//   header       -> a new PipeModelRunner with the header's specs (the
//                   previous one is disconnected: one header per session, as
//                   LLVM writes it)
//   context      -> runner->switchContext(name)
//   observation  -> each feature's bytes copied into runner->getTensor<T>(i),
//                   then runner->evaluate<int64_t>() (or evaluateRaw() for
//                   other advice types)
//
// For every advice received it prints "advice <n> <value>" on stdout, so a
// test can check the model's answers arrived; errors go to stderr with exit
// status 1. Used by tests/e2e/test_llvm_inliner.py to check that our C++
// writer emits the same bytes as LLVM.
//
// Usage: mlbridge-bitstream-replay [--timeout-ms N] CAPTURE BASE
//
//===----------------------------------------------------------------------===//

#include "mlbridge/byte_stream.h"
#include "mlbridge/pipe_model_runner.h"
#include "mlbridge/serdes.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"
#include "mlbridge/tensor_value.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

using namespace mlbridge;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: mlbridge-bitstream-replay [--timeout-ms N] CAPTURE BASE\n"
               "Replays a captured LLVM bitstream through PipeModelRunner on "
               "the channel BASE (BASE.in / BASE.out).\n");
  return 2;
}

int fail(const std::string &What, const Status &S) {
  std::fprintf(stderr, "mlbridge-bitstream-replay: %s: %s\n", What.c_str(),
               S.toString().c_str());
  return 1;
}

bool readFile(const char *Path, std::string &Out) {
  std::ifstream In(Path, std::ios::binary);
  if (!In)
    return false;
  Out.assign(std::istreambuf_iterator<char>(In),
             std::istreambuf_iterator<char>());
  return !In.bad();
}

// Copies Value's bytes into the runner's buffer for feature I through the
// typed, in-place accessor (the way LLVM fills its feature tensors).
template <typename T>
Status copyTyped(ModelRunner &R, size_t I, const TensorValue &Value) {
  T *Dst = R.getTensor<T>(I);
  if (!Dst)
    return Status(ErrorCode::TypeMismatch,
                  "runner has no " + std::string(dtypeName(DTypeOf<T>::value)) +
                      " buffer for feature " + std::to_string(I));
  if (R.featureSpec(I).byteSize() != Value.byteSize())
    return Status(ErrorCode::TypeMismatch,
                  "feature " + R.featureSpec(I).name() + ": " +
                      std::to_string(Value.byteSize()) + " bytes captured, " +
                      std::to_string(R.featureSpec(I).byteSize()) +
                      " bytes in the runner");
  if (Value.byteSize())
    std::memcpy(static_cast<void *>(Dst), Value.data(), Value.byteSize());
  return Status::ok();
}

Status copyFeature(ModelRunner &R, size_t I, const TensorValue &Value) {
  switch (Value.type()) {
  case DType::Float:
    return copyTyped<float>(R, I, Value);
  case DType::Double:
    return copyTyped<double>(R, I, Value);
  case DType::Int8:
    return copyTyped<int8_t>(R, I, Value);
  case DType::Int16:
    return copyTyped<int16_t>(R, I, Value);
  case DType::Int32:
    return copyTyped<int32_t>(R, I, Value);
  case DType::Int64:
    return copyTyped<int64_t>(R, I, Value);
  case DType::UInt8:
    return copyTyped<uint8_t>(R, I, Value);
  case DType::UInt16:
    return copyTyped<uint16_t>(R, I, Value);
  case DType::UInt32:
    return copyTyped<uint32_t>(R, I, Value);
  case DType::UInt64:
    return copyTyped<uint64_t>(R, I, Value);
  case DType::Bool:
    return copyTyped<bool>(R, I, Value);
  case DType::String:
    // No typed accessor for text; the untyped setter copies the bytes.
    return R.setFeatureBytes(R.featureSpec(I).name(), DType::String,
                             Value.spec().shape(), Value.data(),
                             Value.byteSize());
  }
  return Status(ErrorCode::Internal, "unknown dtype");
}

std::string hexBytes(const TensorValue &V) {
  static const char Digits[] = "0123456789abcdef";
  std::string Out = "0x";
  const auto *P = static_cast<const unsigned char *>(V.data());
  for (size_t I = 0; I < V.byteSize(); ++I) {
    Out += Digits[P[I] >> 4];
    Out += Digits[P[I] & 15];
  }
  return Out;
}

} // namespace

int main(int Argc, char **Argv) {
  long TimeoutMs = 30000;
  std::vector<const char *> Positional;
  for (int I = 1; I < Argc; ++I) {
    if (std::strcmp(Argv[I], "--timeout-ms") == 0 && I + 1 < Argc) {
      char *End = nullptr;
      TimeoutMs = std::strtol(Argv[++I], &End, 10);
      if (!End || *End || TimeoutMs <= 0)
        return usage();
    } else if (std::strcmp(Argv[I], "--help") == 0 ||
               std::strcmp(Argv[I], "-h") == 0) {
      usage();
      return 0;
    } else {
      Positional.push_back(Argv[I]);
    }
  }
  if (Positional.size() != 2)
    return usage();

  std::string Capture;
  if (!readFile(Positional[0], Capture)) {
    std::fprintf(stderr, "mlbridge-bitstream-replay: cannot read %s\n",
                 Positional[0]);
    return 1;
  }
  const std::string Base = Positional[1];

  PipeOptions Opts;
  Opts.Format = SerDesKind::Bitstream;
  Opts.OpenTimeout = std::chrono::milliseconds(TimeoutMs);
  Opts.ReplyTimeout = std::chrono::milliseconds(TimeoutMs);
  // Reproduce LLVM's stream byte for byte: no session id in the headers
  // (the one extension our runner adds by default, protocol §5.1).
  Opts.SessionIds = false;

  std::unique_ptr<SerDes> Codec = createSerDes(SerDesKind::Bitstream);
  MemoryByteSource In(Capture);
  SerDesLimits Limits;
  std::vector<TensorSpec> Specs;
  TensorSpec Advice;
  std::unique_ptr<PipeModelRunner> Runner;
  size_t Sessions = 0, Answered = 0;

  while (!In.atEnd()) {
    CompilerMessage Msg;
    const size_t Offset = In.position();
    if (Status S = Codec->decodeMessage(In, Limits, Specs, Advice, Msg);
        !S.isOk())
      return fail("decoding the capture at byte " + std::to_string(Offset), S);

    switch (Msg.Type) {
    case CompilerMessage::Kind::Header: {
      // LLVM writes exactly one header per session: end the previous
      // session (the model sees EOF) and start a new one.
      if (Runner)
        Runner->disconnect();
      Runner.reset();
      auto Created =
          PipeModelRunner::create(Base, Msg.FeatureSpecs, Msg.AdviceSpec, Opts);
      if (!Created)
        return fail("creating the runner", Created.status());
      Runner = std::move(*Created);
      ++Sessions;
      break;
    }
    case CompilerMessage::Kind::Context:
      if (!Runner)
        return fail("replaying", Status(ErrorCode::Malformed,
                                        "context before any header"));
      if (Status S = Runner->switchContext(Msg.Context); !S.isOk())
        return fail("switchContext(\"" + Msg.Context + "\")", S);
      break;
    case CompilerMessage::Kind::Observation: {
      if (!Runner)
        return fail("replaying", Status(ErrorCode::Malformed,
                                        "observation before any header"));
      if (Msg.Features.size() != Runner->featureCount())
        return fail("replaying observation " +
                        std::to_string(Msg.ObservationIndex),
                    Status(ErrorCode::Malformed,
                           std::to_string(Msg.Features.size()) +
                               " features decoded, runner has " +
                               std::to_string(Runner->featureCount())));
      for (size_t I = 0; I < Msg.Features.size(); ++I)
        if (Status S = copyFeature(*Runner, I, Msg.Features[I]); !S.isOk())
          return fail("copying feature " + std::to_string(I), S);
      const TensorSpec &A = Advice; // from the last header
      std::string Printed;
      if (A.type() == DType::Int64 && A.elementCount() == 1) {
        Expected<int64_t> R = Runner->evaluate<int64_t>();
        if (!R)
          return fail("evaluate<int64_t>() for observation " +
                          std::to_string(Msg.ObservationIndex),
                      R.status());
        Printed = std::to_string(*R);
      } else {
        if (Status S = Runner->evaluateRaw(); !S.isOk())
          return fail("evaluateRaw() for observation " +
                          std::to_string(Msg.ObservationIndex),
                      S);
        Printed = hexBytes(Runner->advice());
      }
      std::printf("advice %zu %s\n", Answered++, Printed.c_str());
      break;
    }
    }
  }
  if (Runner)
    Runner->disconnect();
  std::fflush(stdout);
  std::fprintf(stderr,
               "mlbridge-bitstream-replay: %zu session(s), %zu observation(s)\n",
               Sessions, Answered);
  return 0;
}
