//===- onnx_import.cpp - ONNX ModelProto -> Graph -------------------------===//
#include "graph.h"

#include "onnx_subset.pb.h"

#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

namespace mlbridge::modelc {

namespace ox = mlbridge::onnx_subset;

// ---- element types ------------------------------------------------------

bool etFromOnnx(int32_t Code, ET &Out) {
  switch (Code) {
  case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 9: case 11:
  case 12: case 13:
    Out = static_cast<ET>(Code);
    return true;
  default:
    return false;
  }
}

std::string onnxTypeName(int32_t Code) {
  static const char *const Names[] = {
      "UNDEFINED", "FLOAT",  "UINT8",  "INT8",   "UINT16",    "INT16",
      "INT32",     "INT64",  "STRING", "BOOL",   "FLOAT16",   "DOUBLE",
      "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
  if (Code >= 0 && Code < static_cast<int32_t>(std::size(Names)))
    return Names[Code];
  return "data type " + std::to_string(Code);
}

size_t etSize(ET T) {
  switch (T) {
  case ET::Float: case ET::Int32: case ET::UInt32: return 4;
  case ET::Double: case ET::Int64: case ET::UInt64: return 8;
  case ET::Int16: case ET::UInt16: return 2;
  case ET::Int8: case ET::UInt8: case ET::Bool: return 1;
  }
  return 1;
}

const char *etCType(ET T) {
  switch (T) {
  case ET::Float: return "float";
  case ET::Double: return "double";
  case ET::Int8: return "std::int8_t";
  case ET::Int16: return "std::int16_t";
  case ET::Int32: return "std::int32_t";
  case ET::Int64: return "std::int64_t";
  case ET::UInt8: return "std::uint8_t";
  case ET::UInt16: return "std::uint16_t";
  case ET::UInt32: return "std::uint32_t";
  case ET::UInt64: return "std::uint64_t";
  case ET::Bool: return "bool";
  }
  return "void";
}

const char *etName(ET T) {
  switch (T) {
  case ET::Float: return "float";
  case ET::Double: return "double";
  case ET::Int8: return "int8";
  case ET::Int16: return "int16";
  case ET::Int32: return "int32";
  case ET::Int64: return "int64";
  case ET::UInt8: return "uint8";
  case ET::UInt16: return "uint16";
  case ET::UInt32: return "uint32";
  case ET::UInt64: return "uint64";
  case ET::Bool: return "bool";
  }
  return "?";
}

const char *etEnumName(ET T) {
  switch (T) {
  case ET::Float: return "Float";
  case ET::Double: return "Double";
  case ET::Int8: return "Int8";
  case ET::Int16: return "Int16";
  case ET::Int32: return "Int32";
  case ET::Int64: return "Int64";
  case ET::UInt8: return "UInt8";
  case ET::UInt16: return "UInt16";
  case ET::UInt32: return "UInt32";
  case ET::UInt64: return "UInt64";
  case ET::Bool: return "Bool";
  }
  return "Float";
}

const char *etArena(ET T) {
  switch (T) {
  case ET::Float: return "F32";
  case ET::Double: return "F64";
  case ET::Int8: return "I8";
  case ET::Int16: return "I16";
  case ET::Int32: return "I32";
  case ET::Int64: return "I64";
  case ET::UInt8: return "U8";
  case ET::UInt16: return "U16";
  case ET::UInt32: return "U32";
  case ET::UInt64: return "U64";
  case ET::Bool: return "B8";
  }
  return "X";
}

int64_t elementCount(const Shape &S) {
  // Saturates instead of overflowing: sizes are checked against a limit.
  int64_t N = 1;
  for (int64_t D : S) {
    if (D <= 0)
      return D == 0 ? 0 : -1;
    if (N > std::numeric_limits<int64_t>::max() / D)
      return std::numeric_limits<int64_t>::max();
    N *= D;
  }
  return N;
}

std::string shapeText(const Shape &S) {
  std::string R = "[";
  for (size_t I = 0; I < S.size(); ++I)
    R += (I ? "," : "") + std::to_string(S[I]);
  return R + "]";
}

double Value::asDouble(size_t I) const {
  switch (Type) {
  case ET::Float: return at<float>(I);
  case ET::Double: return at<double>(I);
  case ET::Int8: return at<int8_t>(I);
  case ET::Int16: return at<int16_t>(I);
  case ET::Int32: return at<int32_t>(I);
  case ET::Int64: return static_cast<double>(at<int64_t>(I));
  case ET::UInt8: return at<uint8_t>(I);
  case ET::UInt16: return at<uint16_t>(I);
  case ET::UInt32: return at<uint32_t>(I);
  case ET::UInt64: return static_cast<double>(at<uint64_t>(I));
  case ET::Bool: return at<uint8_t>(I) ? 1.0 : 0.0;
  }
  return 0;
}

int64_t Value::asInt64(size_t I) const {
  switch (Type) {
  case ET::Int8: return at<int8_t>(I);
  case ET::Int16: return at<int16_t>(I);
  case ET::Int32: return at<int32_t>(I);
  case ET::Int64: return at<int64_t>(I);
  case ET::UInt8: return at<uint8_t>(I);
  case ET::UInt16: return at<uint16_t>(I);
  case ET::UInt32: return at<uint32_t>(I);
  case ET::UInt64: return static_cast<int64_t>(at<uint64_t>(I));
  default: return static_cast<int64_t>(asDouble(I));
  }
}

int Graph::addConstant(const std::string &Name, ET Type, Shape Dims,
                       std::vector<unsigned char> Data) {
  Value V;
  V.Name = Name;
  V.Type = Type;
  V.Dims = std::move(Dims);
  V.K = Value::Constant;
  V.Data = std::move(Data);
  return addValue(std::move(V));
}

OpImpl::~OpImpl() = default;

// ---- nodes and the inference context --------------------------------------

std::string Node::describe() const {
  if (!Name.empty())
    return "node '" + Name + "' (op " + Op + ")";
  std::string S = "node #" + std::to_string(Index) + " (op " + Op;
  if (Proto && Proto->output_size() > 0)
    S += ", output '" + Proto->output(0) + "'";
  return S + ")";
}

void InferContext::fail(const std::string &Message) const {
  throw ModelError(N.describe() + ": " + Message);
}

const ox::AttributeProto *InferContext::attr(const char *Name) const {
  for (const ox::AttributeProto &A : N.Proto->attribute())
    if (A.name() == Name)
      return &A;
  return nullptr;
}

bool InferContext::hasAttr(const char *Name) const {
  return attr(Name) != nullptr;
}

void InferContext::allowAttrs(std::initializer_list<const char *> Allowed) const {
  for (const ox::AttributeProto &A : N.Proto->attribute()) {
    bool Known = false;
    for (const char *K : Allowed)
      Known = Known || A.name() == K;
    if (!Known) {
      std::string List;
      for (const char *K : Allowed)
        List += std::string(List.empty() ? "" : ", ") + K;
      fail("unsupported attribute '" + A.name() + "'" +
           (List.empty() ? std::string(" (the operator takes none)")
                         : " (supported: " + List + ")"));
    }
    if (A.has_ref_attr_name() && !A.ref_attr_name().empty())
      fail("attribute '" + A.name() +
           "' refers to a function attribute; not supported");
  }
}

namespace {
const char *attrTypeName(int T) {
  switch (T) {
  case 1: return "FLOAT";
  case 2: return "INT";
  case 3: return "STRING";
  case 4: return "TENSOR";
  case 5: return "GRAPH";
  case 6: return "FLOATS";
  case 7: return "INTS";
  case 8: return "STRINGS";
  case 9: return "TENSORS";
  case 10: return "GRAPHS";
  case 11: return "SPARSE_TENSOR";
  default: return "another type";
  }
}
} // namespace

// Attribute type checks accept a missing `type` (IR version 1 files).
#define MLBRIDGE_CHECK_ATTR_TYPE(A, Expected)                                 \
  if ((A)->has_type() && (A)->type() != (Expected))                           \
  fail(std::string("attribute '") + (A)->name() + "' must be " +             \
       attrTypeName(Expected) + ", got " + attrTypeName((A)->type()))

int64_t InferContext::attrInt(const char *Name, int64_t Default) const {
  const ox::AttributeProto *A = attr(Name);
  if (!A)
    return Default;
  MLBRIDGE_CHECK_ATTR_TYPE(A, 2);
  return A->i();
}

float InferContext::attrFloat(const char *Name, float Default) const {
  const ox::AttributeProto *A = attr(Name);
  if (!A)
    return Default;
  MLBRIDGE_CHECK_ATTR_TYPE(A, 1);
  return A->f();
}

std::vector<int64_t> InferContext::attrInts(const char *Name) const {
  const ox::AttributeProto *A = attr(Name);
  if (!A)
    return {};
  MLBRIDGE_CHECK_ATTR_TYPE(A, 7);
  return std::vector<int64_t>(A->ints().begin(), A->ints().end());
}

std::vector<float> InferContext::attrFloats(const char *Name) const {
  const ox::AttributeProto *A = attr(Name);
  if (!A)
    return {};
  MLBRIDGE_CHECK_ATTR_TYPE(A, 6);
  return std::vector<float>(A->floats().begin(), A->floats().end());
}

size_t InferContext::inputCount() const {
  size_t Count = N.In.size();
  while (Count > 0 && N.In[Count - 1] < 0)
    --Count;
  return Count;
}

void InferContext::expectInputs(size_t Min, size_t Max) const {
  const size_t Count = inputCount();
  if (Count < Min || Count > Max)
    fail("expects " +
         (Min == Max ? std::to_string(Min)
                     : std::to_string(Min) + " to " + std::to_string(Max)) +
         " inputs, got " + std::to_string(Count));
  for (size_t I = 0; I < Min; ++I)
    if (N.In[I] < 0)
      fail("input " + std::to_string(I) + " is required");
}

const Value &InferContext::in(size_t I) const {
  if (!hasInput(I))
    fail("input " + std::to_string(I) + " is missing");
  return G.Values[N.In[I]];
}

Value &InferContext::out() const { return G.Values[N.Out[0]]; }

void InferContext::expectType(size_t I, std::initializer_list<ET> Allowed) const {
  const ET T = in(I).Type;
  std::string List;
  for (ET A : Allowed) {
    if (A == T)
      return;
    List += std::string(List.empty() ? "" : ", ") + etName(A);
  }
  fail("input " + std::to_string(I) + " ('" + in(I).Name + "') is " +
       etName(T) + "; supported: " + List);
}

int64_t InferContext::axis(int64_t Axis, int64_t Rank, const char *What,
                           bool Inclusive) const {
  const int64_t Limit = Inclusive ? Rank + 1 : Rank;
  if (Axis < -Limit || Axis >= Limit)
    fail(std::string(What) + " " + std::to_string(Axis) +
         " is out of range for rank " + std::to_string(Rank));
  return Axis < 0 ? Axis + Limit : Axis;
}

std::vector<int64_t> InferContext::constInts(size_t I, const char *What) const {
  const Value &V = in(I);
  if (!V.isConstant())
    fail(std::string(What) + " (input " + std::to_string(I) + ", '" + V.Name +
         "') must be a constant or initializer; it is computed at run time");
  if (V.Type != ET::Int64 && V.Type != ET::Int32)
    fail(std::string(What) + " must be int64, got " + etName(V.Type));
  std::vector<int64_t> R;
  for (int64_t K = 0; K < V.count(); ++K)
    R.push_back(V.asInt64(static_cast<size_t>(K)));
  return R;
}

// ---- import -----------------------------------------------------------------

namespace {

constexpr int64_t kMaxElements = int64_t(1) << 31;

Shape checkedDims(const google::protobuf::RepeatedField<int64_t> &Dims,
                  const std::string &What) {
  Shape S(Dims.begin(), Dims.end());
  int64_t N = 1;
  for (int64_t D : S) {
    if (D <= 0)
      throw ModelError(What + " has dimension " + std::to_string(D) +
                       " in shape " + shapeText(S) +
                       "; only non-empty tensors are supported");
    if (D > kMaxElements || N > kMaxElements / D)
      throw ModelError(What + " is too large (" + shapeText(S) + ")");
    N *= D;
  }
  return S;
}

template <typename Src, typename Dst>
void packAs(const Src &Field, std::vector<unsigned char> &Out) {
  Out.resize(static_cast<size_t>(Field.size()) * sizeof(Dst));
  for (int I = 0; I < Field.size(); ++I) {
    const Dst V = static_cast<Dst>(Field.Get(I));
    std::memcpy(Out.data() + static_cast<size_t>(I) * sizeof(Dst), &V,
                sizeof(Dst));
  }
}

} // namespace

Value decodeTensor(const ox::TensorProto &T, const std::string &What) {
  Value V;
  V.Name = T.name();
  V.K = Value::Constant;
  if (!etFromOnnx(T.data_type(), V.Type))
    throw ModelError(What + " has element type " +
                     onnxTypeName(T.data_type()) + ", which is not supported");
  if (T.data_location() == 1 || T.external_data_size() > 0)
    throw ModelError(What + " keeps its data in an external file; save the "
                            "model with all tensors inside the .onnx file");
  V.Dims = checkedDims(T.dims(), What);
  const size_t Count = static_cast<size_t>(elementCount(V.Dims));
  const size_t Bytes = Count * etSize(V.Type);
  size_t Given = 0;
  if (T.has_raw_data()) {
    if (T.raw_data().size() != Bytes)
      throw ModelError(What + ": raw_data has " +
                       std::to_string(T.raw_data().size()) + " bytes, " +
                       "shape " + shapeText(V.Dims) + " needs " +
                       std::to_string(Bytes));
    V.Data.assign(T.raw_data().begin(), T.raw_data().end());
    return V;
  }
  switch (V.Type) {
  case ET::Float: packAs<decltype(T.float_data()), float>(T.float_data(), V.Data);
    Given = static_cast<size_t>(T.float_data_size()); break;
  case ET::Double: packAs<decltype(T.double_data()), double>(T.double_data(), V.Data);
    Given = static_cast<size_t>(T.double_data_size()); break;
  case ET::Int64: packAs<decltype(T.int64_data()), int64_t>(T.int64_data(), V.Data);
    Given = static_cast<size_t>(T.int64_data_size()); break;
  case ET::Int32: packAs<decltype(T.int32_data()), int32_t>(T.int32_data(), V.Data);
    Given = static_cast<size_t>(T.int32_data_size()); break;
  case ET::Int16: packAs<decltype(T.int32_data()), int16_t>(T.int32_data(), V.Data);
    Given = static_cast<size_t>(T.int32_data_size()); break;
  case ET::Int8: packAs<decltype(T.int32_data()), int8_t>(T.int32_data(), V.Data);
    Given = static_cast<size_t>(T.int32_data_size()); break;
  case ET::UInt16: packAs<decltype(T.int32_data()), uint16_t>(T.int32_data(), V.Data);
    Given = static_cast<size_t>(T.int32_data_size()); break;
  case ET::UInt8: packAs<decltype(T.int32_data()), uint8_t>(T.int32_data(), V.Data);
    Given = static_cast<size_t>(T.int32_data_size()); break;
  case ET::Bool:
    packAs<decltype(T.int32_data()), uint8_t>(T.int32_data(), V.Data);
    for (unsigned char &B : V.Data)
      B = B ? 1 : 0;
    Given = static_cast<size_t>(T.int32_data_size()); break;
  case ET::UInt32: packAs<decltype(T.uint64_data()), uint32_t>(T.uint64_data(), V.Data);
    Given = static_cast<size_t>(T.uint64_data_size()); break;
  case ET::UInt64: packAs<decltype(T.uint64_data()), uint64_t>(T.uint64_data(), V.Data);
    Given = static_cast<size_t>(T.uint64_data_size()); break;
  }
  if (Given != Count)
    throw ModelError(What + " has " + std::to_string(Given) +
                     " elements, shape " + shapeText(V.Dims) + " needs " +
                     std::to_string(Count));
  return V;
}

namespace {

/// Type and static shape of a graph input or output.
void readValueInfo(const ox::ValueInfoProto &VI,
                   const std::map<std::string, int64_t> &DimValues,
                   const std::string &What, bool ShapeRequired, Value &V,
                   bool &HasShape) {
  HasShape = false;
  if (!VI.has_type() || !VI.type().has_tensor_type())
    throw ModelError(What + " '" + VI.name() +
                     "' is not a tensor (sequences, maps and optionals are "
                     "not supported)");
  const ox::TypeProto::Tensor &TT = VI.type().tensor_type();
  if (!etFromOnnx(TT.elem_type(), V.Type))
    throw ModelError(What + " '" + VI.name() + "' has element type " +
                     onnxTypeName(TT.elem_type()) +
                     ", which is not supported");
  if (!TT.has_shape()) {
    if (ShapeRequired)
      throw ModelError(What + " '" + VI.name() +
                       "' has no shape; the compiler needs static shapes");
    return;
  }
  Shape S;
  for (const ox::TensorShapeProto::Dimension &D : TT.shape().dim()) {
    if (D.has_dim_value() && D.dim_value() > 0) {
      S.push_back(D.dim_value());
      continue;
    }
    if (D.has_dim_value())
      throw ModelError(What + " '" + VI.name() + "' has dimension " +
                       std::to_string(D.dim_value()) +
                       "; only non-empty tensors are supported");
    if (!ShapeRequired) {
      S.push_back(-1); // symbolic in an output: not checked
      continue;
    }
    auto It = D.has_dim_param() ? DimValues.find(D.dim_param())
                                : DimValues.end();
    if (It == DimValues.end())
      throw ModelError(
          What + " '" + VI.name() + "' has a symbolic dimension" +
          (D.has_dim_param() ? " '" + D.dim_param() + "'" : std::string()) +
          " (dimension " + std::to_string(S.size()) +
          "); give its size with --dim " +
          (D.has_dim_param() && !D.dim_param().empty() ? D.dim_param()
                                                       : std::string("NAME")) +
          "=N (CMake: DIMS " +
          (D.has_dim_param() ? D.dim_param() : std::string("NAME")) + "=N)");
    if (It->second <= 0)
      throw ModelError("--dim " + It->first + " must be positive");
    S.push_back(It->second);
  }
  if (ShapeRequired) {
    int64_t N = 1;
    for (int64_t D : S) {
      if (D > kMaxElements || N > kMaxElements / D)
        throw ModelError(What + " '" + VI.name() + "' is too large");
      N *= D;
    }
  }
  V.Dims = std::move(S);
  HasShape = true;
}

} // namespace

void importModel(const std::string &Bytes,
                 const std::map<std::string, int64_t> &DimValues, Graph &G) {
  auto Parsed = std::make_shared<ox::ModelProto>();
  if (Bytes.empty())
    throw ModelError("the model file is empty");
  bool Ok;
  {
    // No "[libprotobuf ERROR ...]" on stderr for a string that is not
    // UTF-8: the error below says what went wrong.
    google::protobuf::LogSilencer Quiet;
    Ok = Parsed->ParseFromString(Bytes);
  }
  if (!Ok)
    throw ModelError("the file is not a valid ONNX model (protobuf parse "
                     "failed, or a string is not UTF-8)");
  if (!Parsed->has_graph())
    throw ModelError("the model has no graph");
  G.Owner = Parsed; // the nodes point into it
  const ox::ModelProto &Model = *Parsed;
  const ox::GraphProto &GP = Model.graph();

  for (const ox::OperatorSetIdProto &O : Model.opset_import())
    if (O.domain().empty() || O.domain() == "ai.onnx")
      G.Opset = O.version();
  if (G.Opset == 0)
    throw ModelError("the model imports no default-domain (ai.onnx) opset");
  if (G.Opset < 7)
    throw ModelError("opset " + std::to_string(G.Opset) +
                     " is not supported (need opset 7 or later; re-export "
                     "the model with a newer opset)");
  for (const ox::StringStringEntryProto &E : Model.metadata_props())
    if (E.key() == "mlbridge.advice")
      G.AdviceOutput = E.value();
  G.Producer = Model.producer_name();
  if (!Model.producer_version().empty())
    G.Producer += " " + Model.producer_version();
  if (GP.sparse_initializer_size() > 0)
    throw ModelError("sparse initializer '" +
                     GP.sparse_initializer(0).values().name() +
                     "' is not supported");

  std::unordered_map<std::string, int> ByName;
  std::set<std::string> InputNames;
  for (const ox::ValueInfoProto &VI : GP.input())
    if (!InputNames.insert(VI.name()).second)
      throw ModelError("graph input '" + VI.name() + "' is listed twice");
  for (const ox::TensorProto &T : GP.initializer()) {
    if (T.name().empty())
      throw ModelError("an initializer has no name");
    Value V = decodeTensor(T, "initializer '" + T.name() + "'");
    if (ByName.count(T.name()))
      throw ModelError("initializer '" + T.name() + "' is defined twice");
    ByName[T.name()] = G.addValue(std::move(V));
  }
  for (const ox::ValueInfoProto &VI : GP.input()) {
    if (ByName.count(VI.name()))
      continue; // an initializer listed as input (IR < 4): a constant
    if (VI.name().empty())
      throw ModelError("a graph input has no name");
    Value V;
    V.Name = VI.name();
    V.K = Value::Input;
    bool HasShape = false;
    readValueInfo(VI, DimValues, "input", /*ShapeRequired=*/true, V, HasShape);
    V.InputIndex = static_cast<int>(G.Inputs.size());
    const int Idx = G.addValue(std::move(V));
    ByName[VI.name()] = Idx;
    G.Inputs.push_back(Idx);
  }

  // Nodes, in a topological order (stable: the file's order when valid).
  const int NodeCount = GP.node_size();
  std::vector<int> Order;
  std::vector<bool> Done(static_cast<size_t>(NodeCount), false);
  std::set<std::string> Available;
  for (auto &KV : ByName)
    Available.insert(KV.first);
  std::set<std::string> Produced;
  for (const ox::NodeProto &NP : GP.node())
    for (const std::string &O : NP.output())
      if (!O.empty()) {
        if (Produced.count(O) || ByName.count(O))
          throw ModelError("value '" + O + "' is defined twice");
        Produced.insert(O);
      }
  while (static_cast<int>(Order.size()) < NodeCount) {
    bool Progress = false;
    for (int I = 0; I < NodeCount; ++I) {
      if (Done[static_cast<size_t>(I)])
        continue;
      const ox::NodeProto &NP = GP.node(I);
      bool Ready = true;
      for (const std::string &In : NP.input())
        if (!In.empty() && !Available.count(In)) {
          if (!Produced.count(In)) {
            Node Tmp;
            Tmp.Index = I;
            Tmp.Name = NP.name();
            Tmp.Op = NP.op_type();
            Tmp.Proto = &NP;
            throw ModelError(Tmp.describe() + ": input '" + In +
                             "' is not a graph input, initializer or the "
                             "output of any node");
          }
          Ready = false;
        }
      if (!Ready)
        continue;
      Done[static_cast<size_t>(I)] = true;
      Order.push_back(I);
      for (const std::string &O : NP.output())
        Available.insert(O);
      Progress = true;
    }
    if (!Progress)
      throw ModelError("the graph has a cycle");
  }

  for (int I : Order) {
    const ox::NodeProto &NP = GP.node(I);
    Node N;
    N.Index = static_cast<int>(G.Nodes.size());
    N.Name = NP.name();
    N.Op = NP.op_type();
    N.Proto = &NP;
    if (!NP.domain().empty() && NP.domain() != "ai.onnx")
      throw ModelError(N.describe() + ": operator domain '" + NP.domain() +
                       "' is not supported (only the default ONNX domain)");
    N.Impl = makeOp(NP.op_type());
    if (!N.Impl) {
      std::string List;
      for (const std::string &Op : opNames())
        List += (List.empty() ? "" : ", ") + Op;
      throw ModelError(N.describe() + ": unsupported operator '" +
                       NP.op_type() + "' (supported: " + List + ")");
    }
    for (const std::string &In : NP.input())
      N.In.push_back(In.empty() ? -1 : ByName.at(In));
    int Outputs = 0;
    for (const std::string &O : NP.output()) {
      if (O.empty())
        continue;
      ++Outputs;
      Value V;
      V.Name = O;
      V.K = Value::Computed;
      V.Producer = N.Index;
      const int Idx = G.addValue(std::move(V));
      ByName[O] = Idx;
      N.Out.push_back(Idx);
    }
    if (Outputs != 1 || NP.output_size() != 1)
      throw ModelError(N.describe() + ": expected exactly one output, got " +
                       std::to_string(NP.output_size()) +
                       " (optional outputs are not supported)");
    G.Nodes.push_back(std::move(N));
    Node &Added = G.Nodes.back();
    InferContext C(G, Added, G.Opset);
    Added.Impl->infer(C);
    Value &Out = G.Values[Added.Out[0]];
    if (Out.isConstant())
      Added.Folded = true;
    if (elementCount(Out.Dims) <= 0)
      throw ModelError(Added.describe() + ": output has shape " +
                       shapeText(Out.Dims) +
                       "; only non-empty tensors are supported");
    if (elementCount(Out.Dims) > kMaxElements)
      throw ModelError(Added.describe() + ": output shape " +
                       shapeText(Out.Dims) + " is too large");
  }

  // Cross-check inferred shapes against the model's own annotations.
  auto Check = [&](const ox::ValueInfoProto &VI, const char *What) {
    auto It = ByName.find(VI.name());
    if (It == ByName.end())
      return false;
    const Value &V = G.Values[It->second];
    Value Declared;
    bool HasShape = false;
    try {
      readValueInfo(VI, DimValues, What, /*ShapeRequired=*/false, Declared,
                    HasShape);
    } catch (const ModelError &) {
      return true; // unusual annotation: the inferred one stands
    }
    if (Declared.Type != V.Type)
      throw ModelError(std::string(What) + " '" + VI.name() +
                       "' is declared " + etName(Declared.Type) +
                       " but computes " + etName(V.Type));
    bool Same = HasShape ? Declared.Dims.size() == V.Dims.size() : true;
    for (size_t K = 0; Same && HasShape && K < V.Dims.size(); ++K)
      Same = Declared.Dims[K] < 0 || Declared.Dims[K] == V.Dims[K];
    if (!Same)
      throw ModelError(std::string(What) + " '" + VI.name() +
                       "' is declared with shape " + shapeText(Declared.Dims) +
                       " but computes " + shapeText(V.Dims));
    return true;
  };
  for (const ox::ValueInfoProto &VI : GP.value_info())
    Check(VI, "value");
  for (const ox::ValueInfoProto &VI : GP.output()) {
    if (!Check(VI, "output"))
      throw ModelError("graph output '" + VI.name() +
                       "' is not computed by the graph");
    G.Outputs.push_back(ByName.at(VI.name()));
    G.OutputNames.push_back(VI.name());
  }
  if (G.Outputs.empty())
    throw ModelError("the graph has no outputs");
  if (!G.AdviceOutput.empty() &&
      std::find(G.OutputNames.begin(), G.OutputNames.end(), G.AdviceOutput) ==
          G.OutputNames.end())
    throw ModelError("metadata 'mlbridge.advice' names '" + G.AdviceOutput +
                     "', which is not a graph output");
}

} // namespace mlbridge::modelc
