//===- ops.cpp - Supported ONNX operators: validation, shapes, code ------===//
//
// Each operator checks its attributes and inputs against the ONNX
// specification for the model's opset, infers its output's type and static
// shape, and emits straight-line C++ with every size a compile-time
// constant. Anything it does not implement is a ModelError naming the node.
//
//===----------------------------------------------------------------------===//
#include "emit.h"
#include "graph.h"

#include "onnx_subset.pb.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

namespace mlbridge::modelc {

namespace {

namespace ox = mlbridge::onnx_subset;

const std::initializer_list<ET> kFloatTypes = {ET::Float, ET::Double};
const std::initializer_list<ET> kNumericTypes = {
    ET::Float, ET::Double, ET::Int8,   ET::Int16,  ET::Int32,
    ET::Int64, ET::UInt8,  ET::UInt16, ET::UInt32, ET::UInt64};

/// Row-major strides of a shape, in elements.
std::vector<int64_t> stridesOf(const Shape &S) {
  std::vector<int64_t> R(S.size(), 1);
  for (size_t I = S.size(); I-- > 1;)
    R[I - 1] = R[I] * S[I];
  return R;
}

int64_t product(const Shape &S, size_t Begin, size_t End) {
  if (Begin >= End || Begin >= S.size())
    return 1;
  return elementCount(
      Shape(S.begin() + static_cast<long>(Begin),
            S.begin() + static_cast<long>(std::min(End, S.size()))));
}

/// Numpy-style multidirectional broadcasting of two shapes.
Shape broadcast(const InferContext &C, const Shape &A, const Shape &B) {
  const size_t R = std::max(A.size(), B.size());
  Shape Out(R);
  for (size_t I = 0; I < R; ++I) {
    const int64_t DA = I < R - A.size() ? 1 : A[I - (R - A.size())];
    const int64_t DB = I < R - B.size() ? 1 : B[I - (R - B.size())];
    if (DA != DB && DA != 1 && DB != 1)
      C.fail("shapes " + shapeText(A) + " and " + shapeText(B) +
             " cannot be broadcast together");
    Out[I] = DA == 1 ? DB : DA;
  }
  return Out;
}

// ---- elementwise loop nests ----------------------------------------------

/// A loop nest over an output shape with, per operand, the stride of each
/// loop (0 where the operand is broadcast). Unit loops are dropped and
/// adjacent loops merged where every operand allows it.
struct LoopNest {
  std::vector<int64_t> Dims;
  std::vector<std::vector<int64_t>> Strides; // [operand][loop]
};

LoopNest makeNest(const Shape &Out, const std::vector<Shape> &Operands) {
  LoopNest Raw;
  const size_t R = Out.size();
  std::vector<std::vector<int64_t>> S(Operands.size(),
                                      std::vector<int64_t>(R, 0));
  for (size_t K = 0; K < Operands.size(); ++K) {
    const Shape &O = Operands[K];
    const std::vector<int64_t> OS = stridesOf(O);
    for (size_t I = 0; I < R; ++I) {
      if (I < R - O.size())
        continue;
      const size_t J = I - (R - O.size());
      S[K][I] = O[J] == 1 ? 0 : OS[J];
    }
  }
  LoopNest N;
  N.Strides.assign(Operands.size(), {});
  for (size_t I = 0; I < R; ++I) {
    if (Out[I] == 1)
      continue;
    bool Merge = !N.Dims.empty();
    for (size_t K = 0; Merge && K < Operands.size(); ++K)
      Merge = N.Strides[K].back() == S[K][I] * Out[I];
    if (Merge) {
      N.Dims.back() *= Out[I];
      for (size_t K = 0; K < Operands.size(); ++K)
        N.Strides[K].back() = S[K][I];
      continue;
    }
    N.Dims.push_back(Out[I]);
    for (size_t K = 0; K < Operands.size(); ++K)
      N.Strides[K].push_back(S[K][I]);
  }
  return N;
}

std::string indexExpr(const std::vector<int64_t> &Strides) {
  std::string E;
  for (size_t I = 0; I < Strides.size(); ++I) {
    if (Strides[I] == 0)
      continue;
    if (!E.empty())
      E += " + ";
    E += "i" + std::to_string(I);
    if (Strides[I] != 1)
      E += " * " + std::to_string(Strides[I]);
  }
  return E.empty() ? "0" : E;
}

/// Emits Out[...] = Expr(operands...) over Out's shape with broadcasting.
/// Expr gets the names of the operand element variables. A constant scalar
/// operand is inlined as a literal.
void emitElementwise(
    EmitContext &C, int Out, const std::vector<int> &Operands,
    const std::function<std::string(const std::vector<std::string> &)> &Expr,
    const std::string &Comment = "") {
  const Graph &G = C.G;
  const Value &OV = G.Values[Out];
  std::vector<Shape> Shapes;
  std::vector<std::string> Names;
  std::vector<bool> Inline;
  for (int V : Operands) {
    Shapes.push_back(G.Values[V].Dims);
    const bool Lit = G.Values[V].isConstant() && G.Values[V].count() == 1;
    Inline.push_back(Lit);
  }
  const LoopNest N = makeNest(OV.Dims, Shapes);
  C.line("{" + (Comment.empty() ? "" : " // " + commentText(Comment)));
  for (size_t K = 0; K < Operands.size(); ++K)
    if (!Inline[K])
      C.line("  const " + C.ctype(Operands[K]) + " *a" + std::to_string(K) +
             " = " + C.ptr(Operands[K]) + ";");
  C.line("  " + C.ctype(Out) + " *y = " + C.ptr(Out) + ";");
  std::string Indent = "  ";
  for (size_t I = 0; I < N.Dims.size(); ++I) {
    C.line(Indent + "for (std::size_t i" + std::to_string(I) + " = 0; i" +
           std::to_string(I) + " < " + std::to_string(N.Dims[I]) + "; ++i" +
           std::to_string(I) + ") {");
    Indent += "  ";
  }
  for (size_t K = 0; K < Operands.size(); ++K) {
    const std::string Var = "v" + std::to_string(K);
    Names.push_back(Var);
    const Value &V = G.Values[Operands[K]];
    if (Inline[K])
      C.line(Indent + "const " + C.ctype(Operands[K]) + " " + Var + " = " +
             EmitContext::literalOf(V, 0) + ";");
    else
      C.line(Indent + "const " + C.ctype(Operands[K]) + " " + Var + " = a" +
             std::to_string(K) + "[" + indexExpr(N.Strides[K]) + "];");
  }
  std::vector<int64_t> OutStrides(N.Dims.size(), 1);
  for (size_t I = N.Dims.size(); I-- > 1;)
    OutStrides[I - 1] = OutStrides[I] * N.Dims[I];
  C.line(Indent + "y[" + indexExpr(OutStrides) + "] = " + Expr(Names) + ";");
  for (size_t I = N.Dims.size(); I-- > 0;) {
    Indent.resize(Indent.size() - 2);
    C.line(Indent + "}");
  }
  C.line("}");
}

/// Inputs that may share the output's buffer: same shape as the output.
std::vector<int> sameShapeInputs(const Graph &G, const Node &N) {
  std::vector<int> R;
  const Shape &O = G.Values[N.Out[0]].Dims;
  for (size_t I = 0; I < N.In.size(); ++I)
    if (N.In[I] >= 0 && G.Values[N.In[I]].Dims == O &&
        G.Values[N.In[I]].Type == G.Values[N.Out[0]].Type)
      R.push_back(static_cast<int>(I));
  return R;
}

// ---- unary elementwise ----------------------------------------------------

class UnaryOp : public OpImpl {
public:
  enum Kind { Relu, LeakyRelu, Tanh, Sigmoid, Log };
  explicit UnaryOp(Kind K) : K(K) {}

  void infer(InferContext &C) override {
    if (K == LeakyRelu)
      C.allowAttrs({"alpha"});
    else
      C.allowAttrs({});
    C.expectInputs(1, 1);
    if (K == Relu)
      C.expectType(0, {ET::Float, ET::Double, ET::Int8, ET::Int16, ET::Int32,
                       ET::Int64});
    else
      C.expectType(0, kFloatTypes);
    Alpha = C.attrFloat("alpha", 0.01f);
    C.out().Type = C.in(0).Type;
    C.out().Dims = C.in(0).Dims;
  }

  void emit(EmitContext &C, const Node &N) const override {
    const ET T = C.G.Values[N.Out[0]].Type;
    const std::string Ty = etCType(T);
    emitElementwise(
        C, N.Out[0], {N.In[0]},
        [&](const std::vector<std::string> &V) -> std::string {
          const std::string &X = V[0];
          switch (K) {
          case Relu:
            return X + " > " + Ty + "(0) ? " + X + " : " + Ty + "(0)";
          case LeakyRelu:
            return X + " >= " + Ty + "(0) ? " + X + " : " + X + " * " +
                   EmitContext::literal(T, Alpha);
          case Tanh:
            return "std::tanh(" + X + ")";
          case Sigmoid:
            return Ty + "(1) / (" + Ty + "(1) + std::exp(-" + X + "))";
          case Log:
            return "std::log(" + X + ")";
          }
          return X;
        });
  }

  std::vector<int> inPlaceInputs(const Graph &G, const Node &N) const override {
    return sameShapeInputs(G, N);
  }

private:
  Kind K;
  float Alpha = 0.01f;
};

// ---- binary elementwise with broadcasting ----------------------------------

class BinaryOp : public OpImpl {
public:
  explicit BinaryOp(char Sym) : Sym(Sym) {}

  void infer(InferContext &C) override {
    C.allowAttrs({});
    C.expectInputs(2, 2);
    C.expectType(0, kNumericTypes);
    if (C.in(0).Type != C.in(1).Type)
      C.fail(std::string("input types differ (") + etName(C.in(0).Type) +
             " and " + etName(C.in(1).Type) + ")");
    C.out().Type = C.in(0).Type;
    C.out().Dims = broadcast(C, C.in(0).Dims, C.in(1).Dims);
  }

  void emit(EmitContext &C, const Node &N) const override {
    const ET T = C.G.Values[N.Out[0]].Type;
    emitElementwise(
        C, N.Out[0], {N.In[0], N.In[1]},
        [&](const std::vector<std::string> &V) -> std::string {
          if (etIsFloat(T))
            return V[0] + " " + Sym + " " + V[1];
          C.useKernel("intops");
          const char *F = Sym == '+'   ? "mk_iadd"
                          : Sym == '-' ? "mk_isub"
                          : Sym == '*' ? "mk_imul"
                                       : "mk_idiv";
          return std::string(F) + "(" + V[0] + ", " + V[1] + ")";
        });
  }

  std::vector<int> inPlaceInputs(const Graph &G, const Node &N) const override {
    return sameShapeInputs(G, N);
  }

private:
  char Sym;
};

// ---- Clip -----------------------------------------------------------------

class ClipOp : public OpImpl {
public:
  void infer(InferContext &C) override {
    if (C.Opset < 11) {
      C.allowAttrs({"min", "max"});
      C.expectInputs(1, 1);
      C.expectType(0, kFloatTypes);
      if (C.hasAttr("min"))
        Lo = C.attrFloat("min", 0);
      if (C.hasAttr("max"))
        Hi = C.attrFloat("max", 0);
      HasLo = C.hasAttr("min");
      HasHi = C.hasAttr("max");
    } else {
      C.allowAttrs({});
      C.expectInputs(1, 3);
      C.expectType(0, kNumericTypes);
      for (size_t I = 1; I < 3; ++I) {
        if (!C.hasInput(I))
          continue;
        const Value &B = C.in(I);
        if (B.Type != C.in(0).Type)
          C.fail(std::string(I == 1 ? "min" : "max") + " has type " +
                 etName(B.Type) + ", input is " + etName(C.in(0).Type));
        if (B.count() != 1)
          C.fail(std::string(I == 1 ? "min" : "max") +
                 " must be a scalar, got shape " + shapeText(B.Dims));
      }
      HasLo = C.hasInput(1);
      HasHi = C.hasInput(2);
    }
    C.out().Type = C.in(0).Type;
    C.out().Dims = C.in(0).Dims;
  }

  void emit(EmitContext &C, const Node &N) const override {
    const ET T = C.G.Values[N.Out[0]].Type;
    const std::string Ty = etCType(T);
    // Bounds: attribute literals (opset < 11), or scalar inputs: inlined
    // when constant, read once when computed.
    std::vector<int> Ops = {N.In[0]};
    std::string LoE, HiE;
    auto Bound = [&](size_t I, bool Has, double Attr, std::string &E) {
      if (!Has)
        return;
      if (C.G.Opset < 11) {
        E = EmitContext::literal(T, Attr);
        return;
      }
      Ops.push_back(N.In[I]);
      E = "#" + std::to_string(Ops.size() - 1);
    };
    Bound(1, HasLo, Lo, LoE);
    Bound(2, HasHi, Hi, HiE);
    emitElementwise(
        C, N.Out[0], Ops,
        [&](const std::vector<std::string> &V) -> std::string {
          auto Resolve = [&](const std::string &E) {
            return E[0] == '#' ? V[static_cast<size_t>(std::stoi(E.substr(1)))]
                               : E;
          };
          // ONNX: min(max(x, lo), hi), as onnxruntime computes it.
          std::string X = V[0];
          if (!LoE.empty()) {
            const std::string L = Resolve(LoE);
            X = "(" + X + " < " + L + " ? " + L + " : " + X + ")";
          }
          if (!HiE.empty()) {
            const std::string H = Resolve(HiE);
            X = "(" + X + " > " + H + " ? " + H + " : " + X + ")";
          }
          return X;
        });
  }

  std::vector<int> inPlaceInputs(const Graph &G, const Node &N) const override {
    std::vector<int> R = sameShapeInputs(G, N);
    R.erase(std::remove_if(R.begin(), R.end(), [](int I) { return I != 0; }),
            R.end());
    return R;
  }

private:
  bool HasLo = false, HasHi = false;
  float Lo = 0, Hi = 0;
};

// ---- Gemm and MatMul ---------------------------------------------------------

/// Emits Y (+)= alpha * A x B for one [M,K] x [K,N] block through mk_gemm.
std::string gemmCall(const std::string &Ty, int64_t M, int64_t K, int64_t N,
                     int64_t SAM, int64_t SAK, int64_t SBK, int64_t SBN,
                     const std::string &A, const std::string &B,
                     const std::string &Y, const std::string &Alpha) {
  return "mk_gemm<" + Ty + ", " + std::to_string(M) + ", " +
         std::to_string(K) + ", " + std::to_string(N) + ", " +
         std::to_string(SAM) + ", " + std::to_string(SAK) + ", " +
         std::to_string(SBK) + ", " + std::to_string(SBN) + ">(" + A + ", " +
         B + ", " + Y + ", " + Alpha + ");";
}

/// A constant [K,N] copy of the constant [N,K] matrix B (transposed at
/// generation time so the inner loop of the product is contiguous).
int transposedConstant(EmitContext &C, int B) {
  const Value &V = C.G.Values[B];
  const int64_t R = V.Dims[0], Cols = V.Dims[1];
  const size_t Sz = etSize(V.Type);
  std::vector<unsigned char> Data(V.Data.size());
  for (int64_t I = 0; I < R; ++I)
    for (int64_t J = 0; J < Cols; ++J)
      std::memcpy(&Data[static_cast<size_t>(J * R + I) * Sz],
                  &V.Data[static_cast<size_t>(I * Cols + J) * Sz], Sz);
  return C.constant(V.Name + "_T", V.Type, {Cols, R}, std::move(Data));
}

class GemmOp : public OpImpl {
public:
  void infer(InferContext &C) override {
    C.allowAttrs({"alpha", "beta", "transA", "transB"});
    C.expectInputs(2, 3);
    C.expectType(0, kFloatTypes);
    Alpha = C.attrFloat("alpha", 1.0f);
    Beta = C.attrFloat("beta", 1.0f);
    TransA = C.attrInt("transA", 0) != 0;
    TransB = C.attrInt("transB", 0) != 0;
    const Value &A = C.in(0), &B = C.in(1);
    for (size_t I = 1; I < C.inputCount(); ++I)
      if (C.in(I).Type != A.Type)
        C.fail("input " + std::to_string(I) + " has type " +
               etName(C.in(I).Type) + ", input 0 is " + etName(A.Type));
    if (A.Dims.size() != 2 || B.Dims.size() != 2)
      C.fail("A and B must be 2-D, got " + shapeText(A.Dims) + " and " +
             shapeText(B.Dims));
    M = TransA ? A.Dims[1] : A.Dims[0];
    K = TransA ? A.Dims[0] : A.Dims[1];
    const int64_t KB = TransB ? B.Dims[1] : B.Dims[0];
    N = TransB ? B.Dims[0] : B.Dims[1];
    if (K != KB)
      C.fail("inner dimensions differ: A " + shapeText(A.Dims) +
             (TransA ? " (transposed)" : "") + ", B " + shapeText(B.Dims) +
             (TransB ? " (transposed)" : ""));
    if (C.hasInput(2)) {
      const Shape &CS = C.in(2).Dims;
      const Shape Out = {M, N};
      bool Ok = CS.size() <= 2;
      for (size_t I = 0; Ok && I < CS.size(); ++I)
        Ok = CS[I] == 1 || CS[I] == Out[2 - CS.size() + I];
      if (!Ok)
        C.fail("C with shape " + shapeText(CS) +
               " cannot be broadcast to " + shapeText(Out));
    }
    C.out().Type = A.Type;
    C.out().Dims = {M, N};
  }

  void emit(EmitContext &C, const Node &N) const override {
    const int Y = N.Out[0];
    const ET T = C.G.Values[Y].Type;
    const std::string Ty = etCType(T);
    // Y = beta * C (broadcast), or 0.
    if (N.In.size() > 2 && N.In[2] >= 0 && Beta != 0.0f) {
      emitElementwise(
          C, Y, {N.In[2]},
          [&](const std::vector<std::string> &V) {
            return Beta == 1.0f ? V[0]
                                : V[0] + " * " + EmitContext::literal(T, Beta);
          },
          "Y = beta * C");
    } else {
      C.line("for (std::size_t i = 0; i < " + std::to_string(M * this->N) +
             "; ++i) // Y = 0");
      C.line("  " + C.ptr(Y) + "[i] = " + Ty + "(0);");
    }
    int B = N.In[1];
    int64_t SBK = this->N, SBN = 1;
    if (TransB) {
      if (C.G.Values[B].isConstant()) {
        B = transposedConstant(C, B);
      } else {
        SBK = 1;
        SBN = K;
      }
    }
    const int64_t SAM = TransA ? 1 : K, SAK = TransA ? M : 1;
    C.useKernel("gemm");
    C.line(gemmCall(Ty, M, K, this->N, SAM, SAK, SBK, SBN, C.ptr(N.In[0]),
                    C.ptr(B), C.ptr(Y), EmitContext::literal(T, Alpha)));
  }

private:
  float Alpha = 1, Beta = 1;
  bool TransA = false, TransB = false;
  int64_t M = 0, K = 0, N = 0;
};

class MatMulOp : public OpImpl {
public:
  void infer(InferContext &C) override {
    C.allowAttrs({});
    C.expectInputs(2, 2);
    C.expectType(0, {ET::Float, ET::Double, ET::Int32, ET::Int64, ET::UInt32,
                     ET::UInt64});
    const Value &A = C.in(0), &B = C.in(1);
    if (A.Type != B.Type)
      C.fail(std::string("input types differ (") + etName(A.Type) + " and " +
             etName(B.Type) + ")");
    if (A.Dims.empty() || B.Dims.empty())
      C.fail("inputs must have rank 1 or more");
    AV = A.Dims.size() == 1;
    BV = B.Dims.size() == 1;
    Shape PA = AV ? Shape{1, A.Dims[0]} : A.Dims;
    Shape PB = BV ? Shape{B.Dims[0], 1} : B.Dims;
    M = PA[PA.size() - 2];
    K = PA[PA.size() - 1];
    N = PB[PB.size() - 1];
    if (PB[PB.size() - 2] != K)
      C.fail("inner dimensions differ: " + shapeText(A.Dims) + " x " +
             shapeText(B.Dims));
    BatchA.assign(PA.begin(), PA.end() - 2);
    BatchB.assign(PB.begin(), PB.end() - 2);
    Batch = broadcast(C, BatchA, BatchB);
    Shape Out = Batch;
    if (!AV)
      Out.push_back(M);
    if (!BV)
      Out.push_back(N);
    C.out().Type = A.Type;
    C.out().Dims = Out;
  }

  void emit(EmitContext &C, const Node &Nd) const override {
    const int Y = Nd.Out[0];
    const ET T = C.G.Values[Y].Type;
    const std::string Ty = etCType(T);
    const int64_t Total = C.G.Values[Y].count();
    C.useKernel("gemm");
    C.line("{");
    C.line("  " + Ty + " *y = " + C.ptr(Y) + ";");
    C.line("  for (std::size_t i = 0; i < " + std::to_string(Total) +
           "; ++i)");
    C.line("    y[i] = " + Ty + "(0);");
    const std::string One = EmitContext::literal(T, 1.0);
    if (BatchB.empty() || elementCount(BatchB) == 1) {
      // B is one matrix: fold A's batch dimensions into M.
      const int64_t MM = elementCount(BatchA) * M;
      C.line("  " + gemmCall(Ty, MM, K, N, K, 1, N, 1, C.ptr(Nd.In[0]),
                             C.ptr(Nd.In[1]), "y", One));
      C.line("}");
      return;
    }
    // Batched with broadcasting: one product per output batch index.
    const LoopNest L = makeNest(Batch, {BatchA, BatchB});
    std::string Indent = "  ";
    for (size_t I = 0; I < L.Dims.size(); ++I) {
      C.line(Indent + "for (std::size_t i" + std::to_string(I) + " = 0; i" +
             std::to_string(I) + " < " + std::to_string(L.Dims[I]) + "; ++i" +
             std::to_string(I) + ") {");
      Indent += "  ";
    }
    std::vector<int64_t> OS(L.Dims.size(), 1);
    for (size_t I = L.Dims.size(); I-- > 1;)
      OS[I - 1] = OS[I] * L.Dims[I];
    const std::string IA = "(" + indexExpr(L.Strides[0]) + ") * " +
                           std::to_string(M * K);
    const std::string IB = "(" + indexExpr(L.Strides[1]) + ") * " +
                           std::to_string(K * N);
    const std::string IY = "(" + indexExpr(OS) + ") * " + std::to_string(M * N);
    C.line(Indent + gemmCall(Ty, M, K, N, K, 1, N, 1,
                             C.ptr(Nd.In[0]) + " + " + IA,
                             C.ptr(Nd.In[1]) + " + " + IB, "y + " + IY, One));
    for (size_t I = L.Dims.size(); I-- > 0;) {
      Indent.resize(Indent.size() - 2);
      C.line(Indent + "}");
    }
    C.line("}");
  }

private:
  bool AV = false, BV = false;
  int64_t M = 0, K = 0, N = 0;
  Shape BatchA, BatchB, Batch;
};

// ---- Softmax, LogSoftmax, ArgMax -----------------------------------------

/// `mk_<Kernel><T, Outer, Len, Inner, Flag>(in, out);`: a kernel along one
/// axis of length Len, between Outer and Inner elements.
void emitAxisKernel(EmitContext &C, const Node &N, const std::string &Kernel,
                    const std::string &CType, int64_t Outer, int64_t Len,
                    int64_t Inner, bool Flag) {
  C.useKernel(Kernel);
  C.line("mk_" + Kernel + "<" + CType + ", " + std::to_string(Outer) + ", " +
         std::to_string(Len) + ", " + std::to_string(Inner) + ", " +
         (Flag ? "true" : "false") + ">(" + C.ptr(N.In[0]) + ", " +
         C.ptr(N.Out[0]) + ");");
}

class SoftmaxOp : public OpImpl {
public:
  explicit SoftmaxOp(bool Log) : Log(Log) {}

  void infer(InferContext &C) override {
    C.allowAttrs({"axis"});
    C.expectInputs(1, 1);
    C.expectType(0, kFloatTypes);
    const Shape &S = C.in(0).Dims;
    const int64_t R = static_cast<int64_t>(S.size());
    if (R == 0)
      C.fail("input must have rank 1 or more");
    const bool Old = C.Opset < 13; // input coerced to 2-D at axis
    const int64_t Axis = C.axis(C.attrInt("axis", Old ? 1 : -1), R, "axis");
    const size_t A = static_cast<size_t>(Axis);
    Outer = product(S, 0, A);
    if (Old) {
      Len = product(S, A, S.size());
      Inner = 1;
    } else {
      Len = S[A];
      Inner = product(S, A + 1, S.size());
    }
    C.out().Type = C.in(0).Type;
    C.out().Dims = S;
  }

  void emit(EmitContext &C, const Node &N) const override {
    emitAxisKernel(C, N, "softmax", C.ctype(N.Out[0]), Outer, Len, Inner, Log);
  }

  std::vector<int> inPlaceInputs(const Graph &G, const Node &N) const override {
    return sameShapeInputs(G, N);
  }

private:
  bool Log;
  int64_t Outer = 1, Len = 1, Inner = 1;
};

class ArgMaxOp : public OpImpl {
public:
  void infer(InferContext &C) override {
    C.allowAttrs({"axis", "keepdims", "select_last_index"});
    C.expectInputs(1, 1);
    C.expectType(0, kNumericTypes);
    const Shape &S = C.in(0).Dims;
    const int64_t R = static_cast<int64_t>(S.size());
    if (R == 0)
      C.fail("input must have rank 1 or more");
    const size_t A =
        static_cast<size_t>(C.axis(C.attrInt("axis", 0), R, "axis"));
    const bool Keep = C.attrInt("keepdims", 1) != 0;
    Last = C.attrInt("select_last_index", 0) != 0;
    if (Last && C.Opset < 12)
      C.fail("select_last_index needs opset 12");
    Outer = product(S, 0, A);
    Len = S[A];
    Inner = product(S, A + 1, S.size());
    Shape Out;
    for (size_t I = 0; I < S.size(); ++I) {
      if (I != A)
        Out.push_back(S[I]);
      else if (Keep)
        Out.push_back(1);
    }
    C.out().Type = ET::Int64;
    C.out().Dims = Out;
  }

  void emit(EmitContext &C, const Node &N) const override {
    emitAxisKernel(C, N, "argmax", C.ctype(N.In[0]), Outer, Len, Inner, Last);
  }

private:
  bool Last = false;
  int64_t Outer = 1, Len = 1, Inner = 1;
};

// ---- data movement -----------------------------------------------------------

class ConcatOp : public OpImpl {
public:
  void infer(InferContext &C) override {
    C.allowAttrs({"axis"});
    const size_t Count = C.inputCount();
    if (Count < 1)
      C.fail("expects at least one input");
    for (size_t I = 0; I < Count; ++I)
      if (!C.hasInput(I))
        C.fail("input " + std::to_string(I) + " is missing");
    if (!C.hasAttr("axis"))
      C.fail("attribute 'axis' is required");
    const Value &First = C.in(0);
    const int64_t R = static_cast<int64_t>(First.Dims.size());
    if (R == 0)
      C.fail("inputs must have rank 1 or more");
    Axis = static_cast<size_t>(C.axis(C.attrInt("axis", 0), R, "axis"));
    Shape Out = First.Dims;
    Out[Axis] = 0;
    bool AllConst = true;
    for (size_t I = 0; I < Count; ++I) {
      const Value &V = C.in(I);
      if (V.Type != First.Type)
        C.fail("input " + std::to_string(I) + " has type " + etName(V.Type) +
               ", input 0 is " + etName(First.Type));
      bool Ok = V.Dims.size() == First.Dims.size();
      for (size_t D = 0; Ok && D < V.Dims.size(); ++D)
        Ok = D == Axis || V.Dims[D] == First.Dims[D];
      if (!Ok)
        C.fail("input " + std::to_string(I) + " has shape " +
               shapeText(V.Dims) + ", incompatible with " +
               shapeText(First.Dims) + " along axis " +
               std::to_string(Axis));
      Out[Axis] += V.Dims[Axis];
      AllConst = AllConst && V.isConstant();
    }
    Value &O = C.out();
    O.Type = First.Type;
    O.Dims = Out;
    if (AllConst) {
      O.K = Value::Constant;
      const int64_t Outer = product(Out, 0, Axis);
      const size_t Sz = etSize(O.Type);
      for (int64_t Oi = 0; Oi < Outer; ++Oi)
        for (size_t I = 0; I < Count; ++I) {
          const Value &V = C.in(I);
          const size_t Chunk =
              static_cast<size_t>(product(V.Dims, Axis, V.Dims.size())) * Sz;
          const auto *P = V.Data.data() + static_cast<size_t>(Oi) * Chunk;
          O.Data.insert(O.Data.end(), P, P + Chunk);
        }
    }
  }

  void emit(EmitContext &C, const Node &N) const override {
    const Value &O = C.G.Values[N.Out[0]];
    const int64_t Outer = product(O.Dims, 0, Axis);
    const int64_t OutChunk = product(O.Dims, Axis, O.Dims.size());
    const std::string Sz = "sizeof(" + C.ctype(N.Out[0]) + ")";
    C.line("{");
    C.line("  " + C.ctype(N.Out[0]) + " *y = " + C.ptr(N.Out[0]) + ";");
    std::string Indent = "  ";
    std::string OuterOff = "0";
    if (Outer > 1) {
      C.line("  for (std::size_t o = 0; o < " + std::to_string(Outer) +
             "; ++o) {");
      Indent = "    ";
    }
    int64_t Off = 0;
    for (int In : N.In) {
      if (In < 0)
        continue;
      const Value &V = C.G.Values[In];
      const int64_t Chunk = product(V.Dims, Axis, V.Dims.size());
      const std::string Dst =
          Outer > 1 ? "y + o * " + std::to_string(OutChunk) + " + " +
                          std::to_string(Off)
                    : "y + " + std::to_string(Off);
      const std::string Src = Outer > 1 ? C.ptr(In) + " + o * " +
                                              std::to_string(Chunk)
                                        : C.ptr(In);
      C.line(Indent + "std::memcpy(" + Dst + ", " + Src + ", " +
             std::to_string(Chunk) + " * " + Sz + ");");
      Off += Chunk;
    }
    if (Outer > 1)
      C.line("  }");
    C.line("}");
    C.useKernel("cstring");
  }

private:
  size_t Axis = 0;
};

/// Reshape, Flatten, Squeeze, Unsqueeze, Identity: a new shape over the
/// same bytes. No code; constants are folded.
class ViewOp : public OpImpl {
public:
  enum Kind { Reshape, Flatten, Squeeze, Unsqueeze, Identity };
  explicit ViewOp(Kind K) : K(K) {}

  bool isView() const override { return true; }

  void infer(InferContext &C) override {
    const Value &X = C.in(0);
    const Shape &S = X.Dims;
    const int64_t R = static_cast<int64_t>(S.size());
    Shape Out;
    switch (K) {
    case Identity:
      C.allowAttrs({});
      C.expectInputs(1, 1);
      Out = S;
      break;
    case Reshape: {
      C.allowAttrs({"allowzero"});
      C.expectInputs(2, 2);
      const bool AllowZero = C.attrInt("allowzero", 0) != 0;
      std::vector<int64_t> Want = C.constInts(1, "the shape");
      int64_t Known = 1;
      int Infer = -1;
      for (size_t I = 0; I < Want.size(); ++I) {
        int64_t D = Want[I];
        if (D == 0 && !AllowZero) {
          if (I >= S.size())
            C.fail("shape " + shapeText(Want) + " copies dimension " +
                   std::to_string(I) + ", but the input " + shapeText(S) +
                   " has no such dimension");
          D = S[I];
        } else if (D == 0) {
          C.fail("shape " + shapeText(Want) +
                 " makes an empty tensor; not supported");
        }
        if (D == -1) {
          if (Infer >= 0)
            C.fail("shape " + shapeText(Want) + " has more than one -1");
          Infer = static_cast<int>(I);
          Out.push_back(-1);
          continue;
        }
        if (D < -1)
          C.fail("shape " + shapeText(Want) + " has a negative dimension");
        if (D > X.count())
          C.fail("cannot reshape " + shapeText(S) + " to " + shapeText(Want));
        Known *= D; // <= X.count() each: no overflow before the check below
        if (Known > X.count())
          C.fail("cannot reshape " + shapeText(S) + " to " + shapeText(Want));
        Out.push_back(D);
      }
      if (Infer >= 0) {
        if (X.count() % Known != 0)
          C.fail("cannot reshape " + shapeText(S) + " to " + shapeText(Want));
        Out[static_cast<size_t>(Infer)] = X.count() / Known;
      }
      break;
    }
    case Flatten: {
      C.allowAttrs({"axis"});
      C.expectInputs(1, 1);
      const size_t A = static_cast<size_t>(
          C.axis(C.attrInt("axis", 1), R, "axis", /*Inclusive=*/true));
      Out = {product(S, 0, A), product(S, A, S.size())};
      break;
    }
    case Squeeze:
    case Unsqueeze: {
      std::vector<int64_t> Axes;
      bool Given = false;
      if (C.Opset < 13) {
        C.allowAttrs({"axes"});
        C.expectInputs(1, 1);
        Given = C.hasAttr("axes");
        Axes = C.attrInts("axes");
      } else {
        C.allowAttrs({});
        C.expectInputs(K == Squeeze ? 1 : 2, 2);
        Given = C.hasInput(1);
        if (Given)
          Axes = C.constInts(1, "axes");
      }
      if (K == Squeeze) {
        std::vector<bool> Drop(S.size(), false);
        if (!Given) {
          for (size_t I = 0; I < S.size(); ++I)
            Drop[I] = S[I] == 1;
        }
        for (int64_t A0 : Axes) {
          const size_t A = static_cast<size_t>(C.axis(A0, R, "axis"));
          if (S[A] != 1)
            C.fail("cannot squeeze axis " + std::to_string(A0) +
                   " of shape " + shapeText(S) + ": its size is not 1");
          Drop[A] = true;
        }
        for (size_t I = 0; I < S.size(); ++I)
          if (!Drop[I])
            Out.push_back(S[I]);
      } else {
        if (!Given || Axes.empty())
          C.fail("axes are required");
        const int64_t OR = R + static_cast<int64_t>(Axes.size());
        std::vector<bool> New(static_cast<size_t>(OR), false);
        for (int64_t A0 : Axes) {
          const size_t A = static_cast<size_t>(C.axis(A0, OR, "axis"));
          if (New[A])
            C.fail("axis " + std::to_string(A0) + " is given twice");
          New[A] = true;
        }
        size_t J = 0;
        for (size_t I = 0; I < New.size(); ++I)
          Out.push_back(New[I] ? 1 : S[J++]);
      }
      break;
    }
    }
    Value &O = C.out();
    O.Type = X.Type;
    O.Dims = Out;
    if (elementCount(Out) != X.count())
      C.fail("cannot reshape " + shapeText(S) + " to " + shapeText(Out));
    if (X.isConstant()) {
      O.K = Value::Constant;
      O.Data = X.Data;
    }
  }

  void emit(EmitContext &, const Node &) const override {}

private:
  Kind K;
};

class TransposeOp : public OpImpl {
public:
  void infer(InferContext &C) override {
    C.allowAttrs({"perm"});
    C.expectInputs(1, 1);
    const Value &X = C.in(0);
    const size_t R = X.Dims.size();
    Perm = C.attrInts("perm");
    if (!C.hasAttr("perm")) {
      for (size_t I = R; I-- > 0;)
        Perm.push_back(static_cast<int64_t>(I));
    }
    if (Perm.size() != R)
      C.fail("perm has " + std::to_string(Perm.size()) +
             " entries for an input of rank " + std::to_string(R));
    std::vector<bool> Seen(R, false);
    for (int64_t &P : Perm) {
      P = C.axis(P, static_cast<int64_t>(R), "perm entry");
      if (Seen[static_cast<size_t>(P)])
        C.fail("perm repeats axis " + std::to_string(P));
      Seen[static_cast<size_t>(P)] = true;
    }
    Value &O = C.out();
    O.Type = X.Type;
    for (int64_t P : Perm)
      O.Dims.push_back(X.Dims[static_cast<size_t>(P)]);
    if (X.isConstant()) {
      O.K = Value::Constant;
      O.Data.resize(X.Data.size());
      const size_t Sz = etSize(X.Type);
      const std::vector<int64_t> InS = stridesOf(X.Dims);
      std::vector<int64_t> Idx(R, 0);
      for (int64_t Flat = 0; Flat < O.count(); ++Flat) {
        int64_t Src = 0;
        for (size_t D = 0; D < R; ++D)
          Src += Idx[D] * InS[static_cast<size_t>(Perm[D])];
        std::memcpy(&O.Data[static_cast<size_t>(Flat) * Sz],
                    &X.Data[static_cast<size_t>(Src) * Sz], Sz);
        for (size_t D = R; D-- > 0;) {
          if (++Idx[D] < O.Dims[D])
            break;
          Idx[D] = 0;
        }
      }
    }
  }

  void emit(EmitContext &C, const Node &N) const override {
    const Value &X = C.G.Values[N.In[0]];
    const Value &O = C.G.Values[N.Out[0]];
    // Loop over the output in order, reading the input with permuted
    // strides; unit dimensions are skipped.
    const std::vector<int64_t> InS = stridesOf(X.Dims);
    std::vector<int64_t> Dims, SrcStride;
    for (size_t D = 0; D < O.Dims.size(); ++D) {
      if (O.Dims[D] == 1)
        continue;
      Dims.push_back(O.Dims[D]);
      SrcStride.push_back(InS[static_cast<size_t>(Perm[D])]);
    }
    std::vector<int64_t> OutStride(Dims.size(), 1);
    for (size_t I = Dims.size(); I-- > 1;)
      OutStride[I - 1] = OutStride[I] * Dims[I];
    C.line("{");
    C.line("  const " + C.ctype(N.In[0]) + " *x = " + C.ptr(N.In[0]) + ";");
    C.line("  " + C.ctype(N.Out[0]) + " *y = " + C.ptr(N.Out[0]) + ";");
    std::string Indent = "  ";
    for (size_t I = 0; I < Dims.size(); ++I) {
      C.line(Indent + "for (std::size_t i" + std::to_string(I) + " = 0; i" +
             std::to_string(I) + " < " + std::to_string(Dims[I]) + "; ++i" +
             std::to_string(I) + ") {");
      Indent += "  ";
    }
    C.line(Indent + "y[" + indexExpr(OutStride) + "] = x[" +
           indexExpr(SrcStride) + "];");
    for (size_t I = Dims.size(); I-- > 0;) {
      Indent.resize(Indent.size() - 2);
      C.line(Indent + "}");
    }
    C.line("}");
  }

private:
  std::vector<int64_t> Perm;
};

class ConstantOp : public OpImpl {
public:
  void infer(InferContext &C) override {
    C.allowAttrs({"value", "value_float", "value_floats", "value_int",
                  "value_ints"});
    C.expectInputs(0, 0);
    if (C.N.Proto->attribute_size() != 1)
      C.fail("expects exactly one value attribute");
    const ox::AttributeProto &A = C.N.Proto->attribute(0);
    Value &O = C.out();
    const std::string Name = O.Name;
    auto FromScalars = [&](ET T, Shape Dims, const auto &Elems) {
      O.Type = T;
      O.Dims = std::move(Dims);
      O.Data.clear();
      for (auto E : Elems) {
        unsigned char B[8];
        if (T == ET::Float) {
          const float F = static_cast<float>(E);
          std::memcpy(B, &F, 4);
          O.Data.insert(O.Data.end(), B, B + 4);
        } else {
          const int64_t I = static_cast<int64_t>(E);
          std::memcpy(B, &I, 8);
          O.Data.insert(O.Data.end(), B, B + 8);
        }
      }
    };
    if (A.name() == "value") {
      if (!A.has_t())
        C.fail("attribute 'value' holds no tensor");
      try {
        Value V = decodeTensor(A.t(), "the value tensor");
        O.Type = V.Type;
        O.Dims = V.Dims;
        O.Data = std::move(V.Data);
      } catch (const ModelError &E) {
        C.fail(E.what());
      }
    } else if (A.name() == "value_float") {
      FromScalars(ET::Float, {}, std::vector<float>{C.attrFloat("value_float", 0)});
    } else if (A.name() == "value_floats") {
      const std::vector<float> F = C.attrFloats("value_floats");
      if (F.empty())
        C.fail("value_floats is empty");
      FromScalars(ET::Float, {static_cast<int64_t>(F.size())}, F);
    } else if (A.name() == "value_int") {
      FromScalars(ET::Int64, {}, std::vector<int64_t>{C.attrInt("value_int", 0)});
    } else {
      const std::vector<int64_t> I = C.attrInts("value_ints");
      if (I.empty())
        C.fail("value_ints is empty");
      FromScalars(ET::Int64, {static_cast<int64_t>(I.size())}, I);
    }
    O.Name = Name;
    O.K = Value::Constant;
  }

  void emit(EmitContext &, const Node &) const override {}
};

} // namespace

std::unique_ptr<OpImpl> makeOp(const std::string &Op) {
  if (Op == "Gemm") return std::make_unique<GemmOp>();
  if (Op == "MatMul") return std::make_unique<MatMulOp>();
  if (Op == "Add") return std::make_unique<BinaryOp>('+');
  if (Op == "Sub") return std::make_unique<BinaryOp>('-');
  if (Op == "Mul") return std::make_unique<BinaryOp>('*');
  if (Op == "Div") return std::make_unique<BinaryOp>('/');
  if (Op == "Relu") return std::make_unique<UnaryOp>(UnaryOp::Relu);
  if (Op == "LeakyRelu") return std::make_unique<UnaryOp>(UnaryOp::LeakyRelu);
  if (Op == "Tanh") return std::make_unique<UnaryOp>(UnaryOp::Tanh);
  if (Op == "Sigmoid") return std::make_unique<UnaryOp>(UnaryOp::Sigmoid);
  if (Op == "Log") return std::make_unique<UnaryOp>(UnaryOp::Log);
  if (Op == "Softmax") return std::make_unique<SoftmaxOp>(false);
  if (Op == "LogSoftmax") return std::make_unique<SoftmaxOp>(true);
  if (Op == "ArgMax") return std::make_unique<ArgMaxOp>();
  if (Op == "Concat") return std::make_unique<ConcatOp>();
  if (Op == "Reshape") return std::make_unique<ViewOp>(ViewOp::Reshape);
  if (Op == "Flatten") return std::make_unique<ViewOp>(ViewOp::Flatten);
  if (Op == "Squeeze") return std::make_unique<ViewOp>(ViewOp::Squeeze);
  if (Op == "Unsqueeze") return std::make_unique<ViewOp>(ViewOp::Unsqueeze);
  if (Op == "Identity") return std::make_unique<ViewOp>(ViewOp::Identity);
  if (Op == "Constant") return std::make_unique<ConstantOp>();
  if (Op == "Clip") return std::make_unique<ClipOp>();
  if (Op == "Transpose") return std::make_unique<TransposeOp>();
  return nullptr;
}

std::vector<std::string> opNames() {
  std::vector<std::string> R = {
      "Add",     "ArgMax",  "Clip",    "Concat",     "Constant", "Div",
      "Flatten", "Gemm",    "Identity", "LeakyRelu", "Log",  "LogSoftmax", "MatMul",
      "Mul",     "Relu",    "Reshape", "Sigmoid",    "Softmax",  "Squeeze",
      "Sub",     "Tanh",    "Transpose", "Unsqueeze"};
  std::sort(R.begin(), R.end());
  return R;
}

} // namespace mlbridge::modelc
