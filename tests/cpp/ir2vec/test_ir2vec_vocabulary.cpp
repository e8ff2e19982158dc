// The IR2Vec vocabulary reader (Vocabulary.h) and the plugins' output file
// (EmbeddingsJson.h): what they accept, every error they report, and that
// the numbers written read back as the same doubles.
#include "EmbeddingsJson.h"
#include "Vocabulary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <unistd.h>

using namespace mlbridge;
using namespace mlbridge::ir2vec;

namespace {

Status parseError(const std::string &Text) {
  auto V = Vocabulary::parse(Text, "v.txt");
  EXPECT_FALSE(V) << "accepted: " << Text;
  return V ? Status::ok() : V.status();
}

} // namespace

TEST(IR2VecVocabulary, ReadsIR2VecsFormat) {
  // As IR2Vec writes it: ',' after every entry but the last, no final newline.
  auto V = Vocabulary::parse("add:[0.5, -1.25e-3, 2],\r\n\n  ret : [1,2,3]", "v.txt");
  ASSERT_TRUE(V) << V.status().toString();
  EXPECT_EQ(V->dimension(), 3u);
  EXPECT_EQ(V->size(), 2u);
  ASSERT_NE(V->find("add"), nullptr);
  EXPECT_EQ(*V->find("add"), (Vector{0.5, -1.25e-3, 2}));
  EXPECT_EQ(*V->find("ret"), (Vector{1, 2, 3}));
  EXPECT_EQ(V->find("load"), nullptr);
}

TEST(IR2VecVocabulary, ErrorsNameTheFileTheLineAndTheFault) {
  struct Case {
    const char *Text, *Message;
  } Cases[] = {
      {"add:[1, 2],\nret:[1, 2", "'v.txt' line 2: truncated: 'ret' has no '[...]' list"},
      {"add:[1, 2],\nret:[1, 2, 3]", "line 2: 'ret' has 3 values, expected 2 (the dimension"},
      {"add:[1, x]", "line 1: value 2 of 'add' is not a number ('x')"},
      {"add:[1, ]", "line 1: value 2 of 'add' is not a number ('')"},
      {"add:[1, 2 3]", "line 1: value 2 of 'add' is not a number ('2 3')"},
      {"add [1, 2]", "line 1: expected 'name:[v1, v2, ...]'"},
      {":[1, 2]", "line 1: expected 'name:[v1, v2, ...]'"},
      {"add:[1],\nadd:[2]", "line 2: 'add' appears twice"},
      {"\n\n", "IR2Vec vocabulary 'v.txt' has no entries"},
      // from_chars reads these; JSON has none of them.
      {"add:[1, inf]", "line 1: value 2 of 'add' is not finite ('inf')"},
      {"add:[-INF, 1]", "line 1: value 1 of 'add' is not finite ('-INF')"},
      {"add:[1, 2],\nret:[nan, 2]", "line 2: value 1 of 'ret' is not finite ('nan')"},
      {"add:[1, infinity]", "line 1: value 2 of 'add' is not finite ('infinity')"},
      {"add:[1e999, 2]", "line 1: value 1 of 'add' is out of a double's range ('1e999')"},
  };
  for (const Case &C : Cases) {
    Status S = parseError(C.Text);
    EXPECT_EQ(S.code(), ErrorCode::Malformed) << C.Text;
    EXPECT_NE(S.message().find(C.Message), std::string::npos)
        << C.Text << " -> " << S.message();
  }
}

TEST(IR2VecVocabulary, MissingFile) {
  auto V = Vocabulary::load("/nonexistent/seedEmbeddingVocab.txt");
  ASSERT_FALSE(V);
  EXPECT_EQ(V.status().code(), ErrorCode::NotFound);
  EXPECT_NE(V.status().message().find("'/nonexistent/seedEmbeddingVocab.txt' cannot be opened"),
            std::string::npos);
  EXPECT_NE(V.status().message().find("scripts/deps/ir2vec.sh"), std::string::npos);
}

TEST(IR2VecEmbeddingsJson, NumbersReadBackExactlyAndNamesAreEscaped) {
  EmbeddingsReport R;
  R.LLVMVersion = "19.1.7";
  R.Embedder = "mlbridge";
  R.Kind = Kind::FlowAware;
  R.Dimension = 3;
  R.Module.assign(3, 0.0);
  const Vector Odd = {0.1 + 0.2, -1.0 / 3.0, 1e-300};
  R.addFunction({"f\"\\\n", Odd, {}, {}});
  R.addFunction({"g", {1, 2, 3}, {}, {}});
  EXPECT_EQ(R.Module, (Vector{Odd[0] + 1, Odd[1] + 2, Odd[2] + 3}));

  std::string Json = toJson(R);
  EXPECT_NE(Json.find("\"name\": \"f\\\"\\\\\\n\""), std::string::npos) << Json;
  EXPECT_NE(Json.find("\"kind\": \"flow-aware\""), std::string::npos);
  EXPECT_EQ(Json.find("\"blocks\""), std::string::npos); // not asked for
  EXPECT_EQ(Json.find("\"instructions\""), std::string::npos);
  std::string Numbers;
  appendJsonVector(Numbers, Odd);
  ASSERT_EQ(Numbers.front(), '[');
  char *End = &Numbers[1];
  for (double Expected : Odd) {
    double Got = std::strtod(End, &End);
    EXPECT_EQ(Got, Expected);
    ++End; // ',' or ']'
  }
}

TEST(IR2VecEmbeddingsJson, WriteReportReplacesTheFileAndNamesItOnError) {
  EmbeddingsReport R;
  R.Dimension = 1;
  R.Module = {1.5};
  char Dir[] = "/tmp/mlbridge-ir2vec-XXXXXX";
  ASSERT_NE(mkdtemp(Dir), nullptr);
  const std::string Path = std::string(Dir) + "/v.json";
  ASSERT_TRUE(writeReport(R, Path).isOk());
  std::ifstream In(Path);
  std::string Text((std::istreambuf_iterator<char>(In)), std::istreambuf_iterator<char>());
  EXPECT_EQ(Text, toJson(R));
  std::remove(Path.c_str());
  rmdir(Dir);

  Status S = writeReport(R, "/nonexistent/dir/v.json");
  EXPECT_EQ(S.code(), ErrorCode::IOError);
  EXPECT_NE(S.message().find("'/nonexistent/dir/v.json'"), std::string::npos);
}

TEST(IR2VecEmbeddingsJson, WriteReportRefusesNonFiniteVectorsAndWritesNothing) {
  char Dir[] = "/tmp/mlbridge-ir2vec-XXXXXX";
  ASSERT_NE(mkdtemp(Dir), nullptr);
  const std::string Path = std::string(Dir) + "/v.json";
  const double Inf = std::numeric_limits<double>::infinity();
  struct Case {
    const char *Name;
    void (*Spoil)(EmbeddingsReport &, double);
    const char *Which;
  } Cases[] = {
      {"module", [](EmbeddingsReport &R, double X) { R.Module[1] = X; }, "the module"},
      {"function", [](EmbeddingsReport &R, double X) { R.Functions[0].Function[0] = X; },
       "function 'f'"},
      {"block", [](EmbeddingsReport &R, double X) { R.Functions[0].Blocks[1][0] = X; },
       "block 1 of function 'f'"},
      {"instruction",
       [](EmbeddingsReport &R, double X) { R.Functions[0].Instructions[0][1] = X; },
       "instruction 0 of function 'f'"},
  };
  for (const Case &C : Cases)
    for (double Bad : {Inf, -Inf, std::nan("")}) {
      EmbeddingsReport R;
      R.Dimension = 2;
      R.WithBlocks = R.WithInstructions = true;
      R.Module = {0, 0};
      R.addFunction({"f", {1, 2}, {{0, 1}, {1, 1}}, {{1, 2}}});
      C.Spoil(R, Bad);
      Status S = writeReport(R, Path);
      EXPECT_EQ(S.code(), ErrorCode::Malformed) << C.Name;
      EXPECT_NE(S.message().find("IR2Vec output '" + Path + "': the vector of " + C.Which +
                                 " is not finite"),
                std::string::npos)
          << S.message();
      EXPECT_NE(access(Path.c_str(), F_OK), 0) << C.Name << ": a file was written";
      EXPECT_NE(access((Path + ".tmp").c_str(), F_OK), 0);
    }
  rmdir(Dir);
}

TEST(IR2VecKind, Names) {
  EXPECT_EQ(parseKind("symbolic"), Kind::Symbolic);
  EXPECT_EQ(parseKind("flow-aware"), Kind::FlowAware);
  EXPECT_FALSE(parseKind("flowaware"));
  EXPECT_STREQ(kindName(Kind::FlowAware), "flow-aware");
}
