//===- core/tensor_spec_json.h - Spec parsing shared with SerDes -*- C++ -*-===//
//
// Internal to the library. TensorSpec::fromJson and the SerDes header
// decoders share one spec reader; headers need two relaxations that a
// standalone spec does not get by default, selected by flags.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_CORE_TENSOR_SPEC_JSON_H
#define MLBRIDGE_CORE_TENSOR_SPEC_JSON_H

#include "mlbridge/tensor_spec.h"
#include "support/json.h"

namespace mlbridge::detail {

enum SpecParseFlags : unsigned {
  /// Accept one -1 dimension (advice specs).
  SpecAllowDynamic = 1u << 0,
  /// Accept 0 dimensions: a header describes the concrete shapes of the
  /// current feature values, and a variable-length vector or a string can
  /// be empty.
  SpecAllowEmpty = 1u << 1,
};

/// Builds a spec from a parsed JSON object (keys in any order, unknown keys
/// ignored, "port" optional). Errors are ErrorCode::Malformed and name the
/// offending key.
Status specFromJSONValue(const json::Value &V, unsigned Flags, TensorSpec &Out);

/// Bytes of S's payload, counting only the fixed dimensions of a dynamic
/// spec (so the size of one "row"). False if the product overflows size_t
/// or a dimension is neither positive nor -1 (0 counts as size 0).
bool specPayloadBytes(const TensorSpec &S, size_t &Bytes);

} // namespace mlbridge::detail

#endif // MLBRIDGE_CORE_TENSOR_SPEC_JSON_H
