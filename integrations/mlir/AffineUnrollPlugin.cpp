//===- AffineUnrollPlugin.cpp - A model picks affine unroll factors -------===//
//
// An MLIR 19 pass plugin. Its pass, mlbridge-affine-unroll, does what MLIR's
// own affine-loop-unroll does -- unroll every innermost affine.for loop --
// but asks a model for the unroll factor of each loop (docs/mlir.md). With
// no model, or when the model fails, it uses affine-loop-unroll's default
// factor (4), so its output is then exactly affine-loop-unroll's.
//
// The model is reached through any mlbridge runner (the same choice as the
// LLVM plugins, integrations/llvm/common/PluginSupport.h): named pipes or
// gRPC to a Python model while training, ONNX Runtime or a model compiled
// into the plugin when deployed. The integration is the library's three
// lines: make a runner, write the features in place, evaluate.
//
// The plugin links no MLIR or LLVM library: Debian's mlir-opt-19 exports
// MLIR's symbols and links libLLVM dynamically.
//
// Load: mlir-opt-19 --load-pass-plugin=MLBridgeMLIRUnroll.so
//         --pass-pipeline='builtin.module(mlbridge-affine-unroll{runner=onnx model=m.onnx})'
//
//===----------------------------------------------------------------------===//

#include "PluginSupport.h"

#include "mlbridge/model_runner.h"
#include "mlbridge/rl.h"

#include "mlir/Dialect/Affine/Analysis/LoopAnalysis.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/LoopUtils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"

#if MLBRIDGE_PLUGINS_HAVE_COMPILED
#include "mlbridge/compiled_model_runner.h"
#include "UnrollPolicy.h" // generated from models/mlir/unroll_policy.onnx
#endif

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace mlir;
namespace mlb = mlbridge;
namespace mlp = mlbridge::plugins;

namespace {

constexpr const char *Prefix = "mlbridge-affine-unroll";

/// The actions: the model answers an index into this table (or one score
/// per entry; the largest wins).
constexpr std::array<uint64_t, 5> UnrollFactors = {1, 2, 4, 8, 16};
/// affine-loop-unroll's default factor, 4.
constexpr int64_t DefaultAction = 2;

/// The features of one innermost loop, all int64 [1]; the order and names
/// are python/mlbridge/mlir FEATURES.
enum Feature : size_t {
  TripCount,       // constant trip count, -1 if not constant
  Depth,           // number of enclosing affine.for loops
  OuterTrips,      // product of the enclosing loops' constant trip counts
  BodyOps,         // operations in the body (nested ones included)
  Loads,           // affine.load / memref.load
  Stores,          // affine.store / memref.store
  FloatOps,        // arith operations on floating-point values
  IntOps,          // other arith operations
  IterArgs,        // loop-carried values (reductions)
  Step,            // the loop's step
  NumFeatures
};

constexpr std::array<const char *, NumFeatures> FeatureNames = {
    "trip_count", "depth",     "outer_trips", "body_ops", "loads",
    "stores",     "float_ops", "int_ops",     "iter_args", "step"};

std::vector<mlb::TensorSpec> featureSpecs() {
  std::vector<mlb::TensorSpec> Specs;
  for (const char *Name : FeatureNames)
    Specs.push_back(mlb::TensorSpec::create<int64_t>(Name));
  return Specs;
}

int64_t saturatingMul(int64_t A, int64_t B) {
  constexpr int64_t Cap = int64_t(1) << 40;
  return (A > Cap / (B > 0 ? B : 1)) ? Cap : A * B;
}

std::array<int64_t, NumFeatures> loopFeatures(affine::AffineForOp Loop) {
  std::array<int64_t, NumFeatures> F{};
  std::optional<uint64_t> Trips = affine::getConstantTripCount(Loop);
  F[TripCount] = Trips ? static_cast<int64_t>(*Trips) : -1;
  F[OuterTrips] = 1;
  for (auto Outer = Loop->getParentOfType<affine::AffineForOp>(); Outer;
       Outer = Outer->getParentOfType<affine::AffineForOp>()) {
    ++F[Depth];
    std::optional<uint64_t> T = affine::getConstantTripCount(Outer);
    F[OuterTrips] = T ? saturatingMul(F[OuterTrips], static_cast<int64_t>(*T))
                      : -1;
    if (!T)
      break;
  }
  Loop.getBody()->walk([&](Operation *Op) {
    if (Op->hasTrait<OpTrait::IsTerminator>())
      return;
    ++F[BodyOps];
    if (isa<affine::AffineLoadOp, memref::LoadOp>(Op))
      ++F[Loads];
    else if (isa<affine::AffineStoreOp, memref::StoreOp>(Op))
      ++F[Stores];
    else if (Op->getDialect() &&
             Op->getDialect()->getNamespace() == arith::ArithDialect::getDialectNamespace()) {
      bool IsFloat = Op->getNumResults() > 0 &&
                     isa<FloatType>(getElementTypeOrSelf(Op->getResult(0)));
      ++F[IsFloat ? FloatOps : IntOps];
    }
  });
  F[IterArgs] = static_cast<int64_t>(Loop.getNumIterOperands());
  F[Step] = Loop.getStepAsInt();
  return F;
}

/// affine-loop-unroll's choice of loops: every affine.for with no affine.for
/// inside, in walk (post-)order.
std::vector<affine::AffineForOp> innermostLoops(func::FuncOp F) {
  std::vector<affine::AffineForOp> Loops;
  F.walk([&](affine::AffineForOp Loop) {
    bool HasNested = Loop.getBody()
                         ->walk([](affine::AffineForOp) { return WalkResult::interrupt(); })
                         .wasInterrupted();
    if (!HasNested)
      Loops.push_back(Loop);
  });
  return Loops;
}

/// MLIR 19's loopUnrollByFactor miscompiles a loop with several iter_args
/// when it needs a cleanup loop (the trip count is not a multiple of the
/// factor): the cleanup loop starts every value from the last result of the
/// unrolled loop (affine-loop-unroll{unroll-factor=16} on kernels/gesummv
/// changes its results). Such loops get the largest factor of the table that
/// needs no cleanup loop; factor 4 on our kernels never hits this.
uint64_t safeFactor(affine::AffineForOp Loop, uint64_t Factor) {
  if (Loop.getNumIterOperands() < 2)
    return Factor;
  std::optional<uint64_t> Trips = affine::getConstantTripCount(Loop);
  while (Factor > 1 && !(Trips && *Trips % Factor == 0))
    Factor /= 2; // the table's factors are powers of two
  return Factor;
}

#if MLBRIDGE_PLUGINS_HAVE_COMPILED
mlb::Expected<std::unique_ptr<mlb::ModelRunner>> makeEmbeddedRunner() {
  auto R = mlb::CompiledModelRunner::create<mlbridge_plugins::UnrollPolicy>();
  if (!R)
    return R.takeStatus();
  return std::unique_ptr<mlb::ModelRunner>(std::move(*R));
}
constexpr const char *EmbeddedModelName = "UnrollPolicy";
#else
constexpr const char *EmbeddedModelName = "";
#endif

struct AffineUnrollPass
    : public PassWrapper<AffineUnrollPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AffineUnrollPass)

  AffineUnrollPass() = default;
  AffineUnrollPass(const AffineUnrollPass &Other) : PassWrapper(Other) {}

  StringRef getArgument() const final { return "mlbridge-affine-unroll"; }
  StringRef getDescription() const final {
    return "Unroll innermost affine loops by a factor a model picks per loop "
           "(ML-Compiler-Bridge; docs/mlir.md)";
  }
  void getDependentDialects(DialectRegistry &Registry) const override {
    Registry.insert<affine::AffineDialect, arith::ArithDialect>();
  }

  // Options; each falls back to an environment variable when not given.
  Option<std::string> RunnerOpt{
      *this, "runner",
      llvm::cl::desc("auto | onnx | compiled | pipe | grpc | default (factor "
                     "4). Env: MLBRIDGE_MLIR_RUNNER"),
      llvm::cl::init("auto")};
  Option<std::string> ModelOpt{
      *this, "model", llvm::cl::desc("ONNX file (onnx). Env: MLBRIDGE_MLIR_MODEL")};
  Option<std::string> ChannelOpt{
      *this, "channel",
      llvm::cl::desc("FIFO base path (pipe). Env: MLBRIDGE_MLIR_CHANNEL")};
  Option<std::string> ServerOpt{
      *this, "server",
      llvm::cl::desc("host:port of the model server (grpc). Env: MLBRIDGE_MLIR_SERVER")};
  Option<std::string> FormatOpt{
      *this, "format",
      llvm::cl::desc("pipe format: bitstream | json. Env: MLBRIDGE_MLIR_FORMAT"),
      llvm::cl::init("bitstream")};
  Option<unsigned> TimeoutOpt{
      *this, "timeout-ms",
      llvm::cl::desc("deadline to open the channel and per decision. Env: "
                     "MLBRIDGE_MLIR_TIMEOUT_MS"),
      llvm::cl::init(30000)};
  Option<std::string> LogOpt{
      *this, "log",
      llvm::cl::desc("append one JSON line per module (runner, factors, "
                     "fallbacks) to this file. Env: MLBRIDGE_MLIR_LOG")};

  template <typename T>
  static std::string setting(const Option<T> &O, const char *Env) {
    if (!O.hasValue())
      if (const char *V = std::getenv(Env); V && *V)
        return V;
    if constexpr (std::is_same_v<T, std::string>)
      return O.getValue();
    else
      return std::to_string(O.getValue());
  }

  void runOnOperation() override;

private:
  std::unique_ptr<mlb::ModelRunner> makeModel(std::string &RunnerName);
  void writeLog(const std::string &Runner, const std::vector<int64_t> &Factors,
                unsigned Fallbacks);
};

std::unique_ptr<mlb::ModelRunner>
AffineUnrollPass::makeModel(std::string &RunnerName) {
  ModuleOp M = getOperation();
  mlp::RunnerConfig C;
  const std::string KindText = setting(RunnerOpt, "MLBRIDGE_MLIR_RUNNER");
  std::optional<mlp::RunnerKind> Kind = mlp::parseRunnerKind(KindText);
  if (!Kind) {
    M.emitWarning() << Prefix << ": unknown runner '" << KindText
                    << "' (auto, onnx, compiled, pipe, grpc, default); using factor 4";
    return nullptr;
  }
  C.Kind = *Kind;
  C.Model = setting(ModelOpt, "MLBRIDGE_MLIR_MODEL");
  C.Channel = setting(ChannelOpt, "MLBRIDGE_MLIR_CHANNEL");
  C.Server = setting(ServerOpt, "MLBRIDGE_MLIR_SERVER");
  C.Format = setting(FormatOpt, "MLBRIDGE_MLIR_FORMAT");
  C.Timeout = std::chrono::milliseconds(
      std::strtoul(setting(TimeoutOpt, "MLBRIDGE_MLIR_TIMEOUT_MS").c_str(), nullptr, 10));
  C.EmbeddedModel = EmbeddedModelName;
  const mlp::RunnerKind K = mlp::resolveRunnerKind(C);
  RunnerName = mlp::runnerKindName(K);
  if (K == mlp::RunnerKind::Default)
    return nullptr;
  if (K == mlp::RunnerKind::Pipe)
    for (const char *Suffix : {".in", ".out"})
      if (!llvm::sys::fs::exists(C.Channel + Suffix)) {
        M.emitWarning() << Prefix << ": pipe: no FIFO '" << C.Channel << Suffix
                        << "'; using factor 4";
        RunnerName = "default";
        return nullptr;
      }
  mlp::RunnerRequest Req;
  Req.Features = featureSpecs();
  Req.Advice = mlb::TensorSpec::create<int64_t>("unroll_action");
  Location Loc = M.getLoc();
  Req.Diagnostics = [Loc](mlb::Severity S, std::string_view Msg) {
    if (S != mlb::Severity::Note)
      emitWarning(Loc) << Prefix << ": " << llvm::StringRef(Msg.data(), Msg.size());
  };
#if MLBRIDGE_PLUGINS_HAVE_COMPILED
  Req.MakeEmbedded = makeEmbeddedRunner;
#endif
  auto Runner = mlp::makeRunner(K, C, Req);
  if (!Runner) {
    M.emitWarning() << Prefix << ": cannot use the model: "
                    << Runner.status().toString() << "; using factor 4";
    RunnerName = "default";
    return nullptr;
  }
  return std::move(*Runner);
}

void AffineUnrollPass::writeLog(const std::string &Runner,
                                const std::vector<int64_t> &Factors,
                                unsigned Fallbacks) {
  const std::string Path = setting(LogOpt, "MLBRIDGE_MLIR_LOG");
  if (Path.empty())
    return;
  std::string Line = "{\"runner\": \"" + Runner + "\", \"factors\": [";
  for (size_t I = 0; I < Factors.size(); ++I)
    Line += (I ? ", " : "") + std::to_string(Factors[I]);
  Line += "], \"fallbacks\": " + std::to_string(Fallbacks) + "}\n";
  // One fwrite of the whole line in append mode: concurrent mlir-opt
  // processes do not interleave lines.
  if (std::FILE *F = std::fopen(Path.c_str(), "a")) {
    std::fwrite(Line.data(), 1, Line.size(), F);
    std::fclose(F);
  } else {
    getOperation().emitWarning() << Prefix << ": cannot open log file '" << Path << "'";
  }
}

void AffineUnrollPass::runOnOperation() {
  std::string RunnerName;
  std::unique_ptr<mlb::ModelRunner> Runner = makeModel(RunnerName);
  mlp::FeatureBinding Binding;
  if (Runner) {
    if (mlb::Status S = Binding.bind(*Runner, featureSpecs()); !S.isOk()) {
      getOperation().emitWarning()
          << Prefix << ": the model does not fit this pass: " << S.toString()
          << "; using factor 4";
      Runner.reset();
      RunnerName = "default";
    }
  }
  std::vector<int64_t> Factors;
  unsigned Fallbacks = 0;
  for (func::FuncOp F : getOperation().getOps<func::FuncOp>()) {
    if (F.isExternal())
      continue;
    if (Runner)
      if (mlb::Status S = Runner->switchContext(F.getName().str()); !S.isOk()) {
        F.emitWarning() << Prefix << ": the model failed (" << S.toString()
                        << "); using factor 4 from here on";
        Runner.reset();
      }
    for (affine::AffineForOp Loop : innermostLoops(F)) {
      int64_t Action = DefaultAction;
      if (Runner) {
        const std::array<int64_t, NumFeatures> V = loopFeatures(Loop);
        for (size_t I = 0; I < NumFeatures; ++I)
          Binding.write(*Runner, I, &V[I]);
        mlb::Status S = Runner->evaluateRaw();
        mlb::Expected<int64_t> A =
            S.isOk() ? mlb::rl::decodeAction(Runner->advice(), mlb::rl::ActionRule::Auto)
                     : mlb::Expected<int64_t>(S);
        if (A && *A >= 0 && *A < static_cast<int64_t>(UnrollFactors.size())) {
          Action = *A;
        } else {
          // A model that failed once is not asked again in this run: a
          // dead peer would otherwise cost a timeout per loop.
          Loop.emitWarning() << Prefix << ": the model failed ("
                             << (A ? "action " + std::to_string(*A) + " out of range"
                                   : A.status().toString())
                             << "); using factor 4 from here on";
          ++Fallbacks;
          Runner.reset();
        }
      }
      const uint64_t Factor =
          safeFactor(Loop, UnrollFactors[static_cast<size_t>(Action)]);
      Factors.push_back(static_cast<int64_t>(Factor));
      // affine-loop-unroll's own call (cleanUpUnroll = false).
      (void)affine::loopUnrollByFactor(Loop, Factor, nullptr, false);
    }
  }
  writeLog(RunnerName, Factors, Fallbacks);
}

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK __attribute__((visibility("default")))
::mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "MLBridgeMLIRUnroll", LLVM_VERSION_STRING,
          [] { PassRegistration<AffineUnrollPass>(); }};
}
