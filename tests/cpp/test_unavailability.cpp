//===- tests/cpp/test_unavailability.cpp - when remote runners give up ----===//

#include "core/unavailability.h"

#include <gtest/gtest.h>

using namespace mlbridge;
using namespace mlbridge::remote;

namespace {

constexpr Framing kBoth[] = {Framing::ByteStream, Framing::Messages};

TEST(Unavailability, LosingThePeerAlwaysGivesUp) {
  for (Framing F : kBoth)
    for (ErrorCode C : {ErrorCode::InvalidArgument, ErrorCode::Unavailable,
                        ErrorCode::Internal})
      EXPECT_TRUE(makesUnavailable(C, Failure::PeerLost, F));
}

TEST(Unavailability, SilentOrForeignPeersGiveUpOnEveryTransport) {
  for (Framing F : kBoth)
    for (ErrorCode C : {ErrorCode::Timeout, ErrorCode::PeerClosed,
                        ErrorCode::IOError, ErrorCode::Malformed,
                        ErrorCode::NotFound})
      EXPECT_TRUE(makesUnavailable(C, Failure::Exchange, F))
          << errorCodeName(C);
}

TEST(Unavailability, RejectedRequestsKeepTheRunner) {
  for (Framing F : kBoth)
    for (ErrorCode C : {ErrorCode::InvalidArgument, ErrorCode::TypeMismatch,
                        ErrorCode::Unavailable})
      EXPECT_FALSE(makesUnavailable(C, Failure::Exchange, F))
          << errorCodeName(C);
}

TEST(Unavailability, OversizedReplyDesynchronisesOnlyAByteStream) {
  EXPECT_TRUE(makesUnavailable(ErrorCode::TooLarge, Failure::Exchange,
                               Framing::ByteStream));
  EXPECT_FALSE(makesUnavailable(ErrorCode::TooLarge, Failure::Exchange,
                                Framing::Messages));
}

TEST(Unavailability, BadAdviceFailsOneMessageButNotTheStream) {
  EXPECT_FALSE(makesUnavailable(ErrorCode::Malformed, Failure::AdviceContent,
                                Framing::Messages));
  EXPECT_TRUE(makesUnavailable(ErrorCode::Malformed, Failure::AdviceContent,
                               Framing::ByteStream));
}

} // namespace
