//===- onnx_test_util.h - Shared helpers of the ONNX runner tests ---------===//
#ifndef MLBRIDGE_TESTS_ONNX_TEST_UTIL_H
#define MLBRIDGE_TESTS_ONNX_TEST_UTIL_H

#include "reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#ifndef MLBRIDGE_MODELS_DIR
#error "MLBRIDGE_MODELS_DIR must name the models/ directory"
#endif

namespace onnxtest {

inline std::string model(const std::string &File) {
  return std::string(MLBRIDGE_MODELS_DIR) + "/" + File;
}

/// The committed reference cases of one model (fails the test if absent).
inline std::vector<reftest::Case> casesOf(const std::string &File) {
  std::string Error;
  std::vector<reftest::ModelCases> All =
      reftest::load(model("reference.txt"), Error);
  EXPECT_EQ(Error, "");
  for (reftest::ModelCases &M : All)
    if (M.File == File)
      return std::move(M.Cases);
  ADD_FAILURE() << "no reference cases for " << File;
  return {};
}

/// Compares Got with Want: same dtype and shape; floating values within
/// 1e-5 (absolute, or relative for large values); integers exactly.
inline ::testing::AssertionResult sameTensor(const mlbridge::TensorValue &Got,
                                             const mlbridge::TensorValue &Want,
                                             double Tolerance = 1e-5) {
  if (Got.type() != Want.type() || Got.spec().shape() != Want.spec().shape())
    return ::testing::AssertionFailure()
           << "got " << Got.spec().describe() << ", want "
           << Want.spec().describe();
  const size_t N = Want.elementCount();
  for (size_t K = 0; K < N; ++K) {
    double G = 0, W = 0;
    switch (Want.type()) {
    case mlbridge::DType::Float:
      G = Got.dataAs<float>()[K];
      W = Want.dataAs<float>()[K];
      break;
    case mlbridge::DType::Double:
      G = Got.dataAs<double>()[K];
      W = Want.dataAs<double>()[K];
      break;
    case mlbridge::DType::Int32:
      G = Got.dataAs<int32_t>()[K];
      W = Want.dataAs<int32_t>()[K];
      break;
    case mlbridge::DType::Int64:
      G = static_cast<double>(Got.dataAs<int64_t>()[K]);
      W = static_cast<double>(Want.dataAs<int64_t>()[K]);
      break;
    case mlbridge::DType::Bool:
      G = static_cast<const unsigned char *>(Got.data())[K];
      W = static_cast<const unsigned char *>(Want.data())[K];
      break;
    default:
      return ::testing::AssertionFailure() << "unexpected dtype";
    }
    const double Tol = mlbridge::isFloating(Want.type())
                           ? Tolerance * std::max(1.0, std::fabs(W))
                           : 0.0;
    if (!(std::fabs(G - W) <= Tol))
      return ::testing::AssertionFailure()
             << Want.spec().name() << "[" << K << "]: got " << G << ", want "
             << W;
  }
  return ::testing::AssertionSuccess();
}

} // namespace onnxtest

#endif // MLBRIDGE_TESTS_ONNX_TEST_UTIL_H
