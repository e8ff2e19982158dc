// PluginEmbeddings (integrations/llvm/ir2vec/PluginEmbeddings.h) on the LLVM
// it is compiled against: built twice, mlbridge-plugin-embeddings-tests (LLVM
// 19, our embedder) and mlbridge-plugin-embeddings22-tests (LLVM 22's), each
// linking that version's libLLVM. What the pass output cannot show: the
// cache (stable references, invalidation after a change), instruction sets,
// declarations, and the vocabulary lookup and its errors.
#include "PluginEmbeddings.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

using namespace mlbridge;
using namespace mlbridge::ir2vec;

namespace {

const char *IR = R"(
define i32 @f(i32 %a, i32 %b) {
entry:
  %s = add i32 %a, %b
  %c = icmp eq i32 %s, 0
  br i1 %c, label %yes, label %no
yes:
  %m = mul i32 %s, 3
  ret i32 %m
no:
  ret i32 %s
}
define void @g(ptr %p) {
  store i32 1, ptr %p
  ret void
}
declare void @h()
)";

struct Fixture : ::testing::Test {
  llvm::LLVMContext Ctx;
  std::unique_ptr<llvm::Module> M;
  std::unique_ptr<PluginEmbeddings> E;

  void SetUp() override {
    unsetenv("MLBRIDGE_IR2VEC_VOCAB_DIR");
    llvm::SMDiagnostic Err;
    M = llvm::parseAssemblyString(IR, Err, Ctx);
    ASSERT_TRUE(M) << Err.getMessage().str();
    auto Created = PluginEmbeddings::create();
    ASSERT_TRUE(Created) << Created.status().toString();
    E = std::move(*Created);
  }
  llvm::Function &fn(const char *Name) { return *M->getFunction(Name); }
};

Vector sum(const std::vector<Vector> &Vs, size_t Dim) {
  Vector Out(Dim, 0.0);
  for (const Vector &V : Vs)
    for (size_t I = 0; I < Dim; ++I)
      Out[I] += V[I];
  return Out;
}

void expectNear(const Vector &A, const Vector &B, const char *What) {
  ASSERT_EQ(A.size(), B.size()) << What;
  for (size_t I = 0; I < A.size(); ++I)
    ASSERT_NEAR(A[I], B[I], 1e-12) << What << " [" << I << "]";
}

bool isZero(const Vector &V) {
  for (double D : V)
    if (D != 0.0)
      return false;
  return true;
}

TEST_F(Fixture, FindsTheBuildsVocabularyWithoutEnvironment) {
  EXPECT_EQ(E->dimension(), 300u);
  const std::string Name = vocabularyFileName();
  EXPECT_EQ(E->vocabularyPath().substr(E->vocabularyPath().size() - Name.size()), Name);
  EXPECT_EQ(resolveVocabularyPath("x/v.txt"), "x/v.txt");
  const Weights W = E->weights();
  EXPECT_EQ(W.Opcode, 1.0f);
  EXPECT_EQ(W.Type, 0.5f);
  EXPECT_EQ(W.Operand, 0.2f);
}

TEST_F(Fixture, LevelsAddUp) {
  llvm::Function &F = fn("f");
  std::vector<Vector> Blocks, Insts;
  for (llvm::BasicBlock &BB : F) {
    Blocks.push_back(E->block(BB));
    std::vector<Vector> InBlock;
    for (llvm::Instruction &I : BB)
      InBlock.push_back(E->instruction(I));
    expectNear(sum(InBlock, 300), E->block(BB), "instructions -> block");
    EXPECT_FALSE(isZero(InBlock.front()));
  }
  expectNear(sum(Blocks, 300), E->function(F), "blocks -> function");
  expectNear(E->module(*M), sum({E->function(F), E->function(fn("g"))}, 300), "module");
  EXPECT_TRUE(isZero(E->function(fn("h")))) << "a declaration";

  std::vector<const llvm::Instruction *> Node;
  for (llvm::Instruction &I : F.getEntryBlock())
    if (!I.isTerminator())
      Node.push_back(&I);
  expectNear(E->sumOfInstructions(Node),
             sum({E->instruction(*Node[0]), E->instruction(*Node[1])}, 300), "a set");
}

TEST_F(Fixture, ReferencesStayValidAndInvalidateRecomputes) {
  llvm::Function &F = fn("g");
  const Vector &Before = E->function(F); // a reference into the cache
  const Vector Copy = Before;
  E->block(F.getEntryBlock());
  E->instruction(F.getEntryBlock().front()); // adds instruction vectors
  E->function(fn("f"));                      // another function cached
  EXPECT_EQ(&Before, &E->function(F));
  EXPECT_EQ(Before, Copy);
  EXPECT_EQ(E->cachedFunctions(), 2u);

  // Change g: one more store. Without invalidation the cache is stale (the
  // contract); after it the vector includes the new instruction.
  llvm::IRBuilder<> B(&F.getEntryBlock().front());
  llvm::Instruction *New = B.CreateStore(B.getInt32(2), F.getArg(0));
  EXPECT_EQ(E->function(F), Copy);
  E->invalidate(F);
  EXPECT_EQ(E->cachedFunctions(), 1u);
  const Vector After = E->function(F);
  expectNear(After, sum({Copy, E->instruction(*New)}, 300), "old + the new store");
  E->invalidateAll();
  EXPECT_EQ(E->cachedFunctions(), 0u);
}

TEST(PluginEmbeddingsErrors, MissingVocabularyIsAValueNamingTheFile) {
  auto E = PluginEmbeddings::create({"/nonexistent/vocab", Kind::Symbolic});
  ASSERT_FALSE(E);
  EXPECT_EQ(E.status().code(), ErrorCode::NotFound);
  EXPECT_NE(E.status().message().find("IR2Vec vocabulary '/nonexistent/vocab' cannot be opened"),
            std::string::npos)
      << E.status().toString();
  EXPECT_NE(E.status().message().find("scripts/deps/ir2vec.sh"), std::string::npos);
}

TEST(PluginEmbeddingsErrors, EnvironmentOverridesTheDefault) {
  setenv("MLBRIDGE_IR2VEC_VOCAB_DIR", "/nonexistent-dir", 1);
  const std::string Expected = std::string("/nonexistent-dir/") + vocabularyFileName();
  EXPECT_EQ(resolveVocabularyPath(""), Expected);
  auto E = PluginEmbeddings::create();
  unsetenv("MLBRIDGE_IR2VEC_VOCAB_DIR");
  ASSERT_FALSE(E);
  EXPECT_NE(E.status().message().find(Expected), std::string::npos) << E.status().toString();
}

} // namespace
