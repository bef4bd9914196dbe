#include "backends/simulate/roofline_attention_backend.h"

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

// Forward, compute-bound: 4·B·H·S²·D (non-causal) / (132 · 4096 · 1.83 GHz · 0.68) + 4 µs.
TEST(RooflineAttentionBackendTest, ComputeBoundForwardIsFlopsOverAchievablePeak) {
  RooflineAttentionBackend backend(testing::compute::H100Like());
  const AttentionShape s{.batch = 1, .num_q_heads = 16, .num_kv_heads = 16, .seq_q = 16384,
                         .seq_kv = 16384, .qk_head_dim = 128, .v_head_dim = 128, .causal = false};
  absl::StatusOr<AttentionEstimate> e = backend.Estimate(s, AttentionPass::kForward);
  ASSERT_THAT(e, IsOk());
  const double flops = 4.0 * 16 * 16384.0 * 16384.0 * 128;
  EXPECT_THAT(e->time.value(), IsNearRel(flops / (132 * 4096 * 1.83e9 * 0.68) + 4e-6, 1e-9));
  EXPECT_EQ(e->bound, Bound::kCompute);
}

// Backward, compute-bound: 2.5× the forward FLOPs at the backward efficiency + 3 launches.
TEST(RooflineAttentionBackendTest, ComputeBoundBackwardUsesBackwardEfficiency) {
  RooflineAttentionBackend backend(testing::compute::H100Like());
  const AttentionShape s{.batch = 1, .num_q_heads = 16, .num_kv_heads = 16, .seq_q = 16384,
                         .seq_kv = 16384, .qk_head_dim = 128, .v_head_dim = 128, .causal = true};
  absl::StatusOr<AttentionEstimate> e = backend.Estimate(s, AttentionPass::kBackward);
  ASSERT_THAT(e, IsOk());
  const double flops = 2.5 * 0.5 * 4.0 * 16 * 16384.0 * 16384.0 * 128;
  EXPECT_THAT(e->time.value(), IsNearRel(flops / (132 * 4096 * 1.83e9 * 0.60) + 3 * 4e-6, 1e-9));
}

// Decode: one query row per sequence; K and V of 8 KV heads dominate the bytes:
// (Q + K + V + O)·2 bytes / (3.35 TB/s · 0.85) + 4 µs.
TEST(RooflineAttentionBackendTest, DecodeIsMemoryBound) {
  RooflineAttentionBackend backend(testing::compute::H100Like());
  const AttentionShape s{.batch = 32, .num_q_heads = 64, .num_kv_heads = 8, .seq_q = 1,
                         .seq_kv = 8192, .qk_head_dim = 128, .v_head_dim = 128, .causal = false};
  absl::StatusOr<AttentionEstimate> e = backend.Estimate(s, AttentionPass::kForward);
  ASSERT_THAT(e, IsOk());
  const double bytes = (32.0 * 64 * 128 + 32.0 * 8 * 8192 * 256 + 32.0 * 64 * 128) * 2;
  EXPECT_THAT(e->time.value(), IsNearRel(bytes / (3.35e12 * 0.85) + 4e-6, 1e-9));
  EXPECT_EQ(e->bound, Bound::kMemory);
}

TEST(RooflineAttentionBackendTest, RejectsBadShapes) {
  RooflineAttentionBackend backend(testing::compute::H100Like());
  AttentionShape s{.batch = 1, .num_q_heads = 6, .num_kv_heads = 4, .seq_q = 8, .seq_kv = 8,
                   .qk_head_dim = 64, .v_head_dim = 64};
  EXPECT_THAT(backend.Estimate(s, AttentionPass::kForward),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("multiple")));
  s.num_kv_heads = 6;
  s.dtype = DType::kFp4;
  EXPECT_THAT(backend.Estimate(s, AttentionPass::kForward),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("h100 has no fp4 matrix rate")));
}

}  // namespace
}  // namespace projector
