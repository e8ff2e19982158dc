//===- EmbeddingsJson.cpp - The plugins' output file ----------------------===//
#include "EmbeddingsJson.h"

#include "mlbridge/json_escape.h"
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace mlbridge::ir2vec {

const char *kindName(Kind K) { return K == Kind::FlowAware ? "flow-aware" : "symbolic"; }

std::optional<Kind> parseKind(std::string_view S) {
  if (S == "symbolic")
    return Kind::Symbolic;
  if (S == "flow-aware")
    return Kind::FlowAware;
  return std::nullopt;
}

void EmbeddingsReport::addFunction(FunctionVectors F) {
  for (size_t I = 0; I < Module.size() && I < F.Function.size(); ++I)
    Module[I] += F.Function[I];
  Functions.push_back(std::move(F));
}

namespace {
void appendJsonVectors(std::string &Out, const char *Key, const std::vector<Vector> &Vs) {
  Out += ", \"";
  Out += Key;
  Out += "\": [";
  for (size_t I = 0; I < Vs.size(); ++I) {
    if (I)
      Out += ", ";
    appendJsonVector(Out, Vs[I]);
  }
  Out += ']';
}
} // namespace

std::string toJson(const EmbeddingsReport &R) {
  std::string Out = "{\"format\": \"mlbridge-ir2vec-1\", \"llvm\": \"";
  appendJsonEscaped(Out, R.LLVMVersion);
  Out += "\", \"embedder\": \"" + R.Embedder + "\", \"kind\": \"" + kindName(R.Kind) +
         "\", \"dimension\": " + std::to_string(R.Dimension) + ", \"weights\": ";
  appendJsonVector(Out, Vector(R.Weights, R.Weights + 3));
  Out += ",\n \"module\": ";
  appendJsonVector(Out, R.Module);
  Out += ",\n \"functions\": [";
  for (size_t I = 0; I < R.Functions.size(); ++I) {
    const FunctionVectors &F = R.Functions[I];
    Out += I ? ",\n  {\"name\": \"" : "\n  {\"name\": \"";
    appendJsonEscaped(Out, F.Name);
    Out += "\", \"vector\": ";
    appendJsonVector(Out, F.Function);
    if (R.WithBlocks)
      appendJsonVectors(Out, "blocks", F.Blocks);
    if (R.WithInstructions)
      appendJsonVectors(Out, "instructions", F.Instructions);
    Out += '}';
  }
  Out += "]}\n";
  return Out;
}

namespace {
// The first vector of R that holds inf or nan (sums of huge finite values
// overflow; LLVM 22's own vocabulary loader takes 1e999 as inf), named.
std::optional<std::string> firstNonFinite(const EmbeddingsReport &R) {
  auto Fn = [](const FunctionVectors &F) { return "function '" + F.Name + "'"; };
  if (!allFinite(R.Module))
    return std::string("the module");
  for (const FunctionVectors &F : R.Functions) {
    if (!allFinite(F.Function))
      return Fn(F);
    for (size_t I = 0; I < F.Blocks.size(); ++I)
      if (!allFinite(F.Blocks[I]))
        return "block " + std::to_string(I) + " of " + Fn(F);
    for (size_t I = 0; I < F.Instructions.size(); ++I)
      if (!allFinite(F.Instructions[I]))
        return "instruction " + std::to_string(I) + " of " + Fn(F);
  }
  return std::nullopt;
}
} // namespace

Status writeReport(const EmbeddingsReport &R, const std::string &Path) {
  if (std::optional<std::string> Bad = firstNonFinite(R))
    return Status(ErrorCode::Malformed,
                  "IR2Vec output '" + Path + "': the vector of " + *Bad +
                      " is not finite (the vocabulary's values overflow); nothing written");
  const std::string Text = toJson(R);
  const std::string Tmp = Path + ".tmp";
  auto Fail = [&](const char *What) {
    Status S(ErrorCode::IOError, "IR2Vec output '" + Path + "': " + What + ": " +
                                     std::strerror(errno));
    std::remove(Tmp.c_str());
    return S;
  };
  std::FILE *F = std::fopen(Tmp.c_str(), "wb");
  if (!F)
    return Fail("cannot create");
  bool Ok = std::fwrite(Text.data(), 1, Text.size(), F) == Text.size();
  Ok = (std::fclose(F) == 0) && Ok;
  if (!Ok)
    return Fail("write failed");
  if (std::rename(Tmp.c_str(), Path.c_str()) != 0)
    return Fail("cannot rename the temporary file");
  return Status::ok();
}

} // namespace mlbridge::ir2vec
