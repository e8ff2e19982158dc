// What the C API tests check of a runner's inputs through the generic
// introspection calls of mlbridge/c/mlbridge.h.
#pragma once

#include "mlbridge/c/mlbridge.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace capitest {

// The runner has exactly one input, `Name` of `Type` and `Shape`, and
// asking for a second one is an invalid argument.
inline void expectOnlyInput(mlb_runner *R, const char *Name, mlb_dtype Type,
                            const std::vector<int64_t> &Shape) {
  ASSERT_EQ(mlb_runner_input_count(R), 1u);
  const char *Got = nullptr;
  mlb_dtype GotType = Type == MLB_BOOL ? MLB_INT8 : MLB_BOOL; // not the answer
  const int64_t *GotShape = nullptr;
  size_t Rank = 0;
  ASSERT_EQ(mlb_runner_input_info(R, 0, &Got, &GotType, &GotShape, &Rank), MLB_OK);
  EXPECT_STREQ(Got, Name);
  EXPECT_EQ(GotType, Type);
  ASSERT_EQ(Rank, Shape.size());
  EXPECT_EQ(std::vector<int64_t>(GotShape, GotShape + Rank), Shape);
  EXPECT_EQ(mlb_runner_input_info(R, 1, &Got, nullptr, nullptr, nullptr),
            MLB_ERR_INVALID_ARGUMENT);
}

} // namespace capitest
