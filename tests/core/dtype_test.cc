#include "core/dtype.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

TEST(DTypeTest, RoundTripsEveryName) {
  for (DType d : kAllDTypes) {
    auto parsed = ParseDType(DTypeName(d));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, d);
  }
}

TEST(DTypeTest, UnknownNameListsValid) {
  EXPECT_THAT(ParseDType("bf61"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("valid: fp32, tf32, bf16")));
}

TEST(DTypeTest, ElementSizes) {
  EXPECT_EQ(BytesPerElement(DType::kBf16), 2.0);
  EXPECT_EQ(BytesPerElement(DType::kFp8), 1.0);
  EXPECT_EQ(BytesPerElement(DType::kFp4), 0.5);
}

}  // namespace
}  // namespace projector
