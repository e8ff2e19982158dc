//===- grpc/user_message.cpp - User-defined messages by field name --------===//

#include "user_message.h"

#include "serdes/serdes_internal.h"
#include "support/checked_cast.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace mlbridge::grpc_detail {

namespace gp = google::protobuf;
using FD = gp::FieldDescriptor;

// The numeric field types: X(cpp_type, Reflection accessor suffix, C++ type).
#define MLBRIDGE_PROTO_NUMERIC_FIELDS(X)                                        \
  X(INT32, Int32, int32_t)                                                     \
  X(INT64, Int64, int64_t)                                                     \
  X(UINT32, UInt32, uint32_t)                                                  \
  X(UINT64, UInt64, uint64_t)                                                  \
  X(DOUBLE, Double, double)                                                    \
  X(FLOAT, Float, float)

namespace {

class CollectErrors final : public gp::compiler::MultiFileErrorCollector {
public:
  std::string Text;
  void AddError(const std::string &File, int Line, int Column,
                const std::string &Message) override {
    if (Text.size() < 4000)
      Text += File + ":" + std::to_string(Line + 1) + ":" +
              std::to_string(Column + 1) + ": " + Message + "\n";
  }
  void AddWarning(const std::string &, int, int, const std::string &) override {}
};

std::string fieldList(const gp::Descriptor *D) {
  std::string S;
  for (int I = 0; I < D->field_count(); ++I)
    S += (I ? ", " : "") + D->field(I)->name();
  return S.empty() ? "none" : S;
}

struct Segment {
  std::string Name;
  long Index = -1;
};

constexpr long kMaxRepeatedIndex = 1 << 20;

Status parsePath(const std::string &Path, std::vector<Segment> &Out) {
  Out.clear();
  size_t Start = 0;
  auto Bad = [&](const std::string &Why) {
    return Status(ErrorCode::InvalidArgument,
                  "field path '" + Path + "': " + Why);
  };
  while (true) {
    size_t Dot = Path.find('.', Start);
    std::string Part = Path.substr(
        Start, Dot == std::string::npos ? std::string::npos : Dot - Start);
    if (Part.empty())
      return Bad("empty field name");
    Segment S;
    size_t Open = Part.find('[');
    if (Open != std::string::npos) {
      if (Part.back() != ']' || Open + 2 > Part.size() - 1)
        return Bad("malformed index in '" + Part + "'");
      std::string Digits = Part.substr(Open + 1, Part.size() - Open - 2);
      if (Digits.empty() || Digits.size() > 7 ||
          Digits.find_first_not_of("0123456789") != std::string::npos)
        return Bad("malformed index in '" + Part + "'");
      S.Index = std::stol(Digits);
      if (S.Index >= kMaxRepeatedIndex)
        return Bad("index " + Digits + " is too large");
      Part = Part.substr(0, Open);
      if (Part.empty())
        return Bad("empty field name");
    }
    S.Name = std::move(Part);
    Out.push_back(std::move(S));
    if (Dot == std::string::npos)
      return Status::ok();
    Start = Dot + 1;
  }
}

const FD *findField(const gp::Descriptor *D, const Segment &S,
                    const std::string &Path, Status &Err) {
  const FD *F = D->FindFieldByName(S.Name);
  if (!F)
    Err = Status(ErrorCode::InvalidArgument,
                 "message " + D->full_name() + " has no field '" + S.Name +
                     "'" + (Path != S.Name ? " (in '" + Path + "')" : "") +
                     "; its fields: " + fieldList(D));
  return F;
}

/// The field of S in M's type, as a step of Path: it must be a message
/// field. Null (Err set) otherwise.
const FD *messageStep(const gp::Message &M, const Segment &S,
                      const std::string &Path, Status &Err) {
  const FD *F = findField(M.GetDescriptor(), S, Path, Err);
  if (F && F->cpp_type() != FD::CPPTYPE_MESSAGE) {
    Err = Status(ErrorCode::InvalidArgument, "field path '" + Path + "': '" +
                                                 S.Name +
                                                 "' is not a message field");
    return nullptr;
  }
  return F;
}

/// Parses Path and follows its message steps from Root: Enter(R, Cur, F, S)
/// moves Cur into field F (segment S) of the message it points at. Leaf is
/// then the last segment's field of *Cur, and Last that segment.
template <typename MessageT, typename EnterFn>
Status followPath(MessageT &Root, const std::string &Path, EnterFn &&Enter,
                  MessageT *&Cur, const FD *&Leaf, Segment &Last) {
  std::vector<Segment> Segs;
  if (Status S = parsePath(Path, Segs); !S.isOk())
    return S;
  Cur = &Root;
  for (size_t I = 0; I + 1 < Segs.size(); ++I) {
    Status Err;
    const FD *F = messageStep(*Cur, Segs[I], Path, Err);
    if (!F)
      return Err;
    if (Status S = Enter(*Cur->GetReflection(), Cur, F, Segs[I]); !S.isOk())
      return S;
  }
  Last = std::move(Segs.back());
  Status Err;
  Leaf = findField(Cur->GetDescriptor(), Last, Path, Err);
  return Leaf ? Status::ok() : Err;
}

/// One element, as read from a tensor or a field.
struct Num {
  enum Kind { Int, UInt, Float, Bool } K = Int;
  int64_t I = 0;
  uint64_t U = 0;
  double F = 0;
  bool B = false;

  /// X, of the kind its type has.
  template <typename T> static Num of(T X) {
    Num N;
    if constexpr (std::is_same_v<T, bool>) {
      N.K = Bool;
      N.B = X;
    } else if constexpr (std::is_floating_point_v<T>) {
      N.K = Float;
      N.F = X;
    } else if constexpr (std::is_signed_v<T>) {
      N.I = X;
    } else {
      N.K = UInt;
      N.U = X;
    }
    return N;
  }
};

Num readTensor(const TensorValue &V, size_t Index) {
  const auto *P = static_cast<const unsigned char *>(V.data());
  auto Load = [&](auto Tag) {
    decltype(Tag) X;
    std::memcpy(&X, P + Index * sizeof(X), sizeof(X));
    return Num::of(X);
  };
  switch (V.type()) {
#define MLBRIDGE_CASE(E, Ty, Name)                                              \
  case DType::E:                                                               \
    return Load(Ty());
    MLBRIDGE_NUMERIC_DTYPES(MLBRIDGE_CASE)
#undef MLBRIDGE_CASE
  case DType::Bool:
    return Num::of(P[Index] != 0);
  case DType::String:
    break;
  }
  return Num();
}

const char *kindName(Num::Kind K) {
  switch (K) {
  case Num::Int: return "a signed integer";
  case Num::UInt: return "an unsigned integer";
  case Num::Float: return "a floating-point number";
  case Num::Bool: return "a bool";
  }
  return "?";
}

/// N as the integer type I, exactly; nullopt when N is not an integer or I
/// cannot hold it.
template <typename I> std::optional<I> asInteger(const Num &N) {
  if (N.K == Num::Int)
    return support::checkedCast<I>(N.I);
  if (N.K == Num::UInt)
    return support::checkedCast<I>(N.U);
  return std::nullopt;
}

double asDouble(const Num &N) {
  return N.K == Num::Int ? double(N.I) : N.K == Num::UInt ? double(N.U) : N.F;
}

std::string describe(const Num &N) {
  switch (N.K) {
  case Num::Int: return std::to_string(N.I);
  case Num::UInt: return std::to_string(N.U);
  case Num::Float: return std::to_string(N.F);
  case Num::Bool: return N.B ? "true" : "false";
  }
  return "?";
}

/// Writes N into element Index of the field (repeated: appended).
Status writeField(gp::Message &M, const FD *F, const Num &N,
                  const std::string &Path) {
  const gp::Reflection *R = M.GetReflection();
  const bool Rep = F->is_repeated();
  auto Mismatch = [&](const std::string &Why) {
    return Status(ErrorCode::TypeMismatch, "field '" + Path + "' (" +
                                               F->type_name() + "): " + Why);
  };
  using Refl = gp::Reflection;
  // Set or Add (repeated) the value, which an integer field must hold
  // exactly, and a real field approximately (never a bool).
  auto Number = [&](auto Set, auto Add, auto Tag) -> Status {
    using T = decltype(Tag);
    if constexpr (std::is_floating_point_v<T>) {
      if (N.K == Num::Bool)
        return Mismatch("cannot hold a bool");
      (R->*(Rep ? Add : Set))(&M, F, T(asDouble(N)));
    } else {
      std::optional<T> V = asInteger<T>(N);
      if (!V)
        return Mismatch("cannot hold " + std::string(kindName(N.K)) + " " +
                        describe(N));
      (R->*(Rep ? Add : Set))(&M, F, *V);
    }
    return Status::ok();
  };
  switch (F->cpp_type()) {
#define MLBRIDGE_CASE(Cpp, Accessor, Ty)                                       \
  case FD::CPPTYPE_##Cpp:                                                      \
    return Number(&Refl::Set##Accessor, &Refl::Add##Accessor, Ty());
    MLBRIDGE_PROTO_NUMERIC_FIELDS(MLBRIDGE_CASE)
#undef MLBRIDGE_CASE
  case FD::CPPTYPE_BOOL:
    if (N.K != Num::Bool)
      return Mismatch("needs a bool, got " + std::string(kindName(N.K)));
    Rep ? R->AddBool(&M, F, N.B) : R->SetBool(&M, F, N.B);
    return Status::ok();
  case FD::CPPTYPE_ENUM: {
    std::optional<int32_t> V = asInteger<int32_t>(N);
    if (!V)
      return Mismatch("needs an enum number, got " +
                      std::string(kindName(N.K)) + " " + describe(N));
    if (!F->enum_type()->FindValueByNumber(*V))
      return Mismatch(std::to_string(*V) + " is not a value of enum " +
                      F->enum_type()->full_name());
    Rep ? R->AddEnumValue(&M, F, *V) : R->SetEnumValue(&M, F, *V);
    return Status::ok();
  }
  default:
    return Mismatch("is not a numeric field");
  }
}

Num readField(const gp::Message &M, const FD *F, int Index) {
  const gp::Reflection *R = M.GetReflection();
  const bool Rep = F->is_repeated();
  using Refl = gp::Reflection;
  auto Get = [&](auto Single, auto Repeated) {
    return Num::of(Rep ? (R->*Repeated)(M, F, Index) : (R->*Single)(M, F));
  };
  switch (F->cpp_type()) {
#define MLBRIDGE_CASE(Cpp, Accessor, Ty)                                       \
  case FD::CPPTYPE_##Cpp:                                                      \
    return Get(&Refl::Get##Accessor, &Refl::GetRepeated##Accessor);
    MLBRIDGE_PROTO_NUMERIC_FIELDS(MLBRIDGE_CASE)
    MLBRIDGE_CASE(BOOL, Bool, bool)
    MLBRIDGE_CASE(ENUM, EnumValue, int)
#undef MLBRIDGE_CASE
  default:
    return Num();
  }
}

/// Stores N as element Index of Out (dtype T), exactly.
Status writeTensor(TensorValue &Out, size_t Index, const Num &N,
                   const std::string &Path) {
  auto *P = static_cast<unsigned char *>(Out.data());
  const DType T = Out.type();
  auto Mismatch = [&] {
    return Status(ErrorCode::TypeMismatch,
                  "advice field '" + Path + "' holds " + kindName(N.K) + " " +
                      describe(N) + ", which " + std::string(dtypeName(T)) +
                      " cannot represent");
  };
  auto Store = [&](auto Tag) -> Status {
    using I = decltype(Tag);
    if constexpr (std::is_floating_point_v<I>) {
      if (N.K == Num::Bool)
        return Mismatch();
      I X = I(asDouble(N));
      std::memcpy(P + Index * sizeof(I), &X, sizeof(I));
      return Status::ok();
    } else {
      std::optional<I> X = asInteger<I>(N);
      if (!X)
        return Mismatch();
      std::memcpy(P + Index * sizeof(I), &*X, sizeof(I));
      return Status::ok();
    }
  };
  switch (T) {
#define MLBRIDGE_CASE(E, Ty, Name)                                              \
  case DType::E:                                                               \
    return Store(Ty());
    MLBRIDGE_NUMERIC_DTYPES(MLBRIDGE_CASE)
#undef MLBRIDGE_CASE
  case DType::Bool:
    if (N.K != Num::Bool)
      return Mismatch();
    P[Index] = N.B ? 1 : 0;
    return Status::ok();
  case DType::String:
    return Mismatch();
  }
  return Mismatch();
}

#undef MLBRIDGE_PROTO_NUMERIC_FIELDS

} // namespace

UserMessageCodec::~UserMessageCodec() {
  // Messages before the factory and the pool they come from.
  Request.reset();
  Reply.reset();
  Factory.reset();
  Importer.reset();
}

Expected<std::unique_ptr<UserMessageCodec>>
UserMessageCodec::load(const UserMessageSchema &Schema) {
  std::unique_ptr<UserMessageCodec> C(new UserMessageCodec());
  C->Schema = Schema;
  const gp::DescriptorPool *Pool = gp::DescriptorPool::generated_pool();
  if (!Schema.ProtoFile.empty()) {
    C->Tree = std::make_unique<gp::compiler::DiskSourceTree>();
    std::vector<std::string> Paths = Schema.ImportPaths;
    std::string File = Schema.ProtoFile;
    if (Paths.empty()) {
      size_t Slash = File.rfind('/');
      Paths.push_back(Slash == std::string::npos ? "." : File.substr(0, Slash));
    }
    for (const std::string &P : Paths)
      C->Tree->MapPath("", P);
    // The file is named relative to an import path when it lies below one.
    std::string Virtual;
    std::string Shadow;
    if (C->Tree->DiskFileToVirtualFile(File, &Virtual, &Shadow) !=
        gp::compiler::DiskSourceTree::SUCCESS)
      return Status(ErrorCode::NotFound,
                    "user .proto '" + File +
                        "' is missing or not below an import path");
    auto *Errors = new CollectErrors();
    C->Errors.reset(Errors);
    C->Importer =
        std::make_unique<gp::compiler::Importer>(C->Tree.get(), Errors);
    if (!C->Importer->Import(Virtual))
      return Status(ErrorCode::InvalidArgument,
                    "cannot load user .proto '" + File + "':\n" + Errors->Text);
    Pool = C->Importer->pool();
  }
  const gp::Descriptor *Req = Pool->FindMessageTypeByName(Schema.RequestType);
  const gp::Descriptor *Rep = Pool->FindMessageTypeByName(Schema.ReplyType);
  if (!Req || !Rep)
    return Status(ErrorCode::InvalidArgument,
                  "user messages: no message type '" +
                      (!Req ? Schema.RequestType : Schema.ReplyType) + "' in " +
                      (Schema.ProtoFile.empty() ? std::string("the program")
                                                : Schema.ProtoFile));
  // "/pkg.Service/Method": check it exists and uses these messages.
  const std::string &M = Schema.Method;
  size_t Slash = M.rfind('/');
  if (M.size() < 4 || M[0] != '/' || Slash == 0 || Slash + 1 >= M.size())
    return Status(ErrorCode::InvalidArgument,
                  "user messages: method '" + M +
                      "' is not of the form /package.Service/Method");
  const gp::ServiceDescriptor *Svc =
      Pool->FindServiceByName(M.substr(1, Slash - 1));
  const gp::MethodDescriptor *Meth =
      Svc ? Svc->FindMethodByName(M.substr(Slash + 1)) : nullptr;
  if (!Meth)
    return Status(ErrorCode::InvalidArgument,
                  "user messages: no method '" + M + "' in " +
                      (Schema.ProtoFile.empty() ? std::string("the program")
                                                : Schema.ProtoFile));
  if (Meth->input_type() != Req || Meth->output_type() != Rep ||
      Meth->client_streaming() || Meth->server_streaming())
    return Status(ErrorCode::InvalidArgument,
                  "user messages: method '" + M + "' is not a unary call from " +
                      Schema.RequestType + " to " + Schema.ReplyType);
  C->Factory = std::make_unique<gp::DynamicMessageFactory>(Pool);
  // Generated types keep their generated classes (faster, and what the
  // program's own code would build).
  if (Schema.ProtoFile.empty())
    C->Factory->SetDelegateToGeneratedFactory(true);
  C->Request.reset(C->Factory->GetPrototype(Req)->New());
  C->Reply.reset(C->Factory->GetPrototype(Rep)->New());
  if (Schema.AdviceField.empty())
    return Status(ErrorCode::InvalidArgument,
                  "user messages: no advice field given; " + Rep->full_name() +
                      " has: " + fieldList(Rep));
  std::vector<Segment> Segs;
  if (Status S = parsePath(Schema.AdviceField, Segs); !S.isOk())
    return S;
  const gp::Descriptor *D = Rep;
  for (size_t I = 0; I < Segs.size(); ++I) {
    Status Err;
    const FD *F = findField(D, Segs[I], Schema.AdviceField, Err);
    if (!F)
      return Err.addContext("user messages: advice field");
    if (I + 1 < Segs.size()) {
      if (F->cpp_type() != FD::CPPTYPE_MESSAGE)
        return Status(ErrorCode::InvalidArgument,
                      "user messages: advice field '" + Schema.AdviceField +
                          "': '" + F->name() + "' is not a message");
      D = F->message_type();
    } else if (F->cpp_type() == FD::CPPTYPE_MESSAGE) {
      return Status(ErrorCode::InvalidArgument,
                    "user messages: advice field '" + Schema.AdviceField +
                        "' is a message; name one of its fields: " +
                        fieldList(F->message_type()));
    }
  }
  return C;
}

Status UserMessageCodec::setField(gp::Message &Root, const std::string &Path,
                                  const TensorValue &V) {
  // Message steps are created as needed.
  auto Enter = [&](const gp::Reflection &R, gp::Message *&Cur, const FD *F,
                   const Segment &S) {
    if (F->is_repeated()) {
      if (S.Index < 0)
        return Status(ErrorCode::InvalidArgument,
                      "field path '" + Path + "': '" + S.Name +
                          "' is repeated; name an element, e.g. " + S.Name +
                          "[0]");
      while (R.FieldSize(*Cur, F) <= S.Index)
        R.AddMessage(Cur, F);
      Cur = R.MutableRepeatedMessage(Cur, F, int(S.Index));
    } else {
      if (S.Index >= 0)
        return Status(ErrorCode::InvalidArgument,
                      "field path '" + Path + "': '" + S.Name +
                          "' is not repeated and cannot be indexed");
      Cur = R.MutableMessage(Cur, F);
    }
    return Status::ok();
  };
  gp::Message *Cur = nullptr;
  const FD *F = nullptr;
  Segment Last;
  if (Status S = followPath(Root, Path, Enter, Cur, F, Last); !S.isOk())
    return S;
  if (Last.Index >= 0)
    return Status(ErrorCode::InvalidArgument,
                  "field path '" + Path +
                      "': only message fields inside a path can be indexed; "
                      "set a repeated field with a vector");
  if (F->cpp_type() == FD::CPPTYPE_MESSAGE)
    return Status(ErrorCode::InvalidArgument,
                  "field '" + Path + "' is a message; set its fields (" +
                      fieldList(F->message_type()) + ") with '" + Path +
                      ".<field>'");
  const gp::Reflection *R = Cur->GetReflection();
  if (V.type() == DType::String || F->cpp_type() == FD::CPPTYPE_STRING) {
    if (V.type() != DType::String || F->cpp_type() != FD::CPPTYPE_STRING)
      return Status(ErrorCode::TypeMismatch,
                    "field '" + Path + "' (" + F->type_name() +
                        ") cannot hold a " + std::string(dtypeName(V.type())) +
                        " feature");
    std::string Text(V.asString());
    if (F->is_repeated()) {
      R->ClearField(Cur, F);
      R->AddString(Cur, F, std::move(Text));
    } else {
      R->SetString(Cur, F, std::move(Text));
    }
    return Status::ok();
  }
  const size_t Count = V.elementCount();
  if (F->is_repeated()) {
    R->ClearField(Cur, F);
  } else if (Count != 1) {
    return Status(ErrorCode::TypeMismatch,
                  "field '" + Path + "' holds one value, the feature has " +
                      std::to_string(Count) + " elements (make the field "
                      "repeated for a vector)");
  }
  for (size_t K = 0; K < Count; ++K)
    if (Status S = writeField(*Cur, F, readTensor(V, K), Path); !S.isOk())
      return S;
  return Status::ok();
}

Status UserMessageCodec::getField(const gp::Message &Root,
                                  const std::string &Path,
                                  const TensorSpec &Spec, TensorValue &Out) {
  auto Missing = [&](const std::string &Name) {
    return Status(ErrorCode::Malformed, "reply does not set field '" + Name +
                                            "' (advice '" + Path + "')");
  };
  // Every message step must be set in the reply.
  auto Enter = [&](const gp::Reflection &R, const gp::Message *&Cur,
                   const FD *F, const Segment &S) {
    if (F->is_repeated()) {
      if (S.Index < 0 || R.FieldSize(*Cur, F) <= S.Index)
        return Missing(S.Name + "[" + std::to_string(S.Index) + "]");
      Cur = &R.GetRepeatedMessage(*Cur, F, int(S.Index));
    } else {
      if (!R.HasField(*Cur, F))
        return Missing(S.Name);
      Cur = &R.GetMessage(*Cur, F);
    }
    return Status::ok();
  };
  const gp::Message *Cur = nullptr;
  const FD *F = nullptr;
  Segment Last;
  if (Status S = followPath(Root, Path, Enter, Cur, F, Last); !S.isOk())
    return S;
  const gp::Reflection *R = Cur->GetReflection();
  // A field with presence must be set: a default value is never taken for
  // an answer. (proto3 scalars without `optional` cannot tell.)
  if (!F->is_repeated() && F->has_presence() && !R->HasField(*Cur, F))
    return Missing(Last.Name);
  if (F->cpp_type() == FD::CPPTYPE_MESSAGE)
    return Status(ErrorCode::InvalidArgument,
                  "advice field '" + Path + "' is a message");
  serdes_detail::prepareValue(Out, Spec);
  size_t Row = 0;
  if (!serdes_detail::rowElements(Spec, Row))
    return Status(ErrorCode::InvalidArgument,
                  "invalid advice spec " + Spec.describe());
  if (Spec.type() == DType::String || F->cpp_type() == FD::CPPTYPE_STRING) {
    if (Spec.type() != DType::String || F->cpp_type() != FD::CPPTYPE_STRING ||
        F->is_repeated())
      return Status(ErrorCode::TypeMismatch,
                    "advice field '" + Path + "' (" +
                        std::string(F->is_repeated() ? "repeated " : "") +
                        F->type_name() + ") does not fit advice " +
                        Spec.describe());
    const std::string Text = R->GetString(*Cur, F);
    if (!Spec.isDynamic() && Text.size() != Row)
      return Status(ErrorCode::TypeMismatch,
                    "advice '" + Path + "' has " + std::to_string(Text.size()) +
                        " bytes, the spec needs " + std::to_string(Row));
    serdes_detail::setConcreteShape(Out, Spec, Text.size());
    if (!Text.empty())
      std::memcpy(Out.data(), Text.data(), Text.size());
    return Status::ok();
  }
  const size_t Count =
      F->is_repeated() ? static_cast<size_t>(R->FieldSize(*Cur, F)) : 1;
  if (Spec.isDynamic() ? (Row == 0 ? Count != 0 : Count % Row != 0)
                       : Count != Row)
    return Status(ErrorCode::TypeMismatch,
                  "advice field '" + Path + "' has " + std::to_string(Count) +
                      " element(s), which does not fit " + Spec.describe());
  serdes_detail::setConcreteShape(Out, Spec, Count);
  for (size_t K = 0; K < Count; ++K)
    if (Status S = writeTensor(Out, K, readField(*Cur, F, int(K)), Path);
        !S.isOk())
      return S;
  return Status::ok();
}

Status UserMessageCodec::fillRequest(
    const std::vector<const TensorValue *> &Features) {
  Request->Clear();
  for (const TensorValue *V : Features)
    if (Status S = setField(*Request, V->spec().name(), *V); !S.isOk())
      return S.addContext("filling " + Schema.RequestType);
  return Status::ok();
}

Status UserMessageCodec::readAdvice(const TensorSpec &Spec, TensorValue &Out) {
  return getField(*Reply, Schema.AdviceField, Spec, Out);
}

} // namespace mlbridge::grpc_detail
