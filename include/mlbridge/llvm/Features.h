//===- Features.h - Features of loops and functions for a model --*- C++ -*-===//
//
// The counts most loop and function decisions start from, read from the
// IR and ScalarEvolution only (no transformation, no cached state), each an
// int64 scalar feature (shape [1]) under the name in its Names table, in
// that order. Part of the installed LLVM kit (MLBridge::llvm19 /
// MLBridge::llvm22; examples/new-optimization/).
//
//   auto Runner = ...create(..., loopFeatureSpecs(), Advice);
//   setFeatures(*Runner, loopFeatures(L, SE));
// or, through a binding (an in-process model may take them as floats):
//   auto B = makeBoundRunner(Settings, loopFeatureSpecs(), Advice, ...);
//   writeFeatures(*B, loopFeatures(L, SE));
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_LLVM_FEATURES_H
#define MLBRIDGE_LLVM_FEATURES_H

#include "mlbridge/feature_binding.h"
#include "mlbridge/model_runner.h"
#include "mlbridge/status.h"
#include "mlbridge/tensor_spec.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace llvm {
class Function;
class Loop;
class LoopInfo;
class ScalarEvolution;
} // namespace llvm

namespace mlbridge::plugins {

struct LoopFeatures {
  int64_t TripCount = 0;    ///< exact constant trip count (SCEV); 0: unknown
  int64_t MaxTripCount = 0; ///< constant upper bound of it; 0: unknown
  int64_t Depth = 0;        ///< 1 for an outermost loop
  int64_t Innermost = 0;    ///< 1 when the loop has no inner loop
  int64_t Blocks = 0;
  int64_t Instructions = 0; ///< all instructions of its blocks, inner loops' too
  int64_t Loads = 0;
  int64_t Stores = 0;
  int64_t Calls = 0;        ///< calls and invokes, intrinsics included
  int64_t Exits = 0;        ///< exiting blocks

  static constexpr size_t Count = 10;
  /// "trip_count", "max_trip_count", "depth", "innermost", "blocks",
  /// "instructions", "loads", "stores", "calls", "exits".
  static const char *const Names[Count];
  std::array<int64_t, Count> values() const;
};

struct FunctionFeatures {
  int64_t Blocks = 0;
  int64_t Instructions = 0;
  int64_t Loads = 0;
  int64_t Stores = 0;
  int64_t Calls = 0;
  int64_t Loops = 0;        ///< all loops, nested ones included
  int64_t MaxLoopDepth = 0; ///< 0 without loops

  static constexpr size_t Count = 7;
  /// "fn_blocks", "fn_instructions", "fn_loads", "fn_stores", "fn_calls",
  /// "fn_loops", "fn_max_loop_depth".
  static const char *const Names[Count];
  std::array<int64_t, Count> values() const;
};

LoopFeatures loopFeatures(const llvm::Loop &L, llvm::ScalarEvolution &SE);
FunctionFeatures functionFeatures(const llvm::Function &F, const llvm::LoopInfo &LI);

/// The specs of Names, int64 [1] each (a runner's feature list).
std::vector<TensorSpec> loopFeatureSpecs();
std::vector<TensorSpec> functionFeatureSpecs();

/// Sets every feature of F on R by name; the first error, if any.
Status setFeatures(ModelRunner &R, const LoopFeatures &F);
Status setFeatures(ModelRunner &R, const FunctionFeatures &F);

/// Writes F's values through B's binding as the features First, First+1,
/// ... of the request (FeatureBinding converts each to the dtype of the
/// model input it is bound to and skips those the model does not read).
void writeFeatures(BoundRunner &B, const LoopFeatures &F, size_t First = 0);
void writeFeatures(BoundRunner &B, const FunctionFeatures &F, size_t First = 0);

} // namespace mlbridge::plugins

#endif // MLBRIDGE_LLVM_FEATURES_H
