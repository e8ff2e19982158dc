//===- compiled_harness.cpp - Run a compiled test model on a file of inputs ===//
//
//   mlbridge-compiled-harness list
//   mlbridge-compiled-harness run MODEL INPUTS OUTPUTS COUNT
//
// INPUTS holds COUNT samples, each the model's inputs in model order as raw
// little-endian bytes; OUTPUTS receives, per sample, every output in model
// order. The model runs behind CompiledModelRunner (features by name, all
// outputs read back), as a compiler pass would use it. Used by
// tests/e2e/test_compiled_reference.py to compare against onnxruntime.
//
//===----------------------------------------------------------------------===//
#include "compiled_test_models.h"
#include "mlbridge/compiled_model_runner.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace mlbridge;

namespace {

/// NumPy's name of a dtype: LLVM's name without "_t", floats by width.
std::string typeName(DType T) {
  if (T == DType::Float)
    return "float32";
  if (T == DType::Double)
    return "float64";
  std::string Name(dtypeName(T));
  return Name.size() > 2 && Name.compare(Name.size() - 2, 2, "_t") == 0
             ? Name.substr(0, Name.size() - 2)
             : Name;
}

int fail(const std::string &M) {
  std::cerr << "mlbridge-compiled-harness: " << M << "\n";
  return 1;
}

} // namespace

int main(int Argc, char **Argv) {
  if (Argc == 2 && std::string(Argv[1]) == "list") {
    // One line per model: name, then inputs and outputs as name:type:dims.
    for (const CompiledTestModel &M : kCompiledTestModels) {
      const EmbeddedModel &I = M.Info();
      std::cout << M.Name << " " << M.OnnxPath;
      auto Print = [&](const char *Tag, const EmbeddedTensorInfo &T) {
        std::cout << " " << Tag << ":" << T.Name << ":" << typeName(T.Type)
                  << ":";
        for (size_t D = 0; D < T.Rank; ++D)
          std::cout << (D ? "x" : "") << T.Shape[D];
      };
      for (size_t K = 0; K < I.NumInputs; ++K)
        Print("in", I.Inputs[K]);
      for (size_t K = 0; K < I.NumOutputs; ++K)
        Print("out", I.Outputs[K]);
      std::cout << "\n";
    }
    return 0;
  }
  if (Argc != 6 || std::string(Argv[1]) != "run")
    return fail("usage: list | run MODEL INPUTS OUTPUTS COUNT");
  const CompiledTestModel *Found = nullptr;
  for (const CompiledTestModel &M : kCompiledTestModels)
    if (std::string(M.Name) == Argv[2])
      Found = &M;
  if (!Found)
    return fail(std::string("unknown model ") + Argv[2]);
  const EmbeddedModel &Info = Found->Info();
  const long Count = std::strtol(Argv[5], nullptr, 10);

  auto Runner = CompiledModelRunner::create(Info);
  if (!Runner)
    return fail(Runner.status().toString());
  std::ifstream In(Argv[3], std::ios::binary);
  std::ofstream Out(Argv[4], std::ios::binary | std::ios::trunc);
  if (!In || !Out)
    return fail("cannot open the input or output file");
  std::vector<char> Buf;
  for (long S = 0; S < Count; ++S) {
    for (size_t K = 0; K < Info.NumInputs; ++K) {
      const TensorSpec &Spec = (*Runner)->featureSpec(K);
      Buf.resize(Spec.byteSize());
      if (!In.read(Buf.data(), static_cast<std::streamsize>(Buf.size())))
        return fail("input file too short");
      Status St = (*Runner)->setFeatureBytes(Spec.name(), Spec.type(),
                                             Spec.shape(), Buf.data(),
                                             Buf.size());
      if (!St.isOk())
        return fail(St.toString());
    }
    if (Status St = (*Runner)->evaluateRaw(); !St.isOk())
      return fail(St.toString());
    for (size_t K = 0; K < (*Runner)->outputCount(); ++K) {
      const TensorValue *V = (*Runner)->output(K);
      Out.write(static_cast<const char *>(V->data()),
                static_cast<std::streamsize>(V->byteSize()));
    }
  }
  return Out.flush() ? 0 : fail("cannot write the outputs");
}
