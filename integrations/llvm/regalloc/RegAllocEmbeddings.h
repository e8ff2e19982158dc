//===- RegAllocEmbeddings.h - MIR2Vec vectors as an optional observation -===//
//
// -regalloc=mlbridge with -mlbridge-ra-mir2vec-vocab=FILE (env
// MLBRIDGE_RA_MIR2VEC_VOCAB) also sends the model, after the protocol's
// features (RegAllocProtocol.h; docs/register-allocation.md):
//   function_embedding  float [1, D]: the machine function's MIR2Vec vector
//                       when its allocation starts (mir2vec/MachineEmbeddings.h)
//   node_embeddings     float [1, MaxNodes, D]: per window node, the sum of
//                       the vectors of the instructions using its live range
//                       when the allocator first saw it; zero rows past the
//                       window
// A model without those inputs is not affected; without the option nothing
// is computed. A vocabulary that cannot be read: one warning, no vectors.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_LLVM_REGALLOC_REGALLOCEMBEDDINGS_H
#define MLBRIDGE_INTEGRATIONS_LLVM_REGALLOC_REGALLOCEMBEDDINGS_H

#include "mlbridge/tensor_spec.h"

#include <memory>
#include <vector>

namespace llvm {
class LLVMContext;
class MachineFunction;
class Register;
} // namespace llvm

namespace mlbridge::regalloc {

/// One per allocator pass (a ThinLTO backend thread has its own): the
/// vocabulary, read once per process, is shared and immutable; the
/// embedder's and the ranges' vectors are this pass's.
class MIR2VecObservation {
public:
  /// Reads the option and, the first time in the process, the vocabulary
  /// (a failure is reported to that Ctx, once).
  explicit MIR2VecObservation(llvm::LLVMContext &Ctx);
  ~MIR2VecObservation();

  bool enabled() const;
  /// Appends function_embedding and node_embeddings when enabled.
  void appendSpecs(std::vector<TensorSpec> &Specs) const;
  /// The function vector (as float), and forgets the previous function's ranges.
  void beginFunction(const llvm::MachineFunction &MF);
  const std::vector<float> &functionVector() const { return Function; }
  /// Fills the window's node vectors (MaxNodes x D floats).
  void nodeVectors(const llvm::MachineFunction &MF, const std::vector<llvm::Register> &Window,
                   std::vector<float> &Out);

private:
  struct State;
  std::unique_ptr<State> S;
  std::vector<float> Function;
};

} // namespace mlbridge::regalloc

#endif // MLBRIDGE_INTEGRATIONS_LLVM_REGALLOC_REGALLOCEMBEDDINGS_H
