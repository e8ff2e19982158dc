//===- codegen.cpp - Buffer planning and the generated files --------------===//
//
// After import, the compiler
//  1. drops nodes no graph output needs,
//  2. plans buffers: graph outputs are computed straight into the caller's
//     output arrays; other results share a per-type workspace arena, reused
//     once a value is dead (elementwise operators write in place when their
//     input dies with them); views (Reshape, Flatten, ...) alias their input,
//  3. emits each node's loops into run(), and
//  4. writes the header (class, Workspace, run, info) and the source
//     (constant weights, helper templates, run, info).
//
//===----------------------------------------------------------------------===//
#include "emit.h"
#include "graph.h"
#include "model_compiler.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace mlbridge::modelc {

// ---- text helpers -------------------------------------------------------------

std::string commentText(const std::string &S) {
  std::string R;
  for (unsigned char Ch : S)
    R += (Ch >= 0x20 && Ch < 0x7f && Ch != '\\') ? static_cast<char>(Ch) : '?';
  return R;
}

std::string stringLiteral(const std::string &S) {
  std::string R = "\"";
  for (unsigned char Ch : S) {
    if (Ch == '"' || Ch == '\\') {
      R += '\\';
      R += static_cast<char>(Ch);
    } else if (Ch >= 0x20 && Ch < 0x7f && Ch != '?') {
      R += static_cast<char>(Ch);
    } else {
      char Buf[8];
      std::snprintf(Buf, sizeof Buf, "\\%03o", Ch);
      R += Buf;
    }
  }
  return R + "\"";
}

namespace {

std::string floatLiteral(double V, bool IsFloat) {
  const char *Ty = IsFloat ? "float" : "double";
  if (std::isnan(V))
    return std::string("std::numeric_limits<") + Ty + ">::quiet_NaN()";
  if (std::isinf(V))
    return std::string(V < 0 ? "-" : "") + "std::numeric_limits<" + Ty +
           ">::infinity()";
  char Buf[64];
  std::snprintf(Buf, sizeof Buf, "%a", V);
  std::string S = Buf;
  if (IsFloat)
    S += 'f';
  return S;
}

std::string intLiteral(int64_t V, ET T) {
  if (T == ET::Int64 && V == std::numeric_limits<int64_t>::min())
    return "(-9223372036854775807LL - 1)";
  if (T == ET::Int32 && V == std::numeric_limits<int32_t>::min())
    return "(-2147483647 - 1)";
  std::string S = std::to_string(V);
  if (T == ET::Int64)
    S += "LL";
  return S;
}

} // namespace

std::string EmitContext::literal(ET T, double V) {
  switch (T) {
  case ET::Float:
    return floatLiteral(static_cast<float>(V), true);
  case ET::Double:
    return floatLiteral(V, false);
  case ET::Bool:
    return V != 0 ? "true" : "false";
  case ET::UInt64:
    return std::to_string(static_cast<uint64_t>(V)) + "ULL";
  case ET::UInt32:
    return std::to_string(static_cast<uint32_t>(V)) + "u";
  default:
    return "static_cast<" + std::string(etCType(T)) + ">(" +
           intLiteral(static_cast<int64_t>(V), T) + ")";
  }
}

std::string EmitContext::literalOf(const Value &V, size_t I) {
  switch (V.Type) {
  case ET::Float:
    return floatLiteral(V.at<float>(I), true);
  case ET::Double:
    return floatLiteral(V.at<double>(I), false);
  case ET::Bool:
    return V.at<uint8_t>(I) ? "true" : "false";
  case ET::UInt64:
    return std::to_string(V.at<uint64_t>(I)) + "ULL";
  case ET::UInt32:
    return std::to_string(V.at<uint32_t>(I)) + "u";
  default:
    return intLiteral(V.asInt64(I), V.Type);
  }
}

namespace {

const std::set<std::string> &cppKeywords() {
  static const std::set<std::string> K = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor",
      "bool", "break", "case", "catch", "char", "char8_t", "char16_t",
      "char32_t", "class", "compl", "concept", "const", "consteval",
      "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double",
      "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false",
      "float", "for", "friend", "goto", "if", "inline", "int", "long",
      "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr",
      "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof",
      "static", "static_assert", "static_cast", "struct", "switch", "template",
      "this", "thread_local", "throw", "true", "try", "typedef", "typeid",
      "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
      "wchar_t", "while", "xor", "xor_eq", "std", "W", "mlbridge"};
  return K;
}

bool isIdentifier(const std::string &S) {
  if (S.empty() || !(std::isalpha(static_cast<unsigned char>(S[0])) ||
                     S[0] == '_'))
    return false;
  for (char Ch : S)
    if (!(std::isalnum(static_cast<unsigned char>(Ch)) || Ch == '_'))
      return false;
  return !cppKeywords().count(S) && S.find("__") == std::string::npos &&
         !(S[0] == '_' && S.size() > 1 && std::isupper(
                                               static_cast<unsigned char>(S[1])));
}

/// A readable C++ identifier for an ONNX value name.
std::string sanitize(const std::string &Name, const std::string &Fallback) {
  std::string S;
  for (unsigned char Ch : Name) {
    const char C = std::isalnum(Ch) ? static_cast<char>(Ch) : '_';
    if (C == '_' && (S.empty() || S.back() == '_'))
      continue;
    S += C;
  }
  while (!S.empty() && S.back() == '_')
    S.pop_back();
  if (S.size() > 48)
    S.resize(48);
  if (S.empty())
    S = Fallback;
  if (std::isdigit(static_cast<unsigned char>(S[0])))
    S = Fallback + "_" + S;
  if (cppKeywords().count(S))
    S += "_";
  return S;
}

struct Arena {
  int64_t Size = 0;
  std::vector<std::pair<int64_t, int64_t>> Free; // offset, length (sorted)

  int64_t alloc(int64_t N) {
    for (size_t I = 0; I < Free.size(); ++I) {
      if (Free[I].second < N)
        continue;
      const int64_t Off = Free[I].first;
      Free[I].first += N;
      Free[I].second -= N;
      if (Free[I].second == 0)
        Free.erase(Free.begin() + static_cast<long>(I));
      return Off;
    }
    // Grow: reuse a free block that ends at the top.
    if (!Free.empty() && Free.back().first + Free.back().second == Size) {
      const int64_t Off = Free.back().first;
      Free.pop_back();
      Size = Off + N;
      return Off;
    }
    const int64_t Off = Size;
    Size += N;
    return Off;
  }

  void release(int64_t Off, int64_t N) {
    auto It = std::lower_bound(Free.begin(), Free.end(),
                               std::make_pair(Off, int64_t(0)));
    It = Free.insert(It, {Off, N});
    // Coalesce with neighbours.
    size_t I = static_cast<size_t>(It - Free.begin());
    if (I + 1 < Free.size() &&
        Free[I].first + Free[I].second == Free[I + 1].first) {
      Free[I].second += Free[I + 1].second;
      Free.erase(Free.begin() + static_cast<long>(I) + 1);
    }
    if (I > 0 && Free[I - 1].first + Free[I - 1].second == Free[I].first) {
      Free[I - 1].second += Free[I].second;
      Free.erase(Free.begin() + static_cast<long>(I));
    }
  }
};

int64_t alignedCount(const Value &V) {
  const int64_t Align = std::max<int64_t>(1, 64 / static_cast<int64_t>(etSize(V.Type)));
  return (V.count() + Align - 1) / Align * Align;
}

class Compiler {
public:
  Compiler(Graph &G, const CompileOptions &O) : G(G), Opts(O), C(G) {}

  CompileResult run();

private:
  int root(int V) const {
    while (G.Values[V].K == Value::Computed) {
      const Node &N = G.Nodes[static_cast<size_t>(G.Values[V].Producer)];
      if (N.Folded || !N.Impl->isView())
        break;
      V = N.In[0];
    }
    return V;
  }
  void markLive();
  void plan();
  void emitBody();
  std::string header() const;
  std::string source() const;
  std::string summary() const;
  std::string qualifiedName() const {
    return Opts.Namespace.empty() ? Opts.ClassName
                                  : Opts.Namespace + "::" + Opts.ClassName;
  }
  std::string signature(bool Named, bool WithWorkspace) const;

  Graph &G;
  const CompileOptions &Opts;
  EmitContext C;
  std::vector<int> Exec; ///< nodes that run code, in order
  std::vector<int> OutputCopies; ///< graph outputs copied at the end
  std::map<ET, Arena> Arenas;
  std::vector<std::string> InNames, OutNames; ///< C++ parameter names
  std::set<int> UsedInputs;
};

void Compiler::markLive() {
  std::vector<bool> Needed(G.Values.size(), false);
  for (int V : G.Outputs)
    Needed[static_cast<size_t>(V)] = true;
  for (size_t I = G.Nodes.size(); I-- > 0;) {
    Node &N = G.Nodes[I];
    N.Live = Needed[static_cast<size_t>(N.Out[0])];
    if (!N.Live || N.Folded)
      continue;
    for (int In : N.In)
      if (In >= 0)
        Needed[static_cast<size_t>(In)] = true;
  }
  for (const Node &N : G.Nodes)
    if (N.Live && !N.Folded && !N.Impl->isView())
      Exec.push_back(N.Index);
}

void Compiler::plan() {
  const size_t NV = G.Values.size();
  C.Where.assign(NV, Storage());
  C.ConstNames.assign(NV, "");
  for (size_t V = 0; V < NV; ++V) {
    if (G.Values[V].K == Value::Input)
      C.Where[V] = {Storage::Input, G.Values[V].InputIndex, 0};
    else if (G.Values[V].K == Value::Constant)
      C.Where[V] = {Storage::Constant, 0, 0};
  }
  // Last step reading each root.
  std::vector<int> LastUse(NV, -1);
  for (size_t S = 0; S < Exec.size(); ++S)
    for (int In : G.Nodes[static_cast<size_t>(Exec[S])].In)
      if (In >= 0)
        LastUse[static_cast<size_t>(root(In))] = static_cast<int>(S);
  // Graph outputs computed in place in the caller's arrays.
  for (size_t J = 0; J < G.Outputs.size(); ++J) {
    const int R = root(G.Outputs[J]);
    if (G.Values[R].K == Value::Computed && C.Where[R].K == Storage::None)
      C.Where[R] = {Storage::Output, static_cast<int>(J), 0};
    else
      OutputCopies.push_back(static_cast<int>(J));
  }
  for (size_t S = 0; S < Exec.size(); ++S) {
    const Node &N = G.Nodes[static_cast<size_t>(Exec[S])];
    const int O = N.Out[0];
    const Value &OV = G.Values[O];
    int Moved = -1;
    if (C.Where[O].K == Storage::None) {
      // In place: an input buffer that dies here, with the same shape.
      const std::vector<int> Cands = N.Impl->inPlaceInputs(G, N);
      for (int K : Cands) {
        const int R = root(N.In[static_cast<size_t>(K)]);
        if (C.Where[R].K != Storage::Workspace ||
            LastUse[static_cast<size_t>(R)] != static_cast<int>(S) ||
            alignedCount(G.Values[R]) != alignedCount(OV) ||
            G.Values[R].Type != OV.Type)
          continue;
        bool Safe = true; // every other use of R here must be in place too
        for (size_t I = 0; I < N.In.size(); ++I)
          if (N.In[I] >= 0 && root(N.In[I]) == R &&
              std::find(Cands.begin(), Cands.end(), static_cast<int>(I)) ==
                  Cands.end())
            Safe = false;
        if (!Safe)
          continue;
        C.Where[O] = C.Where[R];
        Moved = R;
        break;
      }
      if (Moved < 0)
        C.Where[O] = {Storage::Workspace, 0,
                      Arenas[OV.Type].alloc(alignedCount(OV))};
    }
    // Free what died here.
    std::set<int> Dead;
    for (int In : N.In)
      if (In >= 0) {
        const int R = root(In);
        if (LastUse[static_cast<size_t>(R)] == static_cast<int>(S) &&
            C.Where[R].K == Storage::Workspace && R != Moved)
          Dead.insert(R);
      }
    if (LastUse[static_cast<size_t>(O)] < 0 &&
        C.Where[O].K == Storage::Workspace)
      Dead.insert(O); // computed but never read (cannot happen when live)
    for (int R : Dead)
      Arenas[G.Values[R].Type].release(C.Where[R].Offset,
                                       alignedCount(G.Values[R]));
  }
}

void Compiler::emitBody() {
  for (int Idx : Exec) {
    const Node &N = G.Nodes[static_cast<size_t>(Idx)];
    std::string Ins;
    for (int In : N.In)
      if (In >= 0)
        Ins += (Ins.empty() ? "" : ", ") +
               std::string(etName(G.Values[In].Type)) +
               shapeText(G.Values[In].Dims);
    const Value &O = G.Values[N.Out[0]];
    C.line("// " + commentText(N.describe()) + ": " + commentText(Ins) +
           " -> " + etName(O.Type) + shapeText(O.Dims));
    N.Impl->emit(C, N);
  }
  for (int J : OutputCopies) {
    const int V = G.Outputs[static_cast<size_t>(J)];
    const Value::Kind K = G.Values[root(V)].K;
    C.line("// output '" + commentText(G.OutputNames[static_cast<size_t>(J)]) +
           "' is " + (K == Value::Input      ? "an input"
                      : K == Value::Constant ? "a constant"
                                             : "another output") +
           " (or a view of one): copy it");
    C.line("std::memcpy(out" + std::to_string(J) + ", " + C.ptr(V) + ", " +
           std::to_string(G.Values[V].count()) + " * sizeof(" + C.ctype(V) +
           "));");
  }
}

std::string Compiler::signature(bool Named, bool WithWorkspace) const {
  std::string S;
  for (size_t I = 0; I < G.Inputs.size(); ++I) {
    const Value &V = G.Values[static_cast<size_t>(G.Inputs[I])];
    S += (S.empty() ? "" : ", ") + std::string("const ") + etCType(V.Type) +
         " *" + (Named ? InNames[I] : "in" + std::to_string(I));
  }
  for (size_t J = 0; J < G.Outputs.size(); ++J) {
    const Value &V = G.Values[static_cast<size_t>(G.Outputs[J])];
    S += (S.empty() ? "" : ", ") + std::string(etCType(V.Type)) + " *" +
         (Named ? OutNames[J] : "out" + std::to_string(J));
  }
  if (WithWorkspace)
    S += (S.empty() ? "" : ", ") + std::string("Workspace &W");
  return S;
}

std::string Compiler::header() const {
  std::ostringstream H;
  std::string Guard = "MLBRIDGE_GENERATED_";
  for (char Ch : qualifiedName())
    Guard += std::isalnum(static_cast<unsigned char>(Ch))
                 ? static_cast<char>(std::toupper(static_cast<unsigned char>(Ch)))
                 : '_';
  Guard += "_H";
  H << "// Generated by mlbridge-model-compiler from "
    << commentText(Opts.SourceName) << ". Do not edit.\n"
    << "//\n// " << commentText(qualifiedName()) << ": a compiled ONNX model"
    << (G.Producer.empty() ? "" : " (" + commentText(G.Producer) + ")")
    << ", opset " << G.Opset << ".\n"
    << "// Needs only the C++17 standard library (and the header-only\n"
       "// mlbridge/compiled_model.h). run() is a pure function of its inputs:\n"
       "// call it from any number of threads, each with its own Workspace.\n"
    << "#ifndef " << Guard << "\n#define " << Guard << "\n\n"
    << "#include \"mlbridge/compiled_model.h\"\n\n#include <cstddef>\n"
    << "#include <cstdint>\n\n";
  if (!Opts.Namespace.empty())
    H << "namespace " << Opts.Namespace << " {\n\n";
  H << "class " << Opts.ClassName << " {\npublic:\n";
  H << "  static constexpr std::size_t kNumInputs = " << G.Inputs.size()
    << ";\n  static constexpr std::size_t kNumOutputs = " << G.Outputs.size()
    << ";\n";
  auto Sizes = [&](const std::vector<int> &Vs) {
    std::string S;
    for (int V : Vs)
      S += (S.empty() ? "" : ", ") + std::to_string(G.Values[V].count());
    return S;
  };
  if (!G.Inputs.empty())
    H << "  /// Elements of each input, in run() order.\n"
      << "  static constexpr std::size_t kInputElements[] = {"
      << Sizes(G.Inputs) << "};\n";
  H << "  /// Elements of each output, in run() order.\n"
    << "  static constexpr std::size_t kOutputElements[] = {"
    << Sizes(G.Outputs) << "};\n\n";
  H << "  /// Scratch memory for one call (intermediate results).\n"
    << "  struct Workspace {\n";
  for (const auto &KV : Arenas)
    if (KV.second.Size > 0)
      H << "    alignas(64) " << etCType(KV.first) << " " << etArena(KV.first)
        << "[" << KV.second.Size << "];\n";
  H << "  };\n  static constexpr std::size_t kWorkspaceBytes = "
       "sizeof(Workspace);\n\n";
  H << "  /// Runs the model. Every array is dense and row-major; outputs "
       "must not\n  /// overlap inputs or each other.\n";
  for (size_t I = 0; I < G.Inputs.size(); ++I) {
    const Value &V = G.Values[static_cast<size_t>(G.Inputs[I])];
    H << "  ///   " << InNames[I] << ": input '" << commentText(V.Name) << "', "
      << etName(V.Type) << shapeText(V.Dims) << "\n";
  }
  for (size_t J = 0; J < G.Outputs.size(); ++J) {
    const Value &V = G.Values[static_cast<size_t>(G.Outputs[J])];
    H << "  ///   " << OutNames[J] << ": output '"
      << commentText(G.OutputNames[J]) << "', " << etName(V.Type)
      << shapeText(V.Dims) << "\n";
  }
  H << "  static void run(" << signature(true, true) << ") noexcept;\n";
  int64_t WsBytes = 0;
  for (const auto &KV : Arenas)
    WsBytes += KV.second.Size * static_cast<int64_t>(etSize(KV.first));
  if (static_cast<size_t>(WsBytes) <= Opts.StackWorkspaceLimit) {
    std::string Args;
    for (const std::string &N : InNames)
      Args += N + ", ";
    for (const std::string &N : OutNames)
      Args += N + ", ";
    H << "  /// The same, with the workspace (" << WsBytes
      << " bytes) on the stack.\n"
      << "  static void run(" << signature(true, false) << ") noexcept {\n"
      << "    Workspace W;\n    run(" << Args << "W);\n  }\n";
  }
  H << "  /// The model's description, for mlbridge::CompiledModelRunner.\n"
    << "  static const ::mlbridge::EmbeddedModel &info() noexcept;\n"
    << "};\n";
  if (!Opts.Namespace.empty())
    H << "\n} // namespace " << Opts.Namespace << "\n";
  H << "\n#endif // " << Guard << "\n";
  return H.str();
}

std::string Compiler::source() const {
  std::ostringstream S;
  S << "// Generated by mlbridge-model-compiler from "
    << commentText(Opts.SourceName) << ". Do not edit.\n"
    << "#include \"" << Opts.HeaderInclude << "\"\n\n"
    << "#include <cmath>\n#include <cstddef>\n#include <cstdint>\n"
    << "#include <cstring>\n#include <limits>\n#include <new>\n"
    << "#include <type_traits>\n#include <utility>\n\n";
  if (!Opts.Namespace.empty())
    S << "namespace " << Opts.Namespace << " {\n\n";
  S << "namespace {\n\n";
  // Constant weights.
  for (size_t V = 0; V < G.Values.size(); ++V) {
    if (C.ConstNames[V].empty())
      continue;
    const Value &Val = G.Values[V];
    S << "// '" << commentText(Val.Name) << "' " << etName(Val.Type)
      << shapeText(Val.Dims) << "\n"
      << "alignas(64) const " << etCType(Val.Type) << " " << C.ConstNames[V]
      << "[" << Val.count() << "] = {";
    const int64_t Count = Val.count();
    for (int64_t I = 0; I < Count; ++I) {
      if (I % 6 == 0)
        S << "\n   ";
      S << " " << EmitContext::literalOf(Val, static_cast<size_t>(I)) << ",";
    }
    S << "\n};\n\n";
  }
  // Helper templates.
  std::set<std::string> K = C.Kernels;
  if (K.count("gemm") || K.count("intops"))
    K.insert("arith");
  for (const char *Name : {"arith", "intops", "gemm", "softmax", "argmax"})
    if (K.count(Name))
      S << kernelSource(Name) << "\n";
  // Type-erased entry points and the description.
  const std::string Cls = Opts.ClassName;
  auto Shapes = [&](const std::vector<int> &Vs, const char *Tag) {
    for (size_t I = 0; I < Vs.size(); ++I) {
      const Value &V = G.Values[static_cast<size_t>(Vs[I])];
      if (V.Dims.empty())
        continue;
      S << "constexpr std::int64_t kShape" << Tag << I << "[] = {";
      for (size_t D = 0; D < V.Dims.size(); ++D)
        S << (D ? ", " : "") << V.Dims[D];
      S << "};\n";
    }
  };
  auto Infos = [&](const std::vector<int> &Vs, const std::vector<std::string> &Names,
                   const char *Tag) {
    if (Vs.empty())
      return;
    S << "const ::mlbridge::EmbeddedTensorInfo k" << Tag << "Info[] = {\n";
    for (size_t I = 0; I < Vs.size(); ++I) {
      const Value &V = G.Values[static_cast<size_t>(Vs[I])];
      S << "    {" << stringLiteral(Names[I])
        << ", ::mlbridge::DType::" << etEnumName(V.Type) << ", "
        << V.Dims.size() << ", "
        << (V.Dims.empty() ? std::string("nullptr")
                           : "kShape" + std::string(Tag) + std::to_string(I))
        << ", " << V.count() << "},\n";
    }
    S << "};\n";
  };
  Shapes(G.Inputs, "In");
  Shapes(G.Outputs, "Out");
  std::vector<std::string> InOnnx;
  for (int V : G.Inputs)
    InOnnx.push_back(G.Values[V].Name);
  Infos(G.Inputs, InOnnx, "In");
  Infos(G.Outputs, G.OutputNames, "Out");
  // An instance: the workspace and a buffer per input and output.
  const size_t NumIn = G.Inputs.size(), NumOut = G.Outputs.size();
  auto Buffers = [&](const std::vector<int> &Vs, const char *Tag) {
    for (size_t I = 0; I < Vs.size(); ++I) {
      const Value &V = G.Values[static_cast<size_t>(Vs[I])];
      S << "  alignas(64) " << etCType(V.Type) << " " << Tag << I << "["
        << V.count() << "];\n";
    }
  };
  S << "\nstruct mk_instance {\n  " << Cls << "::Workspace W;\n";
  Buffers(G.Inputs, "in");
  Buffers(G.Outputs, "out");
  S << "};\n\n"
    << "void *mk_create() noexcept { return new (std::nothrow) mk_instance; }\n"
    << "void mk_destroy(void *P) noexcept {\n"
    << "  delete static_cast<mk_instance *>(P);\n}\n";
  // Buffer I of an instance: a switch over the buffers' names.
  auto Lookup = [&](const char *Fn, const char *Const, size_t N,
                    const char *Tag) {
    S << Const << "void *" << Fn << "(" << Const
      << "void *P, std::size_t I) noexcept {\n";
    if (N == 0) {
      S << "  (void)P;\n  (void)I;\n  return nullptr;\n}\n";
      return;
    }
    S << "  " << Const << "mk_instance *X = static_cast<" << Const
      << "mk_instance *>(P);\n  switch (I) {\n";
    for (size_t I = 0; I < N; ++I)
      S << "  case " << I << ": return X->" << Tag << I << ";\n";
    S << "  default: return nullptr;\n  }\n}\n";
  };
  Lookup("mk_input", "", NumIn, "in");
  Lookup("mk_output", "const ", NumOut, "out");
  S << "bool mk_run(void *P) noexcept {\n"
    << "  mk_instance *X = static_cast<mk_instance *>(P);\n"
    << "  " << Cls << "::run(";
  for (size_t I = 0; I < NumIn; ++I)
    S << "X->in" << I << ", ";
  for (size_t J = 0; J < NumOut; ++J)
    S << "X->out" << J << ", ";
  S << "X->W);\n  return true;\n}\n\n";
  S << "const ::mlbridge::EmbeddedModel kInfo = {\n"
    << "    ::mlbridge::kEmbeddedModelAbiVersion,\n"
    << "    " << stringLiteral(qualifiedName()) << ",\n"
    << "    " << stringLiteral(Opts.SourceName) << ",\n"
    << "    " << stringLiteral(G.Producer) << ",\n"
    << "    " << G.Opset << ",\n"
    << "    "
    << (G.AdviceOutput.empty() ? std::string("nullptr")
                               : stringLiteral(G.AdviceOutput))
    << ",\n"
    << "    " << NumIn << ", " << (NumIn ? "kInInfo" : "nullptr") << ",\n"
    << "    " << NumOut << ", kOutInfo,\n"
    << "    &mk_create,\n    &mk_destroy,\n    &mk_input,\n"
    << "    &mk_run,\n    &mk_output,\n};\n\n";
  S << "} // namespace\n\n";
  // run().
  S << "void " << Cls << "::run(" << signature(false, true) << ") noexcept {\n";
  for (size_t I = 0; I < G.Inputs.size(); ++I)
    if (!UsedInputs.count(static_cast<int>(I)))
      S << "  (void)in" << I << "; // not needed by any output\n";
  bool UsesWorkspace = false;
  for (const auto &KV : Arenas)
    UsesWorkspace = UsesWorkspace || KV.second.Size > 0;
  if (!UsesWorkspace)
    S << "  (void)W; // no intermediate results\n";
  S << C.Body << "}\n\n";
  S << "const ::mlbridge::EmbeddedModel &" << Cls
    << "::info() noexcept { return kInfo; }\n";
  if (!Opts.Namespace.empty())
    S << "\n} // namespace " << Opts.Namespace << "\n";
  return S.str();
}

std::string Compiler::summary() const {
  std::ostringstream S;
  S << qualifiedName() << " from " << Opts.SourceName << " ("
    << (G.Producer.empty() ? "unknown producer" : G.Producer) << ", opset "
    << G.Opset << ")\n";
  for (size_t I = 0; I < G.Inputs.size(); ++I) {
    const Value &V = G.Values[static_cast<size_t>(G.Inputs[I])];
    S << "  input  " << V.Name << " " << etName(V.Type) << shapeText(V.Dims)
      << "\n";
  }
  for (size_t J = 0; J < G.Outputs.size(); ++J) {
    const Value &V = G.Values[static_cast<size_t>(G.Outputs[J])];
    S << "  output " << G.OutputNames[J] << " " << etName(V.Type)
      << shapeText(V.Dims) << "\n";
  }
  int64_t Weights = 0;
  for (size_t V = 0; V < G.Values.size(); ++V)
    if (!C.ConstNames[V].empty())
      Weights += G.Values[V].count() * static_cast<int64_t>(etSize(G.Values[V].Type));
  int64_t Ws = 0;
  for (const auto &KV : Arenas)
    Ws += KV.second.Size * static_cast<int64_t>(etSize(KV.first));
  size_t Live = 0;
  for (const Node &N : G.Nodes)
    Live += N.Live && !N.Folded;
  S << "  nodes: " << G.Nodes.size() << " (" << Exec.size()
    << " emit code, " << (Live - Exec.size()) << " views, "
    << (G.Nodes.size() - Live) << " folded or unused)\n"
    << "  weights: " << Weights << " bytes, workspace: " << Ws << " bytes\n";
  return S.str();
}

CompileResult Compiler::run() {
  markLive();
  plan();
  // C++ parameter names for the header.
  std::set<std::string> Taken;
  auto Unique = [&](const std::string &Base) {
    std::string N = Base;
    for (int K = 2; Taken.count(N); ++K)
      N = Base + "_" + std::to_string(K);
    Taken.insert(N);
    return N;
  };
  for (int V : G.Inputs)
    InNames.push_back(Unique(sanitize(G.Values[V].Name, "input")));
  for (const std::string &N : G.OutputNames)
    OutNames.push_back(Unique(sanitize(N, "output")));
  emitBody();
  UsedInputs = C.UsedInputs;
  CompileResult R;
  R.Ok = true;
  R.Header = header();
  R.Source = source();
  R.Summary = summary();
  return R;
}

} // namespace

std::string EmitContext::ptr(int V) {
  // Views share their input's storage.
  while (G.Values[V].K == Value::Computed) {
    const Node &N = G.Nodes[static_cast<size_t>(G.Values[V].Producer)];
    if (N.Folded || !N.Impl->isView())
      break;
    V = N.In[0];
  }
  const Storage &S = Where[static_cast<size_t>(V)];
  switch (S.K) {
  case Storage::Input:
    UsedInputs.insert(S.Index);
    return "in" + std::to_string(S.Index);
  case Storage::Output:
    return "out" + std::to_string(S.Index);
  case Storage::Constant: {
    std::string &Name = ConstNames[static_cast<size_t>(V)];
    if (Name.empty())
      Name = "k" + std::to_string(NextConst++) + "_" +
             sanitize(G.Values[V].Name, "c");
    return Name;
  }
  case Storage::Workspace: {
    const std::string A =
        std::string("W.") + etArena(G.Values[static_cast<size_t>(V)].Type);
    return S.Offset == 0 ? A : "(" + A + " + " + std::to_string(S.Offset) + ")";
  }
  case Storage::None:
    break;
  }
  throw ModelError("internal error: value '" + G.Values[V].Name +
                   "' has no storage");
}

int EmitContext::constant(const std::string &Hint, ET Type, Shape Dims,
                          std::vector<unsigned char> Data) {
  const int V = G.addConstant(Hint, Type, std::move(Dims), std::move(Data));
  Where.push_back({Storage::Constant, 0, 0});
  ConstNames.push_back("");
  return V;
}

CompileResult compileOnnxModel(const std::string &Bytes,
                               const CompileOptions &Options) {
  CompileResult R;
  try {
    if (!isIdentifier(Options.ClassName))
      throw ModelError("class name '" + Options.ClassName +
                       "' is not a usable C++ identifier");
    if (!Options.Namespace.empty()) {
      std::string Ns = Options.Namespace;
      size_t Pos = 0;
      while (true) {
        const size_t Next = Ns.find("::", Pos);
        const std::string Part = Ns.substr(Pos, Next - Pos);
        if (!isIdentifier(Part))
          throw ModelError("namespace '" + Ns +
                           "' is not a usable C++ namespace name");
        if (Next == std::string::npos)
          break;
        Pos = Next + 2;
      }
    }
    if (Options.HeaderInclude.empty())
      throw ModelError("no header include name given");
    Graph G;
    importModel(Bytes, Options.DimValues, G);
    Compiler Comp(G, Options);
    R = Comp.run();
  } catch (const ModelError &E) {
    R = CompileResult();
    R.Error = E.what();
  } catch (const std::exception &E) {
    R = CompileResult();
    R.Error = std::string("internal error: ") + E.what();
  }
  return R;
}

std::vector<std::string> supportedOperators() { return opNames(); }

} // namespace mlbridge::modelc
