#include "mlbridge/pipe_model_runner.h"

#include "transport/fifo_channel.h"

#include <unistd.h>

namespace mlbridge {

Expected<std::unique_ptr<PipeModelRunner>>
PipeModelRunner::create(std::string Base, std::vector<TensorSpec> FeatureSpecs,
                        std::optional<TensorSpec> Advice,
                        PipeOptions Options) {
  return created(std::unique_ptr<PipeModelRunner>(new PipeModelRunner(
      CreateTag(), std::move(Base), std::move(FeatureSpecs),
      std::move(Advice), std::move(Options))));
}

PipeModelRunner::PipeModelRunner(CreateTag, std::string Base,
                                 std::vector<TensorSpec> FeatureSpecs,
                                 std::optional<TensorSpec> Advice,
                                 PipeOptions Options)
    : StreamModelRunner(std::move(FeatureSpecs), std::move(Advice), Options,
                        Base, "pipe base path"),
      Base(std::move(Base)), Opts(std::move(Options)) {}

PipeModelRunner::~PipeModelRunner() {
  disconnect();
  if (Opts.CreateFifos) {
    ::unlink((Base + ".in").c_str());
    ::unlink((Base + ".out").c_str());
  }
}

Expected<std::unique_ptr<MessageChannel>> PipeModelRunner::openChannel() {
  return FifoChannel::open(Base + ".in", Base + ".out",
                           Clock::now() + Opts.OpenTimeout, Opts.CreateFifos,
                           Opts.Spin);
}

std::string PipeModelRunner::channelName() const {
  return "pipe '" + Base + "'";
}

} // namespace mlbridge
