#include "studies/estimate.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/compute_hardware.h"
#include "tests/testing/fake_backends.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::FakeAttentionBackend;
using ::projector::testing::FakeGemmBackend;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;

TEST(EstimateGemmOpTest, AchievedRateIsFlopsOverTime) {
  // The fake times 1 ps per FLOP, so any shape runs at 1 / 1e-12 = 1e12 FLOP/s = 1 TFLOP/s.
  const FakeGemmBackend backend(Seconds(1e-12));
  const HardwareProfile hw = testing::compute::H100Like();
  const GemmShape shape{.m = 4096, .n = 2048, .k = 1024};
  absl::StatusOr<GemmOpEstimate> e = EstimateGemmOp(hw, backend, shape);
  ASSERT_THAT(e, IsOk());
  // 2·m·n·k = 2·4096·2048·1024 = 1.718e10 FLOPs at 1 ps each.
  EXPECT_NEAR(e->estimate.time.value(), 2.0 * 4096 * 2048 * 1024 * 1e-12, 1e-15);
  EXPECT_NEAR(e->tflops, 1.0, 1e-9);
  EXPECT_EQ(e->context.gpu, hw.name);
  EXPECT_EQ(e->context.backend, "fake_gemm");
  EXPECT_NEAR(e->context.clock_mhz, ToMegahertz(hw.gpu.sustained_clock), 1e-9);
}

TEST(EstimateGemmOpTest, BackendErrorsPassThrough) {
  const FakeGemmBackend backend;
  EXPECT_THAT(EstimateGemmOp(testing::compute::H100Like(), backend, GemmShape{.m = 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("non-positive")));
}

TEST(EstimateAttentionOpTest, BackwardPassIsTimedAsAsked) {
  const FakeAttentionBackend backend(Seconds(1e-12));
  const AttentionShape shape{.batch = 1, .num_q_heads = 8, .num_kv_heads = 8, .seq_q = 1024,
                             .seq_kv = 1024, .qk_head_dim = 128, .v_head_dim = 128};
  absl::StatusOr<AttentionOpEstimate> fwd =
      EstimateAttentionOp(testing::compute::H100Like(), backend, shape, AttentionPass::kForward);
  absl::StatusOr<AttentionOpEstimate> bwd =
      EstimateAttentionOp(testing::compute::H100Like(), backend, shape, AttentionPass::kBackward);
  ASSERT_THAT(fwd, IsOk());
  ASSERT_THAT(bwd, IsOk());
  EXPECT_EQ(bwd->pass, AttentionPass::kBackward);
  // Time follows the pass's FLOPs (AttentionFlops), at the same 1 TFLOP/s either way.
  EXPECT_NEAR(bwd->estimate.time / fwd->estimate.time,
              AttentionFlops(shape, AttentionPass::kBackward) /
                  AttentionFlops(shape, AttentionPass::kForward),
              1e-9);
  EXPECT_NEAR(fwd->tflops, 1.0, 1e-9);
}

}  // namespace
}  // namespace projector
