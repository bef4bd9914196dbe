#include "core/number_format.h"

#include "gtest/gtest.h"

namespace projector {
namespace {

TEST(GroupThousandsTest, CommaEveryThreeDigitsFromTheRight) {
  EXPECT_EQ(GroupThousands(""), "");
  EXPECT_EQ(GroupThousands("7"), "7");
  EXPECT_EQ(GroupThousands("999"), "999");
  EXPECT_EQ(GroupThousands("1000"), "1,000");
  EXPECT_EQ(GroupThousands("1234567"), "1,234,567");
}

TEST(FormatCountTest, SignStaysOutsideTheGroups) {
  EXPECT_EQ(FormatCount(0), "0");
  EXPECT_EQ(FormatCount(4608), "4,608");
  EXPECT_EQ(FormatCount(-1000), "-1,000");
  EXPECT_EQ(FormatCount(-999), "-999");
  EXPECT_EQ(FormatCount(int64_t{9223372036854775807}), "9,223,372,036,854,775,807");
}

}  // namespace
}  // namespace projector
