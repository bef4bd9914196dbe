#include "core/statistics.h"

#include <vector>

#include "gtest/gtest.h"

namespace projector {
namespace {

// numpy.percentile([1, 2, 3, 4, 5], q): 50 -> 3, 90 -> rank 3.6 -> 4.6, 99 -> rank 3.96 -> 4.96.
TEST(StatisticsTest, PercentilesInterpolateBetweenClosestRanks) {
  const std::vector<double> v = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(PercentileOfSorted(v, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(PercentileOfSorted(v, 0.9), 4.6);
  EXPECT_DOUBLE_EQ(PercentileOfSorted(v, 0.99), 4.96);
  EXPECT_DOUBLE_EQ(PercentileOfSorted(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(PercentileOfSorted(v, 1.0), 5.0);
  EXPECT_DOUBLE_EQ(PercentileOfSorted({}, 0.5), 0.0);
}

// The median of an even count is the mean of the middle two; the input need not be sorted.
TEST(StatisticsTest, MedianSortsAndAveragesTheMiddlePair) {
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median({7, 1, 5}), 5.0);
  EXPECT_DOUBLE_EQ(Median({}), 0.0);
}

}  // namespace
}  // namespace projector
