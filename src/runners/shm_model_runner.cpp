#include "mlbridge/shm_model_runner.h"

#include "transport/shm_channel.h"

namespace mlbridge {

Expected<std::unique_ptr<ShmModelRunner>>
ShmModelRunner::create(std::string SocketPath,
                       std::vector<TensorSpec> FeatureSpecs,
                       std::optional<TensorSpec> Advice, ShmOptions Options) {
  return created(std::unique_ptr<ShmModelRunner>(new ShmModelRunner(
      CreateTag(), std::move(SocketPath), std::move(FeatureSpecs),
      std::move(Advice), std::move(Options))));
}

ShmModelRunner::ShmModelRunner(CreateTag, std::string SocketPath,
                               std::vector<TensorSpec> FeatureSpecs,
                               std::optional<TensorSpec> Advice,
                               ShmOptions Options)
    : StreamModelRunner(std::move(FeatureSpecs), std::move(Advice), Options,
                        SocketPath, "shared-memory socket path"),
      Path(std::move(SocketPath)), Opts(std::move(Options)) {}

Expected<std::unique_ptr<MessageChannel>> ShmModelRunner::openChannel() {
  return ShmChannel::connect(Path, Clock::now() + Opts.OpenTimeout, Opts.Spin);
}

std::string ShmModelRunner::channelName() const {
  return "shared-memory channel '" + Path + "'";
}

} // namespace mlbridge
