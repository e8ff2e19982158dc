//===- graph.h - The model compiler's graph IR ----------------------------===//
//
// An ONNX graph after import: values with static shapes and element types,
// constants with their bytes, and nodes in execution order, each with an
// OpImpl that validates it, infers its output and emits its code.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_MODELC_GRAPH_H
#define MLBRIDGE_MODELC_GRAPH_H

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mlbridge::onnx_subset {
class NodeProto;
class AttributeProto;
class TensorProto;
} // namespace mlbridge::onnx_subset

namespace mlbridge::modelc {

/// A generation-time error: the message is shown to the user as is.
class ModelError : public std::runtime_error {
public:
  explicit ModelError(const std::string &M) : std::runtime_error(M) {}
};

/// Element types (ONNX TensorProto.DataType codes).
enum class ET : int32_t {
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  Bool = 9,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
};

/// The ET for an ONNX data type code, or false if unsupported.
bool etFromOnnx(int32_t Code, ET &Out);
/// ONNX's name for any data type code ("FLOAT16", ...), for messages.
std::string onnxTypeName(int32_t Code);
size_t etSize(ET T);
const char *etCType(ET T);      ///< "float", "std::int64_t", "bool", ...
const char *etName(ET T);       ///< "float", "int64", ... for messages
const char *etEnumName(ET T);   ///< DType enumerator name
const char *etArena(ET T);      ///< Workspace member: "F32", "I64", ...
inline bool etIsFloat(ET T) { return T == ET::Float || T == ET::Double; }
inline bool etIsSignedInt(ET T) {
  return T == ET::Int8 || T == ET::Int16 || T == ET::Int32 || T == ET::Int64;
}
inline bool etIsUnsignedInt(ET T) {
  return T == ET::UInt8 || T == ET::UInt16 || T == ET::UInt32 ||
         T == ET::UInt64;
}
inline bool etIsNumeric(ET T) { return T != ET::Bool; }

using Shape = std::vector<int64_t>;
int64_t elementCount(const Shape &S);
std::string shapeText(const Shape &S); ///< "[1,300]"

struct Value {
  enum Kind { Input, Constant, Computed };
  std::string Name;
  ET Type = ET::Float;
  Shape Dims;
  Kind K = Computed;
  int InputIndex = -1;              ///< for Input
  std::vector<unsigned char> Data;  ///< for Constant: little-endian bytes
  int Producer = -1;                ///< node index, for Computed

  int64_t count() const { return elementCount(Dims); }
  bool isConstant() const { return K == Constant; }
  template <typename T> T at(size_t I) const {
    T V;
    std::memcpy(&V, Data.data() + I * sizeof(T), sizeof(T));
    return V;
  }
  /// Constant element I converted to double (any numeric type).
  double asDouble(size_t I) const;
  /// Constant element I as int64 (integer types only).
  int64_t asInt64(size_t I) const;
};

class Graph;
class EmitContext;
class OpImpl;

struct Node {
  int Index = 0;
  std::string Name;
  std::string Op;
  std::vector<int> In;  ///< value indices; -1 for an omitted optional input
  std::vector<int> Out; ///< value indices
  const onnx_subset::NodeProto *Proto = nullptr;
  std::unique_ptr<OpImpl> Impl;
  bool Folded = false; ///< computed at generation time (output constant)
  bool Live = true;    ///< contributes to a graph output

  /// "node 'Gemm_0' (op Gemm)" or "node #3 (op Gemm, output 'y')".
  std::string describe() const;
};

/// What an operator implementation sees while validating a node.
class InferContext {
public:
  InferContext(Graph &G, Node &N, int64_t Opset) : G(G), N(N), Opset(Opset) {}

  Graph &G;
  Node &N;
  const int64_t Opset;

  [[noreturn]] void fail(const std::string &Message) const;
  /// Rejects attributes not in Allowed, naming the first offender.
  void allowAttrs(std::initializer_list<const char *> Allowed) const;
  bool hasAttr(const char *Name) const;
  int64_t attrInt(const char *Name, int64_t Default) const;
  float attrFloat(const char *Name, float Default) const;
  std::vector<int64_t> attrInts(const char *Name) const;
  std::vector<float> attrFloats(const char *Name) const;
  const onnx_subset::AttributeProto *attr(const char *Name) const;
  /// Checks the number of inputs (trailing omitted ones do not count).
  void expectInputs(size_t Min, size_t Max) const;
  size_t inputCount() const;
  bool hasInput(size_t I) const { return I < N.In.size() && N.In[I] >= 0; }
  const Value &in(size_t I) const;
  /// The output value (one output per supported operator).
  Value &out() const;
  /// Requires input I to have one of the given types.
  void expectType(size_t I, std::initializer_list<ET> Allowed) const;
  /// Normalizes an axis in [-Rank, Rank) (or [-Rank, Rank] with Inclusive).
  int64_t axis(int64_t Axis, int64_t Rank, const char *What,
               bool Inclusive = false) const;
  /// Reads a constant int64 input (shape, axes); fails if not constant.
  std::vector<int64_t> constInts(size_t I, const char *What) const;
};

/// An operator: validation and shape inference, then code emission.
class OpImpl {
public:
  virtual ~OpImpl();
  /// Validates attributes, inputs and types; sets the output's type and
  /// shape. May turn the output into a constant (generation-time folding).
  virtual void infer(InferContext &C) = 0;
  /// Emits the node's code. The output buffer never overlaps an input
  /// unless that input index is in inPlaceInputs().
  virtual void emit(EmitContext &C, const Node &N) const = 0;
  /// The output is input 0 reinterpreted with another shape (no code).
  virtual bool isView() const { return false; }
  /// Inputs the output may overwrite in place (elementwise operators).
  virtual std::vector<int> inPlaceInputs(const Graph &, const Node &) const {
    return {};
  }
};

/// Makes the implementation for an operator, or nullptr if unsupported.
std::unique_ptr<OpImpl> makeOp(const std::string &OpType);
std::vector<std::string> opNames();

class Graph {
public:
  std::vector<Value> Values;
  std::vector<Node> Nodes;        ///< in execution order
  std::vector<int> Inputs;        ///< runtime inputs, model order
  std::vector<int> Outputs;       ///< graph outputs, model order
  std::vector<std::string> OutputNames;
  int64_t Opset = 0;
  std::string Producer;
  std::string AdviceOutput; ///< metadata "mlbridge.advice", if any
  /// Keeps the parsed model (nodes point at its attributes) alive.
  std::shared_ptr<const void> Owner;

  int addValue(Value V) {
    Values.push_back(std::move(V));
    return static_cast<int>(Values.size()) - 1;
  }
  /// Adds a constant (e.g. a transposed weight) made during emission.
  int addConstant(const std::string &Name, ET Type, Shape Dims,
                  std::vector<unsigned char> Data);
};

/// Decodes a TensorProto (initializer or attribute) into a constant.
Value decodeTensor(const onnx_subset::TensorProto &T, const std::string &What);

/// Imports an ONNX model: values, constants, topological order, and runs
/// every node's infer(). Throws ModelError.
void importModel(const std::string &Bytes,
                 const std::map<std::string, int64_t> &DimValues, Graph &G);

} // namespace mlbridge::modelc

#endif // MLBRIDGE_MODELC_GRAPH_H
