//===- PhaseOrderEnv.cpp - The phase-ordering episode ---------------------===//
//
// The episode of MLBridgePhaseOrder.so, an mlbridge::rl::Environment the
// pass runs with an rl::Driver (PhaseOrderPlugin.cpp): PhaseOrderEnv's
// reset, observation, step (an action of PhaseOrderActions.cpp, the
// reward's code size, the no-op that ends the episode), the features it
// writes (PhaseOrderProtocol.def) and the measurement of code size: the
// bytes of executable sections in the object the host's own TargetMachine
// makes of a copy of the module, or TargetTransformInfo's estimate.
//
// What the agent sees and how a step is judged, apart from what the actions
// do and from the options that set an episode up.
//
//===----------------------------------------------------------------------===//

#include "PhaseOrder.h"
#include "PluginEmbeddings.h"

#include "LLVMCompat.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/TargetTransformInfo.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/StructuralHash.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace llvm;
namespace mlb = mlbridge;
namespace llvm_compat = mlbridge::llvm_compat;

namespace mlbridge::phaseorder {

// ---- the features ------------------------------------------------------------------

std::vector<mlb::TensorSpec> requiredFeatureSpecs() {
  return {
#define MLB_FEATURE(E, Name, Type, ...) mlb::TensorSpec::create<Type>(#Name, {__VA_ARGS__}),
#include "PhaseOrderProtocol.def"
  };
}

std::vector<mlb::TensorSpec> optionalFeatureSpecs() {
  return {
#define MLB_OPTIONAL_FEATURE(E, Name, Type, ...)                                 \
  mlb::TensorSpec::create<Type>(#Name, {__VA_ARGS__}),
#include "PhaseOrderProtocol.def"
  };
}

std::vector<mlb::TensorSpec> phaseOrderFeatureSpecs(bool Lookahead) {
  std::vector<mlb::TensorSpec> Specs = requiredFeatureSpecs();
  if (Lookahead)
    for (mlb::TensorSpec &S : optionalFeatureSpecs())
      Specs.push_back(std::move(S));
  return Specs;
}

mlb::TensorSpec protocolAdviceSpec() {
#define MLB_ADVICE(Name, Type, ...) return mlb::TensorSpec::create<Type>(#Name, {__VA_ARGS__});
#include "PhaseOrderProtocol.def"
}

// ---- code size ---------------------------------------------------------------------

namespace {

/// The code generator that measures .text: a TargetMachine for the
/// module's triple, relocation model from its PIC level, the optimization
/// level clang uses for -Os/-Oz (Default). The CPU and features come from
/// each function's attributes, as in clang's own code generation. (LLVM 19's
/// PassBuilder does not hand its TargetMachine to plugins.)
mlb::Expected<std::unique_ptr<TargetMachine>> makeSizingTarget(const Module &M) {
  std::string Err;
  const Triple T(M.getTargetTriple());
  const Target *Tgt = TargetRegistry::lookupTarget(llvm_compat::tripleArg(T), Err);
  if (!Tgt)
    return mlb::Status(mlb::ErrorCode::InvalidArgument,
                       "no target for triple '" + T.str() + "': " + Err);
  const Reloc::Model RM =
      M.getPICLevel() == PICLevel::NotPIC ? Reloc::Static : Reloc::PIC_;
  std::unique_ptr<TargetMachine> TM(Tgt->createTargetMachine(
      llvm_compat::tripleArg(T), "", "", TargetOptions(), RM, std::nullopt,
      CodeGenOptLevel::Default));
  if (!TM)
    return mlb::Status(mlb::ErrorCode::Internal,
                       "cannot make a TargetMachine for '" + T.str() + "'");
  return TM;
}

/// The bytes of executable sections (.text and friends) in the object file
/// \p TM makes of a copy of \p M with the machine-outliner decision
/// \p Outline -- what the corpus and `size` call the object's .text.
mlb::Expected<int64_t> textSize(const Module &M, TargetMachine &TM, bool Outline) {
  std::unique_ptr<Module> Copy = CloneModule(M);
  markOutliner(*Copy, Outline);
  SmallVector<char, 0> Object;
  raw_svector_ostream OS(Object);
  legacy::PassManager CodeGen;
  if (TM.addPassesToEmitFile(CodeGen, OS, nullptr, CodeGenFileType::ObjectFile))
    return mlb::Status(mlb::ErrorCode::Internal,
                       "the target cannot write object files");
  CodeGen.run(*Copy);
  auto Obj = object::ObjectFile::createObjectFile(
      MemoryBufferRef(StringRef(Object.data(), Object.size()), "code-size"));
  if (!Obj)
    return mlb::Status(mlb::ErrorCode::Internal,
                       "cannot read the object just made: " +
                           toString(Obj.takeError()));
  int64_t Size = 0;
  for (const object::SectionRef &S : (*Obj)->sections())
    if (S.isText())
      Size += static_cast<int64_t>(S.getSize());
  return Size;
}

/// The .text of a copy of \p M after action \p A, from the machine-outliner
/// decision \p Outline. The copy is optimized with the host's own analysis
/// managers (the same analyses, e.g. clang's TargetLibraryInfo, as the real
/// step), and its cached results are cleared before the copy goes away, so
/// nothing stale keyed by its address stays behind.
mlb::Expected<int64_t> sizeAfterAction(const Module &M, int64_t A, PassBuilder &PB,
                                       ModuleAnalysisManager &MAM,
                                       TargetMachine &TM, bool Outline) {
  std::unique_ptr<Module> Copy = CloneModule(M);
  mlb::Status S = applyAction(*Copy, A, PB, MAM, Outline);
  mlb::Expected<int64_t> Size =
      S.isOk() ? textSize(*Copy, TM, Outline) : mlb::Expected<int64_t>(std::move(S));
  MAM.clear(*Copy, Copy->getName()); // also clears the function analyses
  return Size;
}

} // namespace

// ---- the environment --------------------------------------------------------------

mlb::Status PhaseOrderEnv::reset() {
  Steps = 0;
  Runs.fill(0);
  Trace.clear();
  Sizes.clear();
  if (mlb::Status S = measure(); !S.isOk())
    return S;
  if (Size != SizeMeasure::None) // the log lists only measured sizes
    Sizes.push_back(CodeSizeNow);
  if (MaxSteps == 0)
    setDone();
  return mlb::Status::ok();
}

mlb::Status PhaseOrderEnv::observe(mlb::ModelRunner &Runner) {
  if (Lookahead && Binding.has(FLookahead))
    lookahead();
  writeFeatures(Runner, /*Done=*/false);
  return mlb::Status::ok();
}

mlb::Status PhaseOrderEnv::step(const mlb::rl::Action &A) {
  if (A.Index < 0 || A.Index >= NumActions)
    return mlb::Status(mlb::ErrorCode::InvalidArgument,
                       "action " + std::to_string(A.Index) +
                           " is not one of the " + std::to_string(NumActions) +
                           " actions (0.." + std::to_string(NumActions - 1) +
                           ", " + std::to_string(StopAction) + " = stop)");
  Trace.push_back(A.Index);
  if (A.Index == StopAction) {
    setDone();
    return mlb::Status::ok();
  }
  if (spent(A.Index)) { // as a no-op: a step that leaves the module, the end
    ++Steps;
    ++NoOps;
    Observation[Step] = static_cast<float>(Steps);
    if (Size != SizeMeasure::None)
      Sizes.push_back(CodeSizeNow);
    if (Verbose)
      mlp::diagnose(M.getContext(), Prefix, DS_Remark,
                    "step " + Twine(Steps) + ": " + ActionNames[A.Index] +
                        " has had its runs in this episode: the episode ends");
    setDone();
    return mlb::Status::ok();
  }
  ++Runs[A.Index];
  const int64_t Before = CodeSizeNow;
  const std::array<float, NumObservations> ObservedBefore = Observation;
  const auto HashBefore = StructuralHash(M, /*DetailedHash=*/true);
  // Parsing of the pipelines was checked when the pass started.
  if (mlb::Status S = applyAction(M, A.Index, PB, MAM, Outline); !S.isOk())
    return S;
  ++Steps;
  if (mlb::Status S = measure(); !S.isOk())
    return S;
  if (Size != SizeMeasure::None)
    Sizes.push_back(CodeSizeNow);
  // No-op detection: the module is as it was, so the state the agent sees
  // next is the one it just acted on; a deterministic agent would choose
  // the same action again until the step budget ran out. The episode ends.
  auto SameCounts = [&] {
    for (size_t I = 0; I < NumObservations; ++I)
      if (I != Step && Observation[I] != ObservedBefore[I])
        return false;
    return true;
  };
  const bool NoOp = StructuralHash(M, /*DetailedHash=*/true) == HashBefore &&
                    SameCounts() && CodeSizeNow == Before;
  Changed = Changed || !NoOp;
  if (NoOp)
    ++NoOps;
  if (Verbose)
    mlp::diagnose(M.getContext(), Prefix, DS_Remark,
                  "step " + Twine(Steps) + ": " + ActionNames[A.Index] +
                      ", code size " + Twine(Before) + " -> " +
                      Twine(CodeSizeNow) + (NoOp ? " (no change)" : ""));
  if (Steps >= MaxSteps || NoOp)
    setDone();
  return mlb::Status::ok();
}

void PhaseOrderEnv::writeFeatures(mlb::ModelRunner &Runner, bool Done) {
  Binding.write(Runner, FObservation, Observation.data());
  if (Binding.has(FEmbedding))
    Binding.write(Runner, FEmbedding, Embedding.data());
  const int64_t Size = CodeSizeNow, Step = Steps, D = Done ? 1 : 0;
  Binding.write(Runner, FCodeSize, &Size);
  Binding.write(Runner, FStep, &Step);
  Binding.write(Runner, FDone, &D);
  if (Binding.has(FLookahead))
    Binding.write(Runner, FLookahead, LookaheadSizes.data());
}

void PhaseOrderEnv::lookahead() {
  if (!SizingTarget) { // measure() makes it whenever Size is Text
    LookaheadSizes.fill(-1);
    return;
  }
  for (int64_t A = 0; A < NumPassActions; ++A) {
    LookaheadSizes[A] = -1;
    if (spent(A)) // not available: asking for it would end the episode
      continue;
    if (auto T = sizeAfterAction(M, A, PB, MAM, *SizingTarget, Outline))
      LookaheadSizes[A] = *T;
  }
}

namespace {

template <typename T> bool isA(const Instruction &I) { return isa<T>(I); }

/// The observation columns that count instructions by their class. The
/// classes are disjoint but for intrinsics, which are calls too: the first
/// match counts. Binary operators and branches are split further
/// (instructionColumn).
struct ClassColumn {
  bool (*Is)(const Instruction &);
  Obs Column;
};
constexpr ClassColumn ClassColumns[] = {
    {isA<LoadInst>, Loads},   {isA<StoreInst>, Stores},       {isA<AllocaInst>, Allocas},
    {isA<PHINode>, Phis},     {isA<GetElementPtrInst>, GEPs}, {isA<CastInst>, Casts},
    {isA<UnaryOperator>, FPArith}, {isA<CmpInst>, Compares},  {isA<SelectInst>, Selects},
    {isA<IntrinsicInst>, Intrinsics}, {isA<CallBase>, Calls}, {isA<SwitchInst>, Switches},
    {isA<ReturnInst>, Returns},
};

/// The column of "observation" that counts \p I, or NumObservations for none.
size_t instructionColumn(const Instruction &I) {
  if (isa<BinaryOperator>(I))
    return I.getType()->isFPOrFPVectorTy() ? FPArith : IntArith;
  if (auto *Br = dyn_cast<BranchInst>(&I))
    return Br->isConditional() ? CondBranches : UncondBranches;
  for (const ClassColumn &C : ClassColumns)
    if (C.Is(I))
      return C.Column;
  return NumObservations;
}

} // namespace

mlb::Status PhaseOrderEnv::measure() {
  std::array<int64_t, NumObservations> C{};
  FunctionAnalysisManager &FAM =
      MAM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager();
  for (Function &F : M) {
    if (F.isDeclaration())
      continue;
    ++C[Functions];
    if (F.hasFnAttribute("nooutline"))
      ++C[NoOutline];
    const TargetTransformInfo &TTI = FAM.getResult<TargetIRAnalysis>(F);
    const LoopInfo &LI = FAM.getResult<LoopAnalysis>(F);
    for (const Loop *L : LI.getLoopsInPreorder()) {
      ++C[Loops];
      C[MaxLoopDepth] =
          std::max<int64_t>(C[MaxLoopDepth], static_cast<int64_t>(L->getLoopDepth()));
    }
    for (BasicBlock &BB : F) {
      ++C[BasicBlocks];
      C[CFGEdges] += static_cast<int64_t>(succ_size(&BB));
      for (Instruction &I : BB) {
        ++C[Instructions];
        C[TTICodeSize] += llvm_compat::costValue(
            TTI.getInstructionCost(&I, TargetTransformInfo::TCK_CodeSize), 1);
        if (const size_t Column = instructionColumn(I); Column < NumObservations)
          ++C[Column];
      }
    }
  }
  for (const GlobalVariable &G : M.globals())
    if (!G.isDeclaration())
      ++C[GlobalVariables];
  C[MachineOutliner] = Outline ? 1 : 0;
  C[Step] = Steps;
  for (size_t I = 0; I < NumObservations; ++I)
    Observation[I] = static_cast<float>(C[I]);
  if (Embedder && Binding.has(FEmbedding)) {
    Embedder->invalidateAll(); // the last action may have changed any function
    const mlb::ir2vec::Vector V = Embedder->module(M);
    const double PerInstruction = 1.0 / std::max<int64_t>(1, C[Instructions]);
    for (size_t I = 0; I < static_cast<size_t>(EmbeddingDim); ++I)
      Embedding[I] = I < V.size() ? static_cast<float>(V[I] * PerInstruction) : 0.0f;
  }
  CodeSizeNow = 0;
  if (Size == SizeMeasure::TTI) {
    CodeSizeNow = C[TTICodeSize];
  } else if (Size == SizeMeasure::Text) {
    if (!SizingTarget) {
      auto TM = makeSizingTarget(M);
      if (!TM)
        return TM.takeStatus();
      SizingTarget = std::move(*TM);
    }
    mlb::Expected<int64_t> T = textSize(M, *SizingTarget, Outline);
    if (!T)
      return mlb::Status(mlb::ErrorCode::Internal,
                         "cannot measure .text: " + T.status().toString());
    CodeSizeNow = *T;
  }
  return mlb::Status::ok();
}

} // namespace mlbridge::phaseorder
