//===- grpc/grpc_model_runner.cpp - GrpcModelRunner -----------------------===//

#include "mlbridge/grpc_model_runner.h"

#include "grpc_internal.h"
#include "support/checked_cast.h"

namespace mlbridge {

using namespace grpc_detail;

namespace {

Status validate(const std::string &Address, const GrpcOptions &O) {
  auto Bad = [](const std::string &Why) {
    return Status(ErrorCode::InvalidArgument, "gRPC runner: " + Why);
  };
  if (Address.empty())
    return Bad("empty address");
  if (O.CallTimeout.count() <= 0 || O.ConnectTimeout.count() <= 0)
    return Bad("CallTimeout and ConnectTimeout must be positive");
  if (O.InitialBackoff.count() <= 0 || O.MaxBackoff < O.InitialBackoff)
    return Bad("backoff: need 0 < InitialBackoff <= MaxBackoff");
  if (O.LingerTimeout.count() < 0 || O.ShutdownTimeout.count() < 0)
    return Bad("LingerTimeout and ShutdownTimeout must not be negative");
  if (O.MaxMessageBytes < 1024)
    return Bad("MaxMessageBytes must be at least 1024");
  if (!support::fitsIn<int>(O.MaxMessageBytes))
    return Bad("MaxMessageBytes above 2 GiB is not supported by gRPC");
  if (O.UserMessages && O.Mode == GrpcMode::Training)
    return Bad("user-defined messages are for inference mode; training mode "
               "serves mlbridge.v1.CompilerService");
  return Status::ok();
}

} // namespace

Expected<std::unique_ptr<GrpcModelRunner>>
GrpcModelRunner::create(std::string Address,
                        std::vector<TensorSpec> FeatureSpecs,
                        std::optional<TensorSpec> Advice,
                        GrpcOptions Options) {
  if (Status S = validate(Address, Options); !S.isOk())
    return S;
  std::unique_ptr<GrpcModelRunner> R(new GrpcModelRunner(
      std::move(FeatureSpecs), std::move(Advice), Options));
  if (!R->constructionStatus().isOk())
    return R->constructionStatus();
  std::string Session =
      Options.SessionId.empty() ? randomSessionId() : Options.SessionId;
  Expected<std::unique_ptr<Impl>> I =
      Options.Mode == GrpcMode::Training
          ? createTrainingServer(std::move(Address), std::move(Options),
                                 std::move(Session))
          : createInferenceClient(std::move(Address), std::move(Options),
                                  std::move(Session));
  if (!I)
    return I.status();
  R->P = std::move(*I);
  return R;
}

GrpcModelRunner::GrpcModelRunner(std::vector<TensorSpec> FeatureSpecs,
                                 std::optional<TensorSpec> Advice,
                                 GrpcOptions Options)
    : ModelRunner(std::move(FeatureSpecs), std::move(Advice),
                  std::move(Options)) {
  detectConcurrentUse(); // free next to a remote call
}

GrpcModelRunner::~GrpcModelRunner() {
  if (P)
    (void)P->endSession();
}

Status GrpcModelRunner::connect() {
  Status S = P->connect();
  if (!S.isOk())
    markUnavailable(S);
  return S;
}

Status GrpcModelRunner::endSession() { return P->endSession(); }

int GrpcModelRunner::port() const { return P->port(); }
const std::string &GrpcModelRunner::address() const { return P->Address; }
const GrpcOptions &GrpcModelRunner::grpcOptions() const { return P->Opts; }
const std::string &GrpcModelRunner::sessionId() const { return P->SessionId; }
bool GrpcModelRunner::episodeEnded() const { return P->episodeEnded(); }
Status GrpcModelRunner::waitForEpisodeEnd(std::chrono::milliseconds Timeout) {
  return P->waitForEpisodeEnd(Timeout);
}

Status GrpcModelRunner::doSwitchContext(std::string_view Name) {
  P->switchContext(Name);
  return Status::ok();
}

Status GrpcModelRunner::doEvaluate(
    const std::vector<const TensorValue *> &Features, bool,
    const TensorSpec &Spec, TensorValue &Out) {
  remote::Failure Where = remote::Failure::Exchange;
  Status S = P->evaluate(Features, Spec, Out, Where);
  if (!S.isOk()) {
    S.addContext("gRPC '" + P->Address + "'");
    if (remote::makesUnavailable(S.code(), Where, remote::Framing::Messages))
      markUnavailable(S);
  }
  return S;
}

namespace {

Expected<std::unique_ptr<ModelRunner>>
makeGrpc(const RunnerSettings &S, const std::vector<TensorSpec> &Features,
         const TensorSpec &Advice) {
  if (S.Server.empty())
    return Status(ErrorCode::InvalidArgument,
                  "grpc: no server address given (host:port)");
  GrpcOptions O;
  O.Diagnostics = S.Diagnostics;
  O.CallTimeout = S.Timeout;
  O.ConnectTimeout = S.Timeout;
  auto G = GrpcModelRunner::create(S.Server, Features, Advice, O);
  if (!G)
    return G.takeStatus().addContext("grpc: " + S.Server);
  return G;
}

} // namespace

RunnerFactory grpcRunnerFactory() { return {RunnerKind::Grpc, "", makeGrpc}; }

} // namespace mlbridge
