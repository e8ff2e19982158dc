//===- mlbridge/shm_model_runner.h - A model behind shared memory -*- C++ -*-===//
//
// ShmModelRunner talks to a model process on the same machine through
// shared memory (docs/shm.md): the model side (Python's
// mlbridge.ShmCompilerInterface) listens on a Unix socket; connecting to it
// maps a memory region holding a request ring and a reply ring. Each
// request is copied into the ring once (the model reads the tensors in
// place, as numpy views) and the reply comes back the same way. Any SerDes
// works; bitstream is the fast one.
//
// Waiting for a reply spins for ShmOptions::Spin, then sleeps on an eventfd
// -- no wake-up cost for fast models, no CPU burnt for slow ones. Every
// wait has a deadline; a model that exits (or is killed) is reported at
// once through the socket's hang-up, never waited on.
//
// Threads: one thread at a time per runner; one runner per compiler thread.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_SHM_MODEL_RUNNER_H
#define MLBRIDGE_SHM_MODEL_RUNNER_H

#include "mlbridge/stream_model_runner.h"

#include <chrono>
#include <memory>
#include <string>

namespace mlbridge {

/// OpenTimeout bounds the wait for the model to listen and to accept the
/// connection (a model whose listen queue is full counts as not accepting).
struct ShmOptions : StreamOptions {};

class ShmModelRunner final : public StreamModelRunner {
public:
  /// Creates a runner for the model listening at SocketPath (the path the
  /// model side reports). Specs as for PipeModelRunner::create. Fails only
  /// on invalid arguments; the channel is opened lazily.
  static Expected<std::unique_ptr<ShmModelRunner>>
  create(std::string SocketPath, std::vector<TensorSpec> FeatureSpecs = {},
         std::optional<TensorSpec> Advice = std::nullopt,
         ShmOptions Options = ShmOptions());

  const std::string &socketPath() const { return Path; }

private:
  ShmModelRunner(CreateTag, std::string SocketPath,
                 std::vector<TensorSpec> FeatureSpecs,
                 std::optional<TensorSpec> Advice, ShmOptions Options);
  Expected<std::unique_ptr<MessageChannel>> openChannel() override;
  std::string channelName() const override;
  /// Replies are framed (protocol §5.1): the request number in each frame
  /// tells a second reply to an earlier request from this one's answer.
  bool offersSessionIds() const override { return true; }

  std::string Path;
  ShmOptions Opts;
};

} // namespace mlbridge

#endif // MLBRIDGE_SHM_MODEL_RUNNER_H
