#include "core/units.h"

#include "gtest/gtest.h"

namespace projector {
namespace {

TEST(UnitsTest, BytesOverBandwidthIsSeconds) {
  // 1 GB over 100 GB/s = 10 ms.
  Seconds t = Gigabytes(1) / GigabytesPerSecond(100);
  EXPECT_NEAR(t.value(), 0.01, 1e-15);
}

TEST(UnitsTest, FlopsOverRateIsSeconds) {
  // 2·8192³ FLOPs at 989 TFLOP/s: 1.0995e12 / 9.89e14 = 1.1117 ms.
  Flops f(2.0 * 8192.0 * 8192.0 * 8192.0);
  EXPECT_NEAR(ToMilliseconds(f / TeraFlopsPerSecond(989)), 1.1117, 1e-4);
}

TEST(UnitsTest, GbAndGibAreDistinct) {
  EXPECT_DOUBLE_EQ(Gigabytes(1).value(), 1e9);
  EXPECT_DOUBLE_EQ(Gibibytes(1).value(), 1073741824.0);
  EXPECT_DOUBLE_EQ(GigabitsPerSecond(400).value(), 50e9);
}

TEST(UnitsTest, ArithmeticAndComparison) {
  using namespace unit_literals;
  Seconds a = 5.0_us;
  Seconds b = 2.0_ms;
  EXPECT_LT(a, b);
  EXPECT_NEAR((a + b).value(), 2.005e-3, 1e-15);
  EXPECT_NEAR((b / a), 400.0, 1e-9);
  EXPECT_NEAR((2.0 * a).value(), 10e-6, 1e-18);
}

}  // namespace
}  // namespace projector
