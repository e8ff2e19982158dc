//===- tf_reference.h - TensorFlow's outputs for the TF-AOT tests -*- C++ -*-===//
//
// Reads the NAME.ref files models/tf/make_models.py writes next to each
// SavedModel: random inputs and TensorFlow's own outputs for them.
//   case
//   input|output NAME TYPE DIMS VALUES...     (DIMS like 1,8)
//   end
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_TESTS_TF_REFERENCE_H
#define MLBRIDGE_TESTS_TF_REFERENCE_H

#include "mlbridge/tensor_value.h"

#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace tftest {

struct Tensor {
  std::string Type;            // "float", "int64_t", ...
  std::vector<int64_t> Dims;
  std::vector<double> Values;  // exact for float32 and for |int| < 2^53
};

struct Case {
  std::map<std::string, Tensor> Inputs, Outputs;
};

inline std::vector<Case> readReference(const std::string &Path) {
  std::ifstream In(Path);
  std::vector<Case> Cases;
  std::string Line;
  while (std::getline(In, Line)) {
    std::istringstream L(Line);
    std::string Kind;
    L >> Kind;
    if (Kind == "case") {
      Cases.emplace_back();
    } else if (Kind == "input" || Kind == "output") {
      std::string Name, Dims;
      Tensor T;
      L >> Name >> T.Type >> Dims;
      std::istringstream D(Dims);
      for (std::string Dim; std::getline(D, Dim, ',');)
        T.Dims.push_back(std::stoll(Dim));
      for (double V; L >> V;)
        T.Values.push_back(V);
      (Kind == "input" ? Cases.back().Inputs : Cases.back().Outputs)[Name] =
          std::move(T);
    }
  }
  return Cases;
}

template <typename T> std::vector<T> as(const Tensor &X) {
  return std::vector<T>(X.Values.begin(), X.Values.end());
}

/// Sets every input of C as a feature of R (typed as in the file).
template <typename Runner> mlbridge::Status setInputs(Runner &R, const Case &C) {
  for (const auto &[Name, T] : C.Inputs) {
    mlbridge::Status S;
    if (T.Type == "float")
      S = R.setFeature(Name, as<float>(T));
    else if (T.Type == "double")
      S = R.setFeature(Name, as<double>(T));
    else if (T.Type == "int64_t")
      S = R.setFeature(Name, as<int64_t>(T));
    else if (T.Type == "int32_t")
      S = R.setFeature(Name, as<int32_t>(T));
    else
      S = mlbridge::Status(mlbridge::ErrorCode::InvalidArgument,
                           "reference type " + T.Type);
    if (!S.isOk())
      return S;
  }
  return mlbridge::Status::ok();
}

/// Values of a tensor as doubles.
inline std::vector<double> valuesOf(const mlbridge::TensorValue &V) {
  std::vector<double> Out;
  const size_t N = V.elementCount();
  for (size_t I = 0; I < N; ++I) {
    switch (V.type()) {
    case mlbridge::DType::Float: Out.push_back(V.dataAs<float>()[I]); break;
    case mlbridge::DType::Double: Out.push_back(V.dataAs<double>()[I]); break;
    case mlbridge::DType::Int64:
      Out.push_back(double(V.dataAs<int64_t>()[I]));
      break;
    case mlbridge::DType::Int32:
      Out.push_back(double(V.dataAs<int32_t>()[I]));
      break;
    default: Out.push_back(std::numeric_limits<double>::quiet_NaN()); break;
    }
  }
  return Out;
}

} // namespace tftest

#endif // MLBRIDGE_TESTS_TF_REFERENCE_H
