#include "backends/simulate/roofline_gemm_backend.h"

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

// Compute-bound: 2·M·N·K / (132 SMs · 4096 FLOPs/clk · 1.83 GHz · 0.83) + 4 µs launch.
TEST(RooflineGemmBackendTest, ComputeBoundTimeIsFlopsOverAchievablePeak) {
  RooflineGemmBackend backend(testing::compute::H100Like());
  absl::StatusOr<GemmEstimate> e = backend.Estimate({.m = 8192, .n = 8192, .k = 8192});
  ASSERT_THAT(e, IsOk());
  const double expected = 2.0 * 8192 * 8192 * 8192 / (132 * 4096 * 1.83e9 * 0.83) + 4e-6;
  EXPECT_THAT(e->time.value(), IsNearRel(expected, 1e-9));
  EXPECT_EQ(e->bound, Bound::kCompute);
  EXPECT_THAT(e->clock_scaled_time.value(), IsNearRel(expected - 4e-6, 1e-9));
}

// Memory-bound: ((m·k + k·n) + m·n)·2 bytes / (3.35 TB/s · 0.85) + 4 µs launch.
TEST(RooflineGemmBackendTest, MemoryBoundTimeIsBytesOverAchievableBandwidth) {
  RooflineGemmBackend backend(testing::compute::H100Like());
  absl::StatusOr<GemmEstimate> e = backend.Estimate({.m = 1, .n = 16384, .k = 16384});
  ASSERT_THAT(e, IsOk());
  const double bytes = (1.0 * 16384 + 16384.0 * 16384 + 1.0 * 16384) * 2;
  EXPECT_THAT(e->time.value(), IsNearRel(bytes / (3.35e12 * 0.85) + 4e-6, 1e-9));
  EXPECT_EQ(e->bound, Bound::kMemory);
  EXPECT_EQ(e->clock_scaled_time.value(), 0.0);
}

// Block-scaled FP8 at fp8_block_scaled_gemm_ratio 0.5: the achievable rate halves, so the
// compute-bound time less the 4 µs launch doubles exactly; bf16 ignores the flag.
TEST(RooflineGemmBackendTest, BlockScaledFp8HalvesTheRateAtRatioOneHalf) {
  RooflineGemmBackend backend(testing::compute::H100LikeBlockScaledAtHalfRate());
  absl::StatusOr<GemmEstimate> t = backend.Estimate(testing::compute::Fp8Square8192(false));
  absl::StatusOr<GemmEstimate> b = backend.Estimate(testing::compute::Fp8Square8192(true));
  ASSERT_THAT(t, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(b->bound, Bound::kCompute);
  EXPECT_THAT(b->time.value() - 4e-6, IsNearRel(2.0 * (t->time.value() - 4e-6), 1e-9));
  GemmShape bf16_block{.m = 8192, .n = 8192, .k = 8192};
  bf16_block.block_scaled = true;
  EXPECT_EQ(backend.Estimate(bf16_block)->time,
            backend.Estimate(GemmShape{.m = 8192, .n = 8192, .k = 8192})->time);
}

TEST(RooflineGemmBackendTest, BatchMultipliesTime) {
  RooflineGemmBackend backend(testing::compute::Mi300xLike());
  absl::StatusOr<GemmEstimate> one = backend.Estimate({.m = 4096, .n = 4096, .k = 4096});
  absl::StatusOr<GemmEstimate> four = backend.Estimate({.m = 4096, .n = 4096, .k = 4096, .batch = 4});
  ASSERT_THAT(one, IsOk());
  ASSERT_THAT(four, IsOk());
  const double launch = 4.5e-6;
  EXPECT_THAT(four->time.value() - launch, IsNearRel(4 * (one->time.value() - launch), 1e-9));
  // The same batch as four kernels: three more launches.
  absl::StatusOr<GemmEstimate> four_kernels =
      backend.Estimate({.m = 4096, .n = 4096, .k = 4096, .batch = 4, .kernels = 4});
  ASSERT_THAT(four_kernels, IsOk());
  EXPECT_THAT(four_kernels->time.value(), IsNearRel(four->time.value() + 3 * launch, 1e-12));
}

TEST(RooflineGemmBackendTest, ErrorsForBadShapesAndDtypes) {
  RooflineGemmBackend backend(testing::compute::H100Like());
  EXPECT_THAT(backend.Estimate({.m = -1, .n = 1, .k = 1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("positive")));
  EXPECT_THAT(backend.Estimate({.m = 1, .n = 1, .k = 1, .dtype = DType::kFp4}),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("h100 has no fp4 matrix rate")));
}

}  // namespace
}  // namespace projector
