//===- AffineUnrollPlugin.cpp - A model picks affine unroll factors -------===//
//
// An MLIR 19 pass plugin. Its pass, mlbridge-affine-unroll, does what MLIR's
// own affine-loop-unroll does -- unroll every innermost affine.for loop --
// but asks a model for the unroll factor of each loop (docs/mlir.md). With
// no model, or when the model fails, it uses affine-loop-unroll's default
// factor (4), so its output is then exactly affine-loop-unroll's.
//
// The model is reached through any mlbridge runner (the same settings and
// choice as every integration, integrations/common/RunnerSettings.h): named pipes or
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

#include "ProtocolDescription.h"
#include "RunnerSettings.h"

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
#include "MLIRCompat.h" // mlir/Tools/Plugins/PassPlugin.h
#include "llvm/Config/llvm-config.h"

#if MLBRIDGE_INTEGRATION_HAVE_COMPILED
#include "UnrollPolicy.h" // generated from models/mlir/unroll_policy.onnx
#endif

#include <array>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace mlir;
namespace mlb = mlbridge;
namespace mli = mlbridge::integrations;

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

mlb::TensorSpec adviceSpec() { return mlb::TensorSpec::create<int64_t>("unroll_action"); }

/// The pass's protocol (ProtocolDescription.h): the features, the advice
/// and the unroll factor each action index stands for.
std::string protocolDescription() {
  mli::ProtocolList Factors{"UnrollFactor", {}};
  for (uint64_t F : UnrollFactors)
    Factors.Items.push_back(std::to_string(F));
  return mli::describeProtocol(featureSpecs(), {}, adviceSpec(), {Factors});
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

constexpr mli::EmbeddedModelRef Embedded = MLBRIDGE_EMBEDDED_MODEL(UnrollPolicy);

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
  // The runner options (integrations/common/RunnerSettings.h) are runner=,
  // model=, channel=, server=, format=, timeout-ms=.
  std::array<std::unique_ptr<Option<std::string>>, mli::NumRunnerOptions>
      RunnerOpts = declareRunnerOptions();
  Option<std::string> LogOpt{
      *this, "log",
      llvm::cl::desc("append one JSON line per module (docs/mlir.md) to this "
                     "file. Env: MLBRIDGE_MLIR_LOG")};
  Option<std::string> DescribeOpt{
      *this, "describe",
      llvm::cl::desc("write the pass's protocol (features, advice, unroll "
                     "factors) as JSON to this file. Env: MLBRIDGE_MLIR_DESCRIBE")};

  void runOnOperation() override;

private:
  std::array<std::unique_ptr<Option<std::string>>, mli::NumRunnerOptions>
  declareRunnerOptions();
  /// The model's runner, or none (factor 4); RunnerName says which.
  std::optional<mli::BoundRunner> makeModel(std::string &RunnerName);
  void writeLog(const std::string &Runner, const std::vector<int64_t> &Factors,
                unsigned Asked, unsigned Fallbacks);
  void writeDescription();
};

constexpr const char *EnvPrefix = "MLBRIDGE_MLIR_";

std::array<std::unique_ptr<Pass::Option<std::string>>, mli::NumRunnerOptions>
AffineUnrollPass::declareRunnerOptions() {
  // The descriptions live as long as the plugin (the options keep a
  // StringRef to them).
  static const std::array<std::string, mli::NumRunnerOptions> Help = [] {
    std::array<std::string, mli::NumRunnerOptions> H;
    for (size_t I = 0; I < H.size(); ++I)
      H[I] = std::string(mli::RunnerOptionTable[I].Help) + " Env: " +
             EnvPrefix + mli::RunnerOptionTable[I].EnvSuffix;
    return H;
  }();
  std::array<std::unique_ptr<Option<std::string>>, mli::NumRunnerOptions> Opts;
  for (size_t I = 0; I < Opts.size(); ++I)
    Opts[I] = std::make_unique<Option<std::string>>(
        *this, mli::RunnerOptionTable[I].Key, llvm::cl::desc(Help[I]),
        llvm::cl::init(mli::RunnerOptionTable[I].Default));
  return Opts;
}

std::string moduleName(ModuleOp M) {
  if (auto L = dyn_cast<FileLineColLoc>(M.getLoc()))
    return L.getFilename().str();
  return "";
}

std::optional<mli::BoundRunner>
AffineUnrollPass::makeModel(std::string &RunnerName) {
  ModuleOp M = getOperation();
  RunnerName = "default";
  auto Settings = mli::readRunnerSettings(
      [this](const mli::RunnerOptionInfo &O) {
        const Option<std::string> &Opt =
            *RunnerOpts[static_cast<size_t>(&O - mli::RunnerOptionTable)];
        return std::make_pair(Opt.getValue(), Opt.hasValue());
      },
      EnvPrefix, Embedded.Name);
  if (!Settings) {
    M.emitWarning() << Prefix << ": " << Settings.status().message()
                    << "; using factor 4";
    return std::nullopt;
  }
  const mli::RunnerKind K = mli::resolveRunnerKind(*Settings);
  if (K == mli::RunnerKind::Default)
    return std::nullopt;
  mli::RunnerRequest Req;
  Req.Features = featureSpecs();
  Req.Advice = adviceSpec();
  Location Loc = M.getLoc();
  Req.Diagnostics = [Loc](mlb::Severity S, std::string_view Msg) {
    if (S != mlb::Severity::Note)
      emitWarning(Loc) << Prefix << ": " << llvm::StringRef(Msg.data(), Msg.size());
  };
  Req.MakeEmbedded = Embedded.Make;
  auto Bound = mli::makeBoundRunner(K, *Settings, Req, "model", "this pass");
  if (!Bound) {
    M.emitWarning() << Prefix << ": " << Bound.status().message()
                    << "; using factor 4";
    return std::nullopt;
  }
  RunnerName = mli::runnerKindName(K);
  return std::move(*Bound);
}

void AffineUnrollPass::writeLog(const std::string &Runner,
                                const std::vector<int64_t> &Factors,
                                unsigned Asked, unsigned Fallbacks) {
  const std::string Path =
      mli::settingValue(LogOpt.hasValue(), LogOpt.getValue(), "MLBRIDGE_MLIR_LOG");
  if (Path.empty())
    return;
  const std::string Line =
      mli::LogLine(Prefix, moduleName(getOperation()), Runner, Asked, Fallbacks)
          .add("factors", Factors)
          .str();
  if (mlb::Status S = mli::appendLine(Path, Line); !S.isOk())
    getOperation().emitWarning() << Prefix << ": " << S.message();
}

void AffineUnrollPass::writeDescription() {
  const std::string Path = mli::settingValue(DescribeOpt.hasValue(), DescribeOpt.getValue(),
                                             "MLBRIDGE_MLIR_DESCRIBE");
  if (Path.empty())
    return;
  const std::string Json = protocolDescription() + "\n";
  std::FILE *F = std::fopen(Path.c_str(), "w");
  const bool Written = F && std::fwrite(Json.data(), 1, Json.size(), F) == Json.size();
  if ((F && std::fclose(F) != 0) || !Written)
    getOperation().emitWarning() << Prefix << ": cannot write the protocol to " << Path;
}

void AffineUnrollPass::runOnOperation() {
  writeDescription();
  std::string RunnerName;
  std::optional<mli::BoundRunner> Model = makeModel(RunnerName);
  std::unique_ptr<mlb::ModelRunner> Runner =
      Model ? std::move(Model->Runner) : nullptr;
  const mli::FeatureBinding Binding =
      Model ? std::move(Model->Binding) : mli::FeatureBinding();
  std::vector<int64_t> Factors;
  unsigned Asked = 0, Fallbacks = 0;
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
        ++Asked;
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
  writeLog(RunnerName, Factors, Asked, Fallbacks);
}

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK __attribute__((visibility("default")))
::mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "MLBridgeMLIRUnroll", LLVM_VERSION_STRING,
          [] { PassRegistration<AffineUnrollPass>(); }};
}
