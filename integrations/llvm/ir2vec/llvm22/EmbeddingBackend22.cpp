//===- EmbeddingBackend22.cpp - PluginEmbeddings on LLVM 22 ---------------===//
//
// LLVM 22's own embedder (llvm::ir2vec::Embedder) on an ir2vec::Vocabulary
// built here from seedEmbeddingVocab.json: LLVM's analysis
// (IR2VecVocabAnalysis) reads only the global -ir2vec-vocab-path option and
// reports errors by failing the compilation, while a plugin needs its own
// path and an error value to fall back on. The storage is what LLVM's loader
// makes (checked by tests/e2e/test_ir2vec.py against MLBridgeIR2Vec.so on
// -ir2vec-vocab-path): every flat position's key (Vocabulary::getStringKey)
// looked up in its JSON section ("Opcodes", "Types", "Arguments" for operand
// kinds and compare predicates), scaled once by LLVM's -ir2vec-*-weight; a
// key the file lacks is a zero vector.
//
//===----------------------------------------------------------------------===//
#include "EmbeddingBackend.h"

#include "llvm/Analysis/IR2Vec.h"
#include "llvm/IR/Function.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

using namespace llvm;

namespace mlbridge::ir2vec {

namespace {

using LLVMVocabulary = llvm::ir2vec::Vocabulary;

Status malformed(const std::string &Path, const Twine &What) {
  return Status(ErrorCode::Malformed, "IR2Vec vocabulary '" + Path + "': " + What.str());
}

// One section of the file: key -> numbers, all of dimension Dim (set by the
// first entry seen).
Expected<std::map<std::string, std::vector<double>>>
readSection(const json::Object &Root, StringRef Name, unsigned &Dim, const std::string &Path) {
  const json::Object *Section = Root.getObject(Name);
  if (!Section)
    return malformed(Path, "no '" + Name + "' object");
  std::map<std::string, std::vector<double>> Out;
  for (const auto &[Key, Value] : *Section) {
    const json::Array *Numbers = Value.getAsArray();
    if (!Numbers)
      return malformed(Path, Name + "." + Key.str() + " is not an array");
    std::vector<double> V;
    for (const json::Value &N : *Numbers) {
      std::optional<double> D = N.getAsNumber();
      if (!D)
        return malformed(Path, Name + "." + Key.str() + " holds a value that is not a number");
      // LLVM's JSON parser reads 1e999 as inf.
      if (!std::isfinite(*D))
        return malformed(Path, "value " + Twine(V.size() + 1) + " of " + Name + "." +
                                   Key.str() + " is not finite (out of a double's range)");
      V.push_back(*D);
    }
    if (Dim == 0)
      Dim = V.size();
    if (V.size() != Dim || Dim == 0)
      return malformed(Path, Name + "." + Key.str() + " has " + Twine(V.size()) +
                                 " values, expected " + Twine(Dim));
    Out.emplace(Key.str(), std::move(V));
  }
  return Out;
}

/// Vocabulary::getStringKey of every flat position, made once per process.
/// LLVM 22 writes a compare predicate's key into a static buffer of its own
/// (getVocabKeyForPredicate) and returns a reference to it, so two threads
/// loading a vocabulary at once (ThinLTO backends: each module's pass loads
/// one) wrote and read each other's keys (ThreadSanitizer, tests/threads).
const std::vector<std::string> &flatKeys() {
  static const std::vector<std::string> Keys = [] {
    const unsigned N = LLVMVocabulary::MaxOpcodes + LLVMVocabulary::MaxCanonicalTypeIDs +
                       LLVMVocabulary::MaxOperandKinds + LLVMVocabulary::MaxPredicateKinds;
    std::vector<std::string> K;
    K.reserve(N);
    for (unsigned Pos = 0; Pos < N; ++Pos)
      K.push_back(LLVMVocabulary::getStringKey(Pos).str());
    return K;
  }();
  return Keys;
}

} // namespace

struct EmbeddingBackend::State {
  LLVMVocabulary Vocab;
  IR2VecKind LLVMKind;
};

Expected<std::unique_ptr<EmbeddingBackend>> EmbeddingBackend::load(const std::string &Path,
                                                                   Kind K) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buf = MemoryBuffer::getFile(Path, /*IsText=*/true);
  if (!Buf)
    return Status(ErrorCode::NotFound,
                  "IR2Vec vocabulary '" + Path + "' cannot be opened (" +
                      Buf.getError().message() +
                      "); scripts/deps/ir2vec.sh installs it in .deps/ir2vec/");
  llvm::Expected<json::Value> Parsed = json::parse((*Buf)->getBuffer());
  if (!Parsed)
    return malformed(Path, "not JSON: " + toString(Parsed.takeError()));
  const json::Object *Root = Parsed->getAsObject();
  if (!Root)
    return malformed(Path, "not a JSON object");

  unsigned Dim = 0;
  auto Opcodes = readSection(*Root, "Opcodes", Dim, Path);
  if (!Opcodes)
    return Opcodes.takeStatus();
  auto Types = readSection(*Root, "Types", Dim, Path);
  if (!Types)
    return Types.takeStatus();
  auto Arguments = readSection(*Root, "Arguments", Dim, Path);
  if (!Arguments)
    return Arguments.takeStatus();

  // LLVM's layout: opcodes, canonical types, operand kinds, predicates.
  struct Part {
    unsigned Count;
    const std::map<std::string, std::vector<double>> *Entries;
    float Weight;
  };
  const Part Parts[] = {
      {LLVMVocabulary::MaxOpcodes, &*Opcodes, llvm::ir2vec::OpcWeight},
      {LLVMVocabulary::MaxCanonicalTypeIDs, &*Types, llvm::ir2vec::TypeWeight},
      {LLVMVocabulary::MaxOperandKinds, &*Arguments, llvm::ir2vec::ArgWeight},
      {LLVMVocabulary::MaxPredicateKinds, &*Arguments, llvm::ir2vec::ArgWeight}};
  std::vector<std::vector<llvm::ir2vec::Embedding>> Sections;
  unsigned Pos = 0;
  for (const Part &P : Parts) {
    std::vector<llvm::ir2vec::Embedding> Section;
    for (unsigned I = 0; I < P.Count; ++I, ++Pos) {
      auto It = P.Entries->find(flatKeys()[Pos]);
      llvm::ir2vec::Embedding E(Dim, 0.0);
      if (It != P.Entries->end())
        E = llvm::ir2vec::Embedding(It->second);
      E *= static_cast<double>(P.Weight);
      Section.push_back(std::move(E));
    }
    Sections.push_back(std::move(Section));
  }
  auto S = std::unique_ptr<State>(new State{
      LLVMVocabulary(llvm::ir2vec::VocabStorage(std::move(Sections))),
      K == Kind::FlowAware ? IR2VecKind::FlowAware : IR2VecKind::Symbolic});
  if (!S->Vocab.isValid())
    return malformed(Path, "LLVM rejected the vocabulary's layout");
  return std::unique_ptr<EmbeddingBackend>(new EmbeddingBackend(std::move(S)));
}

const char *EmbeddingBackend::fileName() { return "seedEmbeddingVocab.json"; }
const char *EmbeddingBackend::embedderName() { return "llvm"; }

EmbeddingBackend::EmbeddingBackend(std::unique_ptr<State> S) : S(std::move(S)) {}
EmbeddingBackend::~EmbeddingBackend() = default;

unsigned EmbeddingBackend::dimension() const { return S->Vocab.getDimension(); }
Weights EmbeddingBackend::weights() const {
  return {llvm::ir2vec::OpcWeight, llvm::ir2vec::TypeWeight, llvm::ir2vec::ArgWeight};
}

FunctionVectorsAll EmbeddingBackend::embed(const Function &F, bool WithInstructions) const {
  // A fresh embedder asked for the function first: the flow-aware cache
  // fills in depth-first order, as our LLVM 19 embedder does.
  auto E = llvm::ir2vec::Embedder::create(S->LLVMKind, F, S->Vocab);
  FunctionVectorsAll Out;
  Out.Function = E->getFunctionVector().getData();
  for (const BasicBlock &BB : F) {
    Out.Blocks.push_back(E->getBBVector(BB).getData());
    if (WithInstructions)
      for (const Instruction &I : BB.instructionsWithoutDebug())
        Out.Instructions.push_back(E->getInstVector(I).getData());
  }
  return Out;
}

} // namespace mlbridge::ir2vec
