//===- mlbridge/pipe_model_runner.h - A model behind two FIFOs --*- C++ -*-===//
//
// PipeModelRunner talks to a model process over a pair of named pipes,
// exactly like LLVM's InteractiveModelRunner: observations go to
// "<Base>.out", advice comes back on "<Base>.in" (docs/protocol.md §5).
// The model side (Python's mlbridge.PipeCompilerInterface, or a stock LLVM
// host script for bitstream) normally creates the FIFOs.
//
// A StreamModelRunner: the pipes are opened on first use (evaluate or
// switchContext), or by connect(). Every open, read and write has a deadline; EOF, EPIPE and a
// missing FIFO are reported as errors, never waited on forever. The library
// never raises SIGPIPE in the process: EPIPE is consumed locally.
//
// No model side: a runner made here (C: mlb_pipe_runner_create) waits up
// to OpenTimeout for the FIFOs to appear, for a script that starts the
// compiler and the model together, then fails with NotFound and stays
// unavailable. A runner made from settings (makeRunner,
// mlbridge/runner_settings.h; C: mlb_runner_create_from_settings) refuses
// a channel whose FIFOs do not exist at once. Both are the same in C and
// C++; a compiler that should not wait uses the settings.
//
// Sessions: each opening of the channel is a session with a random id,
// sent in its header; the model frames every reply with it (protocol
// §5.1), so a late reply meant for an earlier session is skipped and a
// second reply to one request is an error, never an answer. Only one
// compiler at a time may hold a channel: a second gets an error.
//
// Threads: one thread at a time per runner. Use one runner (one channel)
// per compiler thread.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_PIPE_MODEL_RUNNER_H
#define MLBRIDGE_PIPE_MODEL_RUNNER_H

#include "mlbridge/stream_model_runner.h"

#include <chrono>
#include <memory>
#include <string>

namespace mlbridge {

/// OpenTimeout bounds the wait for the FIFOs to exist and for the model to
/// open its ends.
struct PipeOptions : StreamOptions {
  /// Create "<Base>.in"/"<Base>.out" (mode 0600) if they do not exist; the
  /// runner then also removes them when destroyed. Off by default: the
  /// model side owns the FIFOs.
  bool CreateFifos = false;
  /// Offer a session id in the header and require framed replies
  /// (protocol §5.1). Every ML-Compiler-Bridge model side supports it;
  /// turn it off only for a model host that does not (e.g. LLVM's own
  /// interactive_host.py), which receives LLVM's exact bytes then.
  bool SessionIds = true;
};

class PipeModelRunner final : public StreamModelRunner {
public:
  /// Creates a runner for the channel at Base. FeatureSpecs may be empty to
  /// declare features on first setFeature; Advice may be std::nullopt to
  /// derive it from the first evaluate<T>(). Fails only on invalid
  /// arguments; the pipes are opened lazily.
  static Expected<std::unique_ptr<PipeModelRunner>>
  create(std::string Base, std::vector<TensorSpec> FeatureSpecs = {},
         std::optional<TensorSpec> Advice = std::nullopt,
         PipeOptions Options = PipeOptions());
  ~PipeModelRunner() override;

  const std::string &base() const { return Base; }

  /// Sets PipeOptions::SessionIds after creation (the C API's
  /// mlb_pipe_runner_set_session_ids). Takes effect from the next session
  /// the runner opens: set it before the first evaluation.
  void setSessionIds(bool Offer) { Opts.SessionIds = Offer; }

private:
  PipeModelRunner(CreateTag, std::string Base,
                  std::vector<TensorSpec> FeatureSpecs,
                  std::optional<TensorSpec> Advice, PipeOptions Options);
  Expected<std::unique_ptr<MessageChannel>> openChannel() override;
  std::string channelName() const override;
  bool offersSessionIds() const override { return Opts.SessionIds; }

  std::string Base;
  PipeOptions Opts;
};

} // namespace mlbridge

#endif // MLBRIDGE_PIPE_MODEL_RUNNER_H
