//===- core/tensor_spec.cpp - Named, typed, shaped tensors ----------------===//

#include "mlbridge/tensor_spec.h"

#include "core/tensor_spec_json.h"
#include "support/json.h"
#include "support/shape_text.h"
#include "support/utf8.h"

#include <climits>
#include <cstdint>

namespace mlbridge {

bool TensorSpec::isDynamic() const {
  for (int64_t D : Shape)
    if (D == kDynamicDim)
      return true;
  return false;
}

size_t TensorSpec::elementCount() const {
  // Dynamic or invalid dims give 0. An overflowing product saturates at
  // SIZE_MAX / 8 so byteSize() (element size <= 8) cannot wrap around to a
  // small number; validate() rejects such specs with a proper message.
  size_t N = 1;
  for (int64_t D : Shape) {
    if (D < 0)
      return 0;
    if (__builtin_mul_overflow(N, static_cast<uint64_t>(D), &N))
      return SIZE_MAX / 8;
  }
  return N;
}

Status TensorSpec::validate(size_t MaxBytes) const {
  auto Fail = [&](ErrorCode C, const std::string &Why) {
    return Status(C, "tensor spec \"" + Name + "\": " + Why);
  };
  if (Name.empty())
    return Status(ErrorCode::InvalidArgument, "tensor spec has an empty name");
  size_t Bad;
  if (!support::isValidUtf8(Name, &Bad))
    return Fail(ErrorCode::InvalidArgument,
                "name is not valid UTF-8 (bad byte at offset " +
                    std::to_string(Bad) + ")");
  if (static_cast<int>(Type) >= kNumDTypes)
    return Fail(ErrorCode::InvalidArgument, "invalid dtype");
  int Dynamic = 0;
  for (size_t I = 0; I < Shape.size(); ++I) {
    if (Shape[I] == kDynamicDim) {
      ++Dynamic;
      continue;
    }
    if (Shape[I] < 0)
      return Fail(ErrorCode::InvalidArgument,
                  "dimension " + std::to_string(I) + " is " +
                      std::to_string(Shape[I]) +
                      "; dimensions must be >= 0 or -1 (variable)");
  }
  if (Dynamic > 1)
    return Fail(ErrorCode::InvalidArgument,
                "more than one variable (-1) dimension");
  size_t Bytes;
  if (!detail::specPayloadBytes(*this, Bytes) || Bytes > MaxBytes)
    return Fail(ErrorCode::TooLarge,
                describe() + " exceeds the size limit of " +
                    std::to_string(MaxBytes) + " bytes");
  return Status::ok();
}

void TensorSpec::appendJson(std::string &Out) const {
  Out += "{\"name\":";
  if (support::isValidUtf8(Name)) {
    json::appendQuoted(Out, Name);
  } else {
    // llvm::json replaces invalid UTF-8 with U+FFFD; do the same so the
    // output is always valid JSON.
    std::string Fixed;
    size_t Bad;
    std::string_view Rest = Name;
    while (!support::isValidUtf8(Rest, &Bad)) {
      Fixed.append(Rest.data(), Bad);
      Fixed += "\xEF\xBF\xBD";
      Rest.remove_prefix(Bad + 1);
    }
    Fixed.append(Rest.data(), Rest.size());
    json::appendQuoted(Out, Fixed);
  }
  Out += ",\"type\":\"";
  Out += dtypeName(Type);
  Out += "\",\"port\":";
  json::appendInteger(Out, Port);
  Out += ",\"shape\":[";
  for (size_t I = 0; I < Shape.size(); ++I) {
    if (I)
      Out.push_back(',');
    json::appendInteger(Out, Shape[I]);
  }
  Out += "]}";
}

std::string TensorSpec::toJson() const {
  std::string S;
  appendJson(S);
  return S;
}

Expected<TensorSpec> TensorSpec::fromJson(std::string_view Json) {
  json::Value V;
  if (Status S = json::parse(Json, V))
    return S.addContext("tensor spec");
  TensorSpec Spec;
  if (Status S = detail::specFromJSONValue(V, detail::SpecAllowDynamic, Spec))
    return S;
  return Spec;
}

std::string TensorSpec::describe() const {
  return std::string(dtypeName(Type)) + support::shapeText(Shape) + " " + Name;
}

namespace detail {

bool specPayloadBytes(const TensorSpec &S, size_t &Bytes) {
  size_t N = dtypeSize(S.type());
  for (int64_t D : S.shape()) {
    if (D == kDynamicDim)
      continue;
    if (D < 0)
      return false;
    if (__builtin_mul_overflow(N, static_cast<uint64_t>(D), &N))
      return false;
  }
  Bytes = N;
  return true;
}

Status specFromJSONValue(const json::Value &V, unsigned Flags,
                         TensorSpec &Out) {
  if (!V.isObject())
    return Status(ErrorCode::Malformed,
                  "tensor spec must be a JSON object, got " + V.describe());
  const json::Value *Name = V.find("name");
  if (!Name)
    return Status(ErrorCode::Malformed, "tensor spec: missing key \"name\"");
  if (!Name->isString())
    return Status(ErrorCode::Malformed,
                  "tensor spec: \"name\" must be a string, got " +
                      Name->describe());
  if (Name->string().empty())
    return Status(ErrorCode::Malformed, "tensor spec: \"name\" is empty");
  const std::string Prefix = "tensor spec \"" + Name->string() + "\": ";
  auto Fail = [&](const std::string &Why) {
    return Status(ErrorCode::Malformed, Prefix + Why);
  };

  const json::Value *Type = V.find("type");
  if (!Type)
    return Fail("missing key \"type\"");
  if (!Type->isString())
    return Fail("\"type\" must be a string, got " + Type->describe());
  std::optional<DType> DT = dtypeFromName(Type->string());
  if (!DT)
    return Fail("unknown \"type\" \"" + Type->string() +
                "\" (expected float, double, int8_t..int64_t, "
                "uint8_t..uint64_t, bool or string)");

  const json::Value *ShapeV = V.find("shape");
  if (!ShapeV)
    return Fail("missing key \"shape\"");
  if (!ShapeV->isArray())
    return Fail("\"shape\" must be an array of integers, got " +
                ShapeV->describe());
  std::vector<int64_t> Shape;
  Shape.reserve(ShapeV->items().size());
  int Dynamic = 0;
  for (size_t I = 0; I < ShapeV->items().size(); ++I) {
    const json::Value &D = ShapeV->items()[I];
    const std::string Where = "\"shape\"[" + std::to_string(I) + "] ";
    if (!D.isNumber() || !D.number().IsInteger)
      return Fail(Where + "must be an integer, got " + D.describe());
    if (!D.number().HasInt64)
      return Fail(Where + "is out of range: " + D.describe());
    const int64_t Dim = D.number().Int;
    const bool Ok = Dim > 0 ||
                    (Dim == kDynamicDim && (Flags & SpecAllowDynamic)) ||
                    (Dim == 0 && (Flags & SpecAllowEmpty));
    if (!Ok) {
      std::string Allowed = "> 0";
      if (Flags & SpecAllowEmpty)
        Allowed = ">= 0";
      if (Flags & SpecAllowDynamic)
        Allowed += " or -1";
      return Fail(Where + "must be " + Allowed + ", got " +
                  std::to_string(Dim));
    }
    if (Dim == kDynamicDim && ++Dynamic > 1)
      return Fail("\"shape\" has more than one variable (-1) dimension");
    Shape.push_back(Dim);
  }

  int Port = 0;
  if (const json::Value *P = V.find("port")) {
    if (!P->isNumber() || !P->number().HasInt64 || P->number().Int < INT_MIN ||
        P->number().Int > INT_MAX)
      return Fail("\"port\" must be an integer, got " + P->describe());
    Port = static_cast<int>(P->number().Int);
  }
  Out = TensorSpec(Name->string(), *DT, std::move(Shape), Port);
  return Status::ok();
}

} // namespace detail
} // namespace mlbridge
