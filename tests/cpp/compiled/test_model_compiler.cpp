// mlbridge-model-compiler: what it rejects, and how it says so. Models are
// built in memory with the compiler's own ONNX proto subset (wire-compatible
// with ONNX), so these tests need no Python.
#include "model_compiler.h"
#include "onnx_subset.pb.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace ox = mlbridge::onnx_subset;
using mlbridge::modelc::compileOnnxModel;
using mlbridge::modelc::CompileOptions;
using mlbridge::modelc::CompileResult;

/// Checks that Text contains Part (gmock is not installed).
#define EXPECT_CONTAINS(Text, Part)                                            \
  do {                                                                         \
    const std::string T_ = (Text), P_ = (Part);                                \
    EXPECT_NE(T_.find(P_), std::string::npos)                                  \
        << "expected to find: " << P_ << "\nin: " << T_;                      \
  } while (0)

namespace {

constexpr int kFloat = 1, kInt64 = 7, kFloat16 = 10, kDouble = 11;

/// Builds a ModelProto node by node.
class ModelBuilder {
public:
  explicit ModelBuilder(int64_t Opset = 14) {
    M.set_ir_version(8);
    M.set_producer_name("test");
    ox::OperatorSetIdProto *O = M.add_opset_import();
    O->set_domain("");
    O->set_version(Opset);
  }

  ox::GraphProto &graph() { return *M.mutable_graph(); }

  ox::ValueInfoProto &input(const std::string &Name,
                            std::initializer_list<int64_t> Dims,
                            int Type = kFloat) {
    return info(graph().add_input(), Name, Dims, Type);
  }
  ox::ValueInfoProto &output(const std::string &Name,
                             std::initializer_list<int64_t> Dims,
                             int Type = kFloat) {
    return info(graph().add_output(), Name, Dims, Type);
  }
  ox::NodeProto &node(const std::string &Op,
                      std::initializer_list<std::string> In,
                      std::initializer_list<std::string> Out,
                      const std::string &Name = "") {
    ox::NodeProto *N = graph().add_node();
    N->set_op_type(Op);
    if (!Name.empty())
      N->set_name(Name);
    for (const std::string &I : In)
      N->add_input(I);
    for (const std::string &O : Out)
      N->add_output(O);
    return *N;
  }
  ox::TensorProto &floats(const std::string &Name,
                          std::initializer_list<int64_t> Dims,
                          std::vector<float> Values) {
    ox::TensorProto *T = graph().add_initializer();
    T->set_name(Name);
    T->set_data_type(kFloat);
    for (int64_t D : Dims)
      T->add_dims(D);
    for (float V : Values)
      T->add_float_data(V);
    return *T;
  }
  ox::TensorProto &ints(const std::string &Name,
                        std::initializer_list<int64_t> Dims,
                        std::vector<int64_t> Values) {
    ox::TensorProto *T = graph().add_initializer();
    T->set_name(Name);
    T->set_data_type(kInt64);
    for (int64_t D : Dims)
      T->add_dims(D);
    for (int64_t V : Values)
      T->add_int64_data(V);
    return *T;
  }
  static void attrInt(ox::NodeProto &N, const std::string &Name, int64_t V) {
    ox::AttributeProto *A = N.add_attribute();
    A->set_name(Name);
    A->set_type(2);
    A->set_i(V);
  }
  static void attrFloat(ox::NodeProto &N, const std::string &Name, float V) {
    ox::AttributeProto *A = N.add_attribute();
    A->set_name(Name);
    A->set_type(1);
    A->set_f(V);
  }

  std::string bytes() const { return M.SerializeAsString(); }
  ox::ModelProto M;

private:
  static ox::ValueInfoProto &info(ox::ValueInfoProto *V,
                                  const std::string &Name,
                                  std::initializer_list<int64_t> Dims,
                                  int Type) {
    V->set_name(Name);
    ox::TypeProto::Tensor *T = V->mutable_type()->mutable_tensor_type();
    T->set_elem_type(Type);
    ox::TensorShapeProto *S = T->mutable_shape();
    for (int64_t D : Dims)
      S->add_dim()->set_dim_value(D);
    return *V;
  }
};

CompileResult compile(const std::string &Bytes,
                      CompileOptions Opts = CompileOptions()) {
  if (Opts.ClassName.empty())
    Opts.ClassName = "TestModel";
  if (Opts.HeaderInclude.empty())
    Opts.HeaderInclude = "test_model.h";
  return compileOnnxModel(Bytes, Opts);
}

/// A valid one-layer model: y = relu(x W^T + b).
ModelBuilder validModel() {
  ModelBuilder B;
  B.input("x", {1, 3});
  B.floats("w", {2, 3}, {1, 2, 3, 4, 5, 6});
  B.floats("b", {2}, {0.5f, -0.5f});
  ModelBuilder::attrInt(B.node("Gemm", {"x", "w", "b"}, {"h"}, "fc"), "transB", 1);
  B.node("Relu", {"h"}, {"y"}, "act");
  B.output("y", {1, 2});
  return B;
}

} // namespace

TEST(ModelCompiler, CompilesAValidModel) {
  CompileResult R = compile(validModel().bytes());
  ASSERT_TRUE(R.Ok) << R.Error;
  EXPECT_CONTAINS(R.Header, "class TestModel {");
  EXPECT_CONTAINS(R.Header, "static void run(const float *x, float *y, "
                                  "Workspace &W) noexcept;");
  EXPECT_CONTAINS(R.Header, "#include \"mlbridge/compiled_model.h\"");
  EXPECT_CONTAINS(R.Source, "#include \"test_model.h\"");
  EXPECT_CONTAINS(R.Source, "mk_gemm<float, 1, 3, 2,");
  // Weights are exact hexadecimal literals: 1.0f and 0.5f.
  EXPECT_CONTAINS(R.Source, "0x1p+0f");
  EXPECT_CONTAINS(R.Source, "0x1p-1f");
  // Only the standard library.
  for (const std::string *Text : {&R.Header, &R.Source}) {
    size_t Pos = 0;
    while ((Pos = Text->find("#include ", Pos)) != std::string::npos) {
      const std::string Line = Text->substr(Pos, Text->find('\n', Pos) - Pos);
      EXPECT_TRUE(Line.find('<') != std::string::npos ||
                  Line == "#include \"mlbridge/compiled_model.h\"" ||
                  Line == "#include \"test_model.h\"")
          << Line;
      ++Pos;
    }
  }
}

TEST(ModelCompiler, OutputIsDeterministic) {
  const std::string Bytes = validModel().bytes();
  CompileResult A = compile(Bytes), B = compile(Bytes);
  ASSERT_TRUE(A.Ok && B.Ok);
  EXPECT_EQ(A.Header, B.Header);
  EXPECT_EQ(A.Source, B.Source);
}

TEST(ModelCompiler, NamespaceAndSummary) {
  CompileOptions O;
  O.Namespace = "my::models";
  CompileResult R = compile(validModel().bytes(), O);
  ASSERT_TRUE(R.Ok) << R.Error;
  EXPECT_CONTAINS(R.Header, "namespace my::models {");
  EXPECT_CONTAINS(R.Source, "\"my::models::TestModel\"");
  EXPECT_CONTAINS(R.Summary, "input  x float[1,3]");
  EXPECT_CONTAINS(R.Summary, "output y float[1,2]");
}

TEST(ModelCompiler, UnsupportedOperatorIsRejectedWithTheNodeName) {
  ModelBuilder B;
  B.input("x", {1, 3, 8, 8});
  B.floats("k", {4, 3, 3, 3}, std::vector<float>(108, 0.1f));
  B.node("Conv", {"x", "k"}, {"y"}, "encoder/conv_7");
  B.output("y", {1, 4, 6, 6});
  CompileResult R = compile(B.bytes());
  ASSERT_FALSE(R.Ok);
  EXPECT_CONTAINS(R.Error, "node 'encoder/conv_7'");
  EXPECT_CONTAINS(R.Error, "unsupported operator 'Conv'");
  EXPECT_CONTAINS(R.Error, "supported: Add, ArgMax");
}

TEST(ModelCompiler, UnnamedNodeIsDescribedByItsOutput) {
  ModelBuilder B;
  B.input("x", {4});
  B.node("Erf", {"x"}, {"erf_out"});
  B.output("erf_out", {4});
  CompileResult R = compile(B.bytes());
  ASSERT_FALSE(R.Ok);
  EXPECT_CONTAINS(R.Error, "node #0 (op Erf, output 'erf_out')");
}

TEST(ModelCompiler, UnsupportedAttributeIsRejectedWithNodeAndAttribute) {
  ModelBuilder B = validModel();
  ModelBuilder::attrInt(*B.graph().mutable_node(1), "consumed_inputs", 1);
  CompileResult R = compile(B.bytes());
  ASSERT_FALSE(R.Ok);
  EXPECT_CONTAINS(R.Error, "node 'act' (op Relu)");
  EXPECT_CONTAINS(R.Error, "unsupported attribute 'consumed_inputs'");
}

TEST(ModelCompiler, AttributeOfTheWrongTypeIsRejected) {
  ModelBuilder B;
  B.input("x", {1, 4});
  ModelBuilder::attrFloat(B.node("Softmax", {"x"}, {"y"}, "sm"), "axis", 1.0f);
  B.output("y", {1, 4});
  CompileResult R = compile(B.bytes());
  ASSERT_FALSE(R.Ok);
  EXPECT_CONTAINS(R.Error, "node 'sm' (op Softmax): attribute 'axis' "
                                 "must be INT, got FLOAT");
}

TEST(ModelCompiler, OtherDomainsAreRejected) {
  ModelBuilder B;
  B.input("x", {4});
  ox::NodeProto &N = B.node("Gelu", {"x"}, {"y"}, "gelu");
  N.set_domain("com.microsoft");
  B.output("y", {4});
  CompileResult R = compile(B.bytes());
  ASSERT_FALSE(R.Ok);
  EXPECT_CONTAINS(R.Error, "node 'gelu' (op Gelu): operator domain "
                                 "'com.microsoft' is not supported");
}

TEST(ModelCompiler, SymbolicDimensionsNeedAValue) {
  ModelBuilder B = validModel();
  ox::TensorShapeProto::Dimension *D = B.graph()
                                           .mutable_input(0)
                                           ->mutable_type()
                                           ->mutable_tensor_type()
                                           ->mutable_shape()
                                           ->mutable_dim(0);
  D->set_dim_param("batch");
  CompileResult R = compile(B.bytes());
  ASSERT_FALSE(R.Ok);
  EXPECT_CONTAINS(R.Error, "input 'x' has a symbolic dimension 'batch'");
  EXPECT_CONTAINS(R.Error, "--dim batch=N");

  // The output declares [1,2]; with batch=1 it matches.
  CompileOptions O;
  O.DimValues["batch"] = 1;
  R = compile(B.bytes(), O);
  ASSERT_TRUE(R.Ok) << R.Error;
  // batch=3 contradicts the declared output shape [1,2].
  O.DimValues["batch"] = 3;
  R = compile(B.bytes(), O);
  ASSERT_FALSE(R.Ok);
  EXPECT_CONTAINS(R.Error, "output 'y' is declared with shape [1,2] "
                                 "but computes [3,2]");
}

TEST(ModelCompiler, ShapeInputsMustBeConstant) {
  ModelBuilder B;
  B.input("x", {2, 3});
  B.input("shape", {2}, kInt64);
  B.node("Reshape", {"x", "shape"}, {"y"}, "dynamic_reshape");
  B.output("y", {3, 2});
  CompileResult R = compile(B.bytes());
  ASSERT_FALSE(R.Ok);
  EXPECT_CONTAINS(R.Error, "node 'dynamic_reshape' (op Reshape): the "
                                 "shape (input 1, 'shape') must be a constant");
}

TEST(ModelCompiler, BroadcastingAndTypeErrorsNameTheNode) {
  {
    ModelBuilder B;
    B.input("a", {2, 3});
    B.input("b", {4});
    B.node("Add", {"a", "b"}, {"y"}, "bad_add");
    B.output("y", {2, 3});
    CompileResult R = compile(B.bytes());
    ASSERT_FALSE(R.Ok);
    EXPECT_CONTAINS(R.Error, "node 'bad_add' (op Add): shapes [2,3] and "
                                   "[4] cannot be broadcast together");
  }
  {
    ModelBuilder B;
    B.input("a", {3});
    B.input("b", {3}, kDouble);
    B.node("Mul", {"a", "b"}, {"y"}, "mixed_mul");
    B.output("y", {3});
    CompileResult R = compile(B.bytes());
    ASSERT_FALSE(R.Ok);
    EXPECT_CONTAINS(R.Error, "node 'mixed_mul' (op Mul): input types "
                                   "differ (float and double)");
  }
  {
    ModelBuilder B;
    B.input("a", {2, 3});
    B.floats("w", {4, 2}, std::vector<float>(8, 1.0f));
    B.node("Gemm", {"a", "w"}, {"y"}, "bad_gemm");
    B.output("y", {2, 2});
    CompileResult R = compile(B.bytes());
    ASSERT_FALSE(R.Ok);
    EXPECT_CONTAINS(R.Error, "node 'bad_gemm' (op Gemm): inner "
                                   "dimensions differ");
  }
  {
    ModelBuilder B;
    B.input("a", {65536, 1});
    B.input("b", {1, 65536});
    B.node("Mul", {"a", "b"}, {"y"}, "outer_product");
    B.output("y", {65536, 65536});
    EXPECT_CONTAINS(compile(B.bytes()).Error,
                    "node 'outer_product' (op Mul): output shape "
                    "[65536,65536] is too large");
  }
  {
    ModelBuilder B;
    B.input("x", {2, 3});
    B.ints("shape", {3}, {4611686018427387904, 4, 1});
    B.node("Reshape", {"x", "shape"}, {"y"}, "huge_reshape");
    B.output("y", {6});
    EXPECT_CONTAINS(compile(B.bytes()).Error,
                    "node 'huge_reshape' (op Reshape): cannot reshape [2,3]");
  }
  {
    ModelBuilder B;
    B.input("a", {2, 3}, kInt64);
    B.node("Tanh", {"a"}, {"y"}, "int_tanh");
    B.output("y", {2, 3}, kInt64);
    CompileResult R = compile(B.bytes());
    ASSERT_FALSE(R.Ok);
    EXPECT_CONTAINS(R.Error, "node 'int_tanh' (op Tanh): input 0 ('a') "
                                   "is int64; supported: float, double");
  }
}

TEST(ModelCompiler, BadFilesAreClearErrors) {
  EXPECT_CONTAINS(compile("").Error, "the model file is empty");
  EXPECT_CONTAINS(compile(std::string("\xff\xff\xff\xff garbage", 12)).Error,
              "not a valid ONNX model");
  // Truncated in the middle of the weights.
  const std::string Good = validModel().bytes();
  CompileResult R = compile(Good.substr(0, Good.size() / 2));
  EXPECT_FALSE(R.Ok);
  EXPECT_FALSE(R.Error.empty());
  // No graph.
  ModelBuilder Empty;
  EXPECT_CONTAINS(compile(Empty.bytes()).Error, "the model has no graph");
}

TEST(ModelCompiler, GraphStructureErrors) {
  {
    ModelBuilder B;
    B.input("x", {2});
    B.node("Relu", {"nowhere"}, {"y"}, "dangling");
    B.output("y", {2});
    EXPECT_CONTAINS(compile(B.bytes()).Error,
                "node 'dangling' (op Relu): input 'nowhere' is not a "
                          "graph input, initializer or the output of any node");
  }
  {
    ModelBuilder B;
    B.input("x", {2});
    B.node("Add", {"x", "b"}, {"a"}, "n1");
    B.node("Relu", {"a"}, {"b"}, "n2");
    B.output("b", {2});
    EXPECT_CONTAINS(compile(B.bytes()).Error, "the graph has a cycle");
  }
  {
    ModelBuilder B;
    B.input("x", {2});
    B.node("Relu", {"x"}, {"y"}, "r");
    B.output("z", {2});
    EXPECT_CONTAINS(compile(B.bytes()).Error,
                "graph output 'z' is not computed by the graph");
  }
  {
    ModelBuilder B(6);
    B.input("x", {2});
    B.node("Relu", {"x"}, {"y"}, "r");
    B.output("y", {2});
    EXPECT_CONTAINS(compile(B.bytes()).Error,
                "opset 6 is not supported");
  }
}

TEST(ModelCompiler, UnsupportedTensorsAreRejected) {
  {
    ModelBuilder B;
    B.input("x", {2}, kFloat16);
    B.node("Relu", {"x"}, {"y"}, "r");
    B.output("y", {2}, kFloat16);
    EXPECT_CONTAINS(compile(B.bytes()).Error,
                "input 'x' has element type FLOAT16, which is not "
                          "supported");
  }
  {
    ModelBuilder B = validModel();
    ox::TensorProto *W = B.graph().mutable_initializer(0);
    W->clear_float_data();
    W->set_data_location(1);
    ox::StringStringEntryProto *E = W->add_external_data();
    E->set_key("location");
    E->set_value("weights.bin");
    EXPECT_CONTAINS(compile(B.bytes()).Error,
                "initializer 'w' keeps its data in an external file");
  }
  {
    ModelBuilder B = validModel();
    B.graph().mutable_initializer(0)->add_float_data(7.0f); // 7 values, [2,3]
    EXPECT_CONTAINS(compile(B.bytes()).Error,
                "initializer 'w' has 7 elements, shape [2,3] needs 6");
  }
}

TEST(ModelCompiler, ClassAndNamespaceMustBeIdentifiers) {
  CompileOptions O;
  O.ClassName = "int";
  EXPECT_CONTAINS(compile(validModel().bytes(), O).Error,
              "class name 'int' is not a usable C++ identifier");
  O.ClassName = "Good";
  O.Namespace = "a::9b";
  EXPECT_CONTAINS(compile(validModel().bytes(), O).Error,
              "namespace 'a::9b' is not a usable C++ namespace name");
}

TEST(ModelCompiler, AwkwardNamesBecomeSafeIdentifiers) {
  ModelBuilder B;
  B.input("input.1", {2});
  B.input("class", {2});
  B.node("Add", {"input.1", "class"}, {"onnx::Add_3\\\n*/"}, "weird \"name\"");
  B.output("onnx::Add_3\\\n*/", {2});
  CompileResult R = compile(B.bytes());
  ASSERT_TRUE(R.Ok) << R.Error;
  EXPECT_CONTAINS(R.Header, "const float *input_1, const float *class_, "
                                  "float *onnx_Add_3");
  // Comments never carry a backslash (a line splice) or a newline.
  EXPECT_EQ(R.Header.find('\\'), std::string::npos);
  // The exact names survive in string literals, escaped.
  EXPECT_CONTAINS(R.Source, "\"onnx::Add_3\\\\\\012*/\"");
}

TEST(ModelCompiler, UnusedInputsAndPassThroughOutputs) {
  ModelBuilder B;
  B.input("x", {3});
  B.input("unused", {5});
  B.node("Identity", {"x"}, {"y"}, "id");
  B.output("y", {3});
  CompileResult R = compile(B.bytes());
  ASSERT_TRUE(R.Ok) << R.Error;
  EXPECT_CONTAINS(R.Source, "(void)in1; // not needed by any output");
  EXPECT_CONTAINS(R.Source, "std::memcpy(out0, in0, 3 * sizeof(float));");
}

TEST(ModelCompiler, ListsTheSupportedOperators) {
  const std::vector<std::string> Expected = {
      "Add",     "ArgMax",  "Clip",      "Concat",     "Constant", "Div",
      "Flatten", "Gemm",    "Identity",  "LeakyRelu",  "Log",      "LogSoftmax", "MatMul",
      "Mul",     "Relu",    "Reshape",   "Sigmoid",    "Softmax",  "Squeeze",
      "Sub",     "Tanh",    "Transpose", "Unsqueeze"};
  EXPECT_EQ(mlbridge::modelc::supportedOperators(), Expected);
}

// ---- the command-line tool ---------------------------------------------------

namespace {

struct ToolRun {
  int Status = -1;
  std::string Output; // stdout and stderr
};

ToolRun runTool(const std::string &Args) {
  ToolRun R;
  const std::string Cmd =
      std::string("'") + MLBRIDGE_MODEL_COMPILER_EXE + "' " + Args + " 2>&1";
  FILE *P = ::popen(Cmd.c_str(), "r");
  if (!P)
    return R;
  char Buf[4096];
  size_t N;
  while ((N = std::fread(Buf, 1, sizeof Buf, P)) > 0)
    R.Output.append(Buf, N);
  const int S = ::pclose(P);
  R.Status = WIFEXITED(S) ? WEXITSTATUS(S) : -1;
  return R;
}

class ToolTest : public ::testing::Test {
protected:
  void SetUp() override {
    char Template[] = "/tmp/mlbridge-modelc-XXXXXX";
    ASSERT_NE(::mkdtemp(Template), nullptr);
    Dir = Template;
  }
  void TearDown() override {
    const std::string Cmd = "rm -rf '" + Dir + "'";
    ASSERT_EQ(std::system(Cmd.c_str()), 0);
  }
  std::string write(const std::string &Name, const std::string &Bytes) {
    const std::string Path = Dir + "/" + Name;
    std::ofstream(Path, std::ios::binary) << Bytes;
    return Path;
  }
  std::string Dir;
};

} // namespace

TEST_F(ToolTest, RejectsAnUnsupportedOperatorNamingTheNode) {
  ModelBuilder B;
  B.input("x", {4});
  B.node("Erf", {"x"}, {"y"}, "mystery_node");
  B.output("y", {4});
  const std::string Model = write("bad.onnx", B.bytes());
  ToolRun R = runTool("'" + Model + "' --name Bad -o '" + Dir + "'");
  EXPECT_EQ(R.Status, 1);
  EXPECT_CONTAINS(R.Output, "error: " + Model + ": node 'mystery_node' "
                                  "(op Erf): unsupported operator 'Erf'");
  EXPECT_FALSE(std::ifstream(Dir + "/Bad.h").good());
}

TEST_F(ToolTest, WritesTheHeaderAndSource) {
  const std::string Model = write("good.onnx", validModel().bytes());
  ToolRun R = runTool("'" + Model + "' --name Good --namespace ns -o '" + Dir +
                      "' --basename good_model");
  ASSERT_EQ(R.Status, 0) << R.Output;
  EXPECT_CONTAINS(R.Output, "ns::Good from good.onnx");
  std::ifstream H(Dir + "/good_model.h"), S(Dir + "/good_model.cpp");
  ASSERT_TRUE(H.good() && S.good());
  std::string Src((std::istreambuf_iterator<char>(S)), {});
  EXPECT_CONTAINS(Src, "#include \"good_model.h\"");
}

TEST_F(ToolTest, UsageErrors) {
  EXPECT_EQ(runTool("").Status, 2);
  EXPECT_EQ(runTool("model.onnx").Status, 2); // no --name
  EXPECT_EQ(runTool("m.onnx --name X --dim batch").Status, 2);
  EXPECT_EQ(runTool("m.onnx --name X --bogus").Status, 2);
  ToolRun Missing = runTool("'" + Dir + "/none.onnx' --name X");
  EXPECT_EQ(Missing.Status, 1);
  EXPECT_CONTAINS(Missing.Output, "cannot open");
  ToolRun Ops = runTool("--list-ops");
  EXPECT_EQ(Ops.Status, 0);
  EXPECT_CONTAINS(Ops.Output, "Gemm\n");
}

TEST(ModelCompiler, CorruptedModelsNeverCrash) {
  // Random byte flips and truncations of real models: every outcome is a
  // result (usually an error message), never a crash (run under ASan too).
  for (const char *Name : {"policy_head.onnx", "zoo_opset14.onnx"}) {
    std::ifstream In(std::string(MLBRIDGE_COMPILED_MODELS_DIR) + "/" + Name,
                     std::ios::binary);
    const std::string Good((std::istreambuf_iterator<char>(In)), {});
    ASSERT_FALSE(Good.empty());
    ASSERT_TRUE(compile(Good).Ok);
    std::mt19937 G(77);
    int Errors = 0;
    for (int Trial = 0; Trial < 150; ++Trial) {
      std::string Bad = Good;
      const int Flips = 1 + Trial % 4;
      for (int F = 0; F < Flips; ++F)
        Bad[G() % Bad.size()] = static_cast<char>(G() & 0xff);
      if (Trial % 5 == 0)
        Bad.resize(G() % Bad.size());
      CompileResult R = compile(Bad);
      EXPECT_TRUE(R.Ok || !R.Error.empty());
      EXPECT_EQ(R.Error.find("internal error"), std::string::npos) << R.Error;
      Errors += !R.Ok;
    }
    EXPECT_GT(Errors, 0);
  }
}
