//===- tests/cpp/test_support.cpp - support/: shapes, casts, escaping -----===//

#include "mlbridge/json_escape.h"
#include "mlbridge/status.h"
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

TEST(SupportStatus, NamesItsCodeAndKeepsContext) {
  EXPECT_EQ(Status::ok().toString(), "ok");
  Status S(ErrorCode::Timeout, "no reply within 5 ms");
  S.addContext("reading advice");
  EXPECT_EQ(S.toString(), "timeout: reading advice: no reply within 5 ms");
  EXPECT_STREQ(errorCodeName(ErrorCode::PeerClosed), "peer-closed");
  Expected<int> E(Status(ErrorCode::NotFound, "x"));
  EXPECT_FALSE(E);
  EXPECT_EQ(E.valueOr(3), 3);
  EXPECT_EQ(E.status().code(), ErrorCode::NotFound);
}
