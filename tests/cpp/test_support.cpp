//===- tests/cpp/test_support.cpp - support/: shapes, casts, escaping -----===//

#include "mlbridge/dtype.h"
#include "mlbridge/json_escape.h"
#include "support/checked_cast.h"
#include "support/shape_text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

using namespace mlbridge;
using namespace mlbridge::support;

TEST(SupportShapeText, WritesDimsInBrackets) {
  EXPECT_EQ(shapeText(std::vector<int64_t>{}), "[]");
  EXPECT_EQ(shapeText(std::vector<int64_t>{1}), "[1]");
  EXPECT_EQ(shapeText(std::vector<int64_t>{-1, 33}), "[-1,33]");
}

TEST(SupportCheckedCast, RefusesWhatDoesNotFit) {
  EXPECT_TRUE(fitsIn<int8_t>(127));
  EXPECT_FALSE(fitsIn<int8_t>(128));
  EXPECT_TRUE(fitsIn<int8_t>(-128));
  EXPECT_FALSE(fitsIn<int8_t>(-129));
  EXPECT_FALSE(fitsIn<uint64_t>(-1));
  EXPECT_FALSE(fitsIn<int64_t>(UINT64_MAX));
  EXPECT_TRUE(fitsIn<uint64_t>(INT64_MAX));
  EXPECT_EQ(checkedCast<int32_t>(uint64_t(7)), std::optional<int32_t>(7));
  EXPECT_EQ(checkedCast<uint16_t>(int64_t(70000)), std::nullopt);
  EXPECT_EQ(saturatingCast<int>(size_t(1) << 40), INT32_MAX);
  EXPECT_EQ(saturatingCast<int>(-(int64_t(1) << 40)), INT32_MIN);
  EXPECT_EQ(saturatingCast<int>(int64_t(5)), 5);
}

TEST(SupportJsonEscape, EscapesAsLlvmJsonDoes) {
  EXPECT_EQ(jsonEscape("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(jsonEscape("\t\n\r"), "\\t\\n\\r");
  EXPECT_EQ(jsonEscape(std::string("\x01\x1f", 2)), "\\u0001\\u001f");
  EXPECT_EQ(jsonEscape("\x7f\xC3\xA9"), "\x7f\xC3\xA9");
}

TEST(SupportDTypeList, CoversEveryDTypeInOrder) {
  int I = 0;
#define MLBRIDGE_CHECK(E, Ty, Name)                                            \
  EXPECT_EQ(static_cast<int>(DType::E), I++);                                  \
  EXPECT_EQ(dtypeName(DType::E), Name);                                        \
  EXPECT_EQ(dtypeSize(DType::E), sizeof(Ty));
  MLBRIDGE_DTYPES(MLBRIDGE_CHECK)
#undef MLBRIDGE_CHECK
  EXPECT_EQ(I, kNumDTypes);
}
