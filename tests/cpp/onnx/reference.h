//===- reference.h - models/reference.txt: inputs and expected outputs ----===//
//
// The text format tools/models/export.py writes (and mlbridge-onnx-eval
// reads and writes):
//   model FILE
//   case
//   input|output NAME TYPE DIM,DIM,... VALUE VALUE ...
//   end
// TYPE is an LLVM dtype name (float, double, int32_t, int64_t, bool);
// floating values are printed exactly (shortest round-trip).
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_TESTS_ONNX_REFERENCE_H
#define MLBRIDGE_TESTS_ONNX_REFERENCE_H

#include "mlbridge/tensor_value.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace reftest {

struct Case {
  std::vector<mlbridge::TensorValue> Inputs, Outputs;
};
struct ModelCases {
  std::string File;
  std::vector<Case> Cases;
};

/// Parses one "NAME TYPE DIMS VALUES..." tail into a TensorValue.
inline bool parseTensor(std::istringstream &In, mlbridge::TensorValue &Out,
                        std::string &Error) {
  std::string Name, Type, Dims;
  In >> Name >> Type >> Dims;
  std::optional<mlbridge::DType> T = mlbridge::dtypeFromName(Type);
  if (!T) {
    Error = "unknown type " + Type;
    return false;
  }
  std::vector<int64_t> Shape;
  std::stringstream DS(Dims);
  for (std::string D; std::getline(DS, D, ',');)
    Shape.push_back(std::stoll(D));
  Out = mlbridge::TensorValue(mlbridge::TensorSpec(Name, *T, Shape));
  const size_t N = Out.elementCount();
  for (size_t K = 0; K < N; ++K) {
    std::string V;
    if (!(In >> V)) {
      Error = Name + ": too few values";
      return false;
    }
    void *P = static_cast<unsigned char *>(Out.data()) + K * mlbridge::dtypeSize(*T);
    switch (*T) {
    case mlbridge::DType::Float: {
      float F = std::strtof(V.c_str(), nullptr);
      std::memcpy(P, &F, 4);
      break;
    }
    case mlbridge::DType::Double: {
      double D = std::strtod(V.c_str(), nullptr);
      std::memcpy(P, &D, 8);
      break;
    }
    case mlbridge::DType::Int32: {
      int32_t I = static_cast<int32_t>(std::stol(V));
      std::memcpy(P, &I, 4);
      break;
    }
    case mlbridge::DType::Int64: {
      int64_t I = std::stoll(V);
      std::memcpy(P, &I, 8);
      break;
    }
    case mlbridge::DType::Bool: {
      unsigned char B = V == "1";
      std::memcpy(P, &B, 1);
      break;
    }
    default:
      Error = "unsupported type " + Type;
      return false;
    }
  }
  return true;
}

/// Reads every model's cases from a stream; Error set on failure.
inline std::vector<ModelCases> parse(std::istream &In, std::string &Error) {
  std::vector<ModelCases> Models;
  std::string Line;
  while (std::getline(In, Line)) {
    if (Line.empty() || Line[0] == '#')
      continue;
    std::istringstream L(Line);
    std::string Kind;
    L >> Kind;
    if (Kind == "model") {
      Models.emplace_back();
      L >> Models.back().File;
    } else if (Kind == "case") {
      if (Models.empty()) {
        Error = "case before model";
        return {};
      }
      Models.back().Cases.emplace_back();
    } else if (Kind == "input" || Kind == "output") {
      if (Models.empty() || Models.back().Cases.empty()) {
        Error = "tensor outside a case";
        return {};
      }
      Case &C = Models.back().Cases.back();
      mlbridge::TensorValue V;
      if (!parseTensor(L, V, Error))
        return {};
      (Kind == "input" ? C.Inputs : C.Outputs).push_back(std::move(V));
    } else if (Kind != "end") {
      Error = "unknown line: " + Line;
      return {};
    }
  }
  return Models;
}

inline std::vector<ModelCases> load(const std::string &Path,
                                    std::string &Error) {
  std::ifstream In(Path);
  if (!In) {
    Error = "cannot open " + Path;
    return {};
  }
  return parse(In, Error);
}

/// "output NAME TYPE DIMS VALUES" with exact floating-point text.
inline std::string format(const char *Kind, const mlbridge::TensorValue &V) {
  std::string S = std::string(Kind) + " " + V.spec().name() + " " +
                  std::string(mlbridge::dtypeName(V.type())) + " ";
  for (size_t K = 0; K < V.spec().shape().size(); ++K)
    S += (K ? "," : "") + std::to_string(V.spec().shape()[K]);
  char Buf[40];
  const auto *P = static_cast<const unsigned char *>(V.data());
  for (size_t K = 0; K < V.elementCount(); ++K) {
    switch (V.type()) {
    case mlbridge::DType::Float: {
      float F;
      std::memcpy(&F, P + 4 * K, 4);
      std::snprintf(Buf, sizeof Buf, "%.9g", static_cast<double>(F));
      break;
    }
    case mlbridge::DType::Double: {
      double D;
      std::memcpy(&D, P + 8 * K, 8);
      std::snprintf(Buf, sizeof Buf, "%.17g", D);
      break;
    }
    case mlbridge::DType::Int32: {
      int32_t I;
      std::memcpy(&I, P + 4 * K, 4);
      std::snprintf(Buf, sizeof Buf, "%d", I);
      break;
    }
    case mlbridge::DType::Int64: {
      int64_t I;
      std::memcpy(&I, P + 8 * K, 8);
      std::snprintf(Buf, sizeof Buf, "%lld", static_cast<long long>(I));
      break;
    }
    case mlbridge::DType::Bool:
      std::snprintf(Buf, sizeof Buf, "%d", P[K] ? 1 : 0);
      break;
    default:
      std::snprintf(Buf, sizeof Buf, "?");
    }
    S += " ";
    S += Buf;
  }
  return S;
}

} // namespace reftest

#endif // MLBRIDGE_TESTS_ONNX_REFERENCE_H
