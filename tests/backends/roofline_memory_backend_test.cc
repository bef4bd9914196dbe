#include "backends/simulate/roofline_memory_backend.h"

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/compute_hardware.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

// 2 launches · 4.5 µs + 1 GB / (5.3 TB/s · 0.8).
TEST(RooflineMemoryBackendTest, MemoryBoundTimeIsLaunchesPlusBytesOverBandwidth) {
  RooflineMemoryBackend backend(testing::compute::Mi300xLike());
  absl::StatusOr<MemoryEstimate> e =
      backend.Estimate({.bytes = Gigabytes(1), .flops = Flops(1e6), .launches = 2});
  ASSERT_THAT(e, IsOk());
  EXPECT_THAT(e->time.value(), IsNearRel(2 * 4.5e-6 + 1e9 / (5.3e12 * 0.8), 1e-12));
  EXPECT_EQ(e->bound, Bound::kMemory);
  EXPECT_EQ(e->clock_scaled_time.value(), 0.0);
}

// Vector-bound: 1e13 FLOPs / (304 CUs · 256 FLOPs/clk · 1.207 GHz) + 4.5 µs.
TEST(RooflineMemoryBackendTest, VectorFlopBoundTimeScalesWithTheClock) {
  RooflineMemoryBackend backend(testing::compute::Mi300xLike());
  absl::StatusOr<MemoryEstimate> e =
      backend.Estimate({.bytes = Megabytes(1), .flops = Flops(1e13), .launches = 1});
  ASSERT_THAT(e, IsOk());
  const double vector_s = 1e13 / (304 * 256 * 1.207e9);
  EXPECT_THAT(e->time.value(), IsNearRel(4.5e-6 + vector_s, 1e-12));
  EXPECT_EQ(e->bound, Bound::kCompute);
  EXPECT_THAT(e->clock_scaled_time.value(), IsNearRel(vector_s, 1e-12));
}

TEST(RooflineMemoryBackendTest, HalvingTheClockLeavesAMemoryBoundOpUnchanged) {
  HardwareProfile hw = testing::compute::Mi300xLike();
  HardwareProfile slow = hw;
  slow.gpu.sustained_clock = hw.gpu.sustained_clock * 0.5;
  const MemoryOp op{.bytes = Gigabytes(4), .flops = Flops(1e9), .launches = 3};
  absl::StatusOr<MemoryEstimate> fast_e = RooflineMemoryBackend(hw).Estimate(op);
  absl::StatusOr<MemoryEstimate> slow_e = RooflineMemoryBackend(slow).Estimate(op);
  ASSERT_THAT(fast_e, IsOk());
  ASSERT_THAT(slow_e, IsOk());
  EXPECT_EQ(fast_e->time, slow_e->time);
}

TEST(RooflineMemoryBackendTest, MoreBandwidthIsNeverSlower) {
  HardwareProfile hw = testing::compute::H100Like();
  HardwareProfile fast = hw;
  fast.gpu.hbm_bandwidth = hw.gpu.hbm_bandwidth * 1.5;
  const MemoryOp op{.bytes = Megabytes(300), .flops = Flops(0), .launches = 1};
  absl::StatusOr<MemoryEstimate> a = RooflineMemoryBackend(hw).Estimate(op);
  absl::StatusOr<MemoryEstimate> b = RooflineMemoryBackend(fast).Estimate(op);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_LT(b->time, a->time);
}

TEST(RooflineMemoryBackendTest, NoWorkIsLaunchLatencyOnly) {
  RooflineMemoryBackend backend(testing::compute::H100Like());
  absl::StatusOr<MemoryEstimate> e = backend.Estimate({.bytes = Bytes(0), .flops = Flops(0), .launches = 5});
  ASSERT_THAT(e, IsOk());
  EXPECT_THAT(e->time.value(), IsNearRel(5 * 4e-6, 1e-12));
  EXPECT_EQ(e->bound, Bound::kLatency);
}

TEST(RooflineMemoryBackendTest, RejectsNegativeSizesAndNoLaunches) {
  RooflineMemoryBackend backend(testing::compute::H100Like());
  EXPECT_THAT(backend.Estimate({.bytes = Bytes(-1), .flops = Flops(0), .launches = 1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bytes >= 0")));
  EXPECT_THAT(backend.Estimate({.bytes = Bytes(0), .flops = Flops(-1), .launches = 1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("flops >= 0")));
  EXPECT_THAT(backend.Estimate({.bytes = Bytes(1), .flops = Flops(0), .launches = 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("launches >= 1")));
}

TEST(RooflineMemoryBackendTest, MemoisedResultEqualsColdResult) {
  RooflineMemoryBackend backend(testing::compute::H100Like());
  const MemoryOp op{.bytes = Megabytes(12), .flops = Flops(3e6), .launches = 2};
  absl::StatusOr<MemoryEstimate> a = backend.Estimate(op);
  absl::StatusOr<MemoryEstimate> b = backend.Estimate(op);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(a->time, b->time);
  EXPECT_EQ(a->bound, b->bound);
}

}  // namespace
}  // namespace projector
