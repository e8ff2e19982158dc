//===- Features.cpp - Loop and function features (mlbridge/llvm/Features.h) ===//
#include "mlbridge/llvm/Features.h"

#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/InstrTypes.h"
#include "llvm/IR/Instructions.h"

namespace mlbridge::plugins {

const char *const LoopFeatures::Names[LoopFeatures::Count] = {
    "trip_count", "max_trip_count", "depth", "innermost", "blocks",
    "instructions", "loads", "stores", "calls", "exits"};

const char *const FunctionFeatures::Names[FunctionFeatures::Count] = {
    "fn_blocks", "fn_instructions", "fn_loads", "fn_stores",
    "fn_calls", "fn_loops", "fn_max_loop_depth"};

std::array<int64_t, LoopFeatures::Count> LoopFeatures::values() const {
  return {TripCount, MaxTripCount, Depth, Innermost, Blocks,
          Instructions, Loads, Stores, Calls, Exits};
}

std::array<int64_t, FunctionFeatures::Count> FunctionFeatures::values() const {
  return {Blocks, Instructions, Loads, Stores, Calls, Loops, MaxLoopDepth};
}

namespace {

// Instructions, loads, stores and calls of one block, added to Out.
template <typename Counts> void countBlock(const llvm::BasicBlock &BB, Counts &Out) {
  for (const llvm::Instruction &I : BB) {
    ++Out.Instructions;
    if (llvm::isa<llvm::LoadInst>(I))
      ++Out.Loads;
    else if (llvm::isa<llvm::StoreInst>(I))
      ++Out.Stores;
    else if (llvm::isa<llvm::CallBase>(I))
      ++Out.Calls;
  }
}

template <size_t N>
std::vector<TensorSpec> int64Specs(const char *const (&Names)[N]) {
  std::vector<TensorSpec> Specs;
  Specs.reserve(N);
  for (const char *Name : Names)
    Specs.push_back(TensorSpec::create<int64_t>(Name));
  return Specs;
}

template <typename F> Status setAll(ModelRunner &R, const F &Features) {
  const auto Values = Features.values();
  for (size_t I = 0; I < F::Count; ++I) {
    Status S = R.setFeature(F::Names[I], Values[I]);
    if (!S.isOk())
      return S;
  }
  return Status::ok();
}

} // namespace

LoopFeatures loopFeatures(const llvm::Loop &L, llvm::ScalarEvolution &SE) {
  LoopFeatures Out;
  // Both counts are of the loop's latch-controlled exit; 0 when SCEV
  // cannot tell (the convention of getSmallConstantTripCount).
  Out.TripCount = SE.getSmallConstantTripCount(&L);
  Out.MaxTripCount = SE.getSmallConstantMaxTripCount(&L);
  Out.Depth = L.getLoopDepth();
  Out.Innermost = L.isInnermost() ? 1 : 0;
  for (const llvm::BasicBlock *BB : L.blocks()) {
    ++Out.Blocks;
    countBlock(*BB, Out);
  }
  llvm::SmallVector<llvm::BasicBlock *, 4> Exiting;
  L.getExitingBlocks(Exiting);
  Out.Exits = static_cast<int64_t>(Exiting.size());
  return Out;
}

FunctionFeatures functionFeatures(const llvm::Function &F, const llvm::LoopInfo &LI) {
  FunctionFeatures Out;
  for (const llvm::BasicBlock &BB : F) {
    ++Out.Blocks;
    countBlock(BB, Out);
  }
  for (const llvm::Loop *L : LI.getLoopsInPreorder()) {
    ++Out.Loops;
    Out.MaxLoopDepth = std::max<int64_t>(Out.MaxLoopDepth, L->getLoopDepth());
  }
  return Out;
}

std::vector<TensorSpec> loopFeatureSpecs() { return int64Specs(LoopFeatures::Names); }
std::vector<TensorSpec> functionFeatureSpecs() { return int64Specs(FunctionFeatures::Names); }

Status setFeatures(ModelRunner &R, const LoopFeatures &F) { return setAll(R, F); }
Status setFeatures(ModelRunner &R, const FunctionFeatures &F) { return setAll(R, F); }

namespace {
template <typename Features> void writeAll(BoundRunner &B, const Features &F, size_t First) {
  const auto Values = F.values();
  for (size_t I = 0; I < Values.size(); ++I)
    B.Binding.write(*B.Runner, First + I, &Values[I]);
}
} // namespace

void writeFeatures(BoundRunner &B, const LoopFeatures &F, size_t First) { writeAll(B, F, First); }
void writeFeatures(BoundRunner &B, const FunctionFeatures &F, size_t First) {
  writeAll(B, F, First);
}

} // namespace mlbridge::plugins
