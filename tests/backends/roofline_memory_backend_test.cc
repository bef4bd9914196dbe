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

// A scatter-add of 67,108,864 element adds (32,768 rows of 2,048 summed into 4,096 rows) moving
// 268,435,456 B, on a GPU doing 2.5e11 scatter_add_ adds/s and 1.2e11 index_add adds/s:
//   scatter_add_: 4 µs + max(268,435,456 / (3.35e12 · 0.85), 67,108,864 / 2.5e11)
//               = 4 µs + max(94.27 µs, 268.44 µs) = 272.44 µs;
//   index_add:    4 µs + 67,108,864 / 1.2e11 = 563.24 µs;
// the same op as a plain copy (no atomic kernel), or on a GPU without the rates, 98.27 µs.
TEST(RooflineMemoryBackendTest, AtomicScatterAddIsTimedByItsAdds) {
  HardwareProfile hw = testing::compute::H100Like();
  hw.gpu.scatter_add_rate = 2.5e11;
  hw.gpu.index_add_rate = 1.2e11;
  const double adds = 32768.0 * 2048;
  const MemoryOp copy{.bytes = Bytes(2 * adds * 2), .flops = Flops(0)};
  MemoryOp scatter = copy;
  scatter.atomic_kernel = AtomicAddKernel::kScatterAdd;
  scatter.atomic_adds = adds;
  MemoryOp index = scatter;
  index.atomic_kernel = AtomicAddKernel::kIndexAdd;
  RooflineMemoryBackend backend(hw);
  absl::StatusOr<MemoryEstimate> c = backend.Estimate(copy);
  absl::StatusOr<MemoryEstimate> sa = backend.Estimate(scatter);
  absl::StatusOr<MemoryEstimate> ia = backend.Estimate(index);
  absl::StatusOr<MemoryEstimate> unmeasured =
      RooflineMemoryBackend(testing::compute::H100Like()).Estimate(scatter);
  ASSERT_THAT(c, IsOk());
  ASSERT_THAT(sa, IsOk());
  ASSERT_THAT(ia, IsOk());
  ASSERT_THAT(unmeasured, IsOk());
  EXPECT_THAT(c->time.value(), IsNearRel(4e-6 + 4 * adds / (3.35e12 * 0.85), 1e-12));
  EXPECT_THAT(sa->time.value(), IsNearRel(4e-6 + adds / 2.5e11, 1e-12));
  EXPECT_THAT(ia->time.value(), IsNearRel(4e-6 + adds / 1.2e11, 1e-12));
  EXPECT_EQ(sa->bound, Bound::kMemory);
  EXPECT_EQ(sa->clock_scaled_time.value(), 0.0);
  EXPECT_EQ(unmeasured->time, c->time);
  MemoryOp negative = scatter;
  negative.atomic_adds = -1;
  EXPECT_THAT(backend.Estimate(negative),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("atomic adds >= 0")));
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
