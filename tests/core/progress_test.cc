#include "core/progress.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace projector {
namespace {

using ::testing::HasSubstr;

// 300 of 1,200 after 3 s: a quarter of the bar, 100/s, 9 s for the 900 left.
TEST(ProgressTest, LineHasCountRateAndTimeLeft) {
  const std::string line = ProgressLine("search", 300, 1200, 3.0);
  EXPECT_THAT(line,
              HasSubstr("search [######..................] 300/1,200 (25%) 100.0/s, 9 s left"));
  EXPECT_THAT(ProgressLine("x", 5, 5, 1.0), HasSubstr("5/5 (100%) 5.0/s"));
  EXPECT_THAT(ProgressLine("x", 5, 5, 1.0), ::testing::Not(HasSubstr("left")));
}

// --quiet wins over --progress; a bar that is off or young draws nothing.
TEST(ProgressTest, QuietAndShortRunsDrawNothing) {
  EXPECT_FALSE(ProgressWanted(true, true));
  EXPECT_TRUE(ProgressWanted(false, true));
  std::ostringstream out;
  ProgressBar off(out, "x", false);
  off.Update(1, 2);
  off.Finish();
  ProgressBar young(out, "x", true);
  young.Update(1, 2);  // well under a second in
  young.Finish();
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace projector
