// GPU tests of the measure runner (ctest label `gpu`): they time real kernels on the local
// device with whichever runtime the build has, and are reported as skipped when the build has
// no GPU runtime or the machine no device. Bounds are physical plausibility, not performance
// targets, so they hold for cuBLASLt on an H100 as for the plain HIP kernels on an MI250.
#include <string>
#include <vector>

#include "backends/measure/measure_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

// Measures `ops` with 2 warm-up and 5 timed runs; skips the test without a GPU.
#define MEASURE_OR_SKIP(result, ops)                                                     \
  absl::StatusOr<MeasureResult> result##_or =                                            \
      MeasureOps((ops), MeasureOptions{.warmup = 2, .repetitions = 5});                  \
  if (result##_or.status().code() == absl::StatusCode::kFailedPrecondition) {            \
    GTEST_SKIP() << result##_or.status().message();                                      \
  }                                                                                      \
  ASSERT_TRUE(result##_or.ok()) << result##_or.status();                                 \
  const MeasureResult& result = *result##_or

ProfiledOp Gemm(int64_t m, int64_t n, int64_t k) {
  ProfiledOp op;
  op.gemm = GemmShape{.m = m, .n = n, .k = k, .dtype = DType::kBf16};
  return op;
}

ProfiledOp Attention(AttentionPass pass) {
  ProfiledOp op;
  op.kind = ProfiledOpKind::kAttention;
  op.attention = AttentionShape{.batch = 1, .num_q_heads = 8, .num_kv_heads = 8, .seq_q = 2048,
                                .seq_kv = 2048, .qk_head_dim = 128, .v_head_dim = 128,
                                .causal = true};
  op.pass = pass;
  return op;
}

double MedianUs(const ProfiledOp& op) { return ToMicroseconds(op.time.median); }

TEST(MeasureRunnerGpuTest, GemmTimeIsPhysicallyPlausibleAndSpreadIsOrdered) {
  MEASURE_OR_SKIP(r, std::vector<ProfiledOp>{Gemm(4096, 4096, 4096)});
  ASSERT_THAT(r.ops, SizeIs(1));
  const TimingStats& t = r.ops[0].time;
  EXPECT_EQ(t.repetitions, 5);
  EXPECT_LE(t.min, t.median);
  EXPECT_LE(t.median, t.max);
  // 2·4096³ = 137.4 GFLOP: no GPU runs dense bf16 above 5 PFLOP/s (B200: 2.25), and anything
  // slower than 0.5 TFLOP/s means the kernel did not run as a GEMM.
  const double tflops = 2.0 * 4096.0 * 4096.0 * 4096.0 / t.median.value() * 1e-12;
  EXPECT_GT(tflops, 0.5);
  EXPECT_LT(tflops, 5000.0);
  EXPECT_FALSE(r.tool.empty());
  EXPECT_FALSE(r.device.empty());
}

TEST(MeasureRunnerGpuTest, TwiceTheDepthTakesAboutTwiceAsLong) {
  MEASURE_OR_SKIP(r, (std::vector<ProfiledOp>{Gemm(4096, 4096, 4096), Gemm(4096, 4096, 8192)}));
  ASSERT_THAT(r.ops, SizeIs(2));
  // Compute-bound at this size: time ∝ K, within wave and cache effects.
  const double ratio = MedianUs(r.ops[1]) / MedianUs(r.ops[0]);
  EXPECT_GT(ratio, 1.5);
  EXPECT_LT(ratio, 2.6);
}

TEST(MeasureRunnerGpuTest, CopyBandwidthIsBelowAnyHbmPeak) {
  ProfiledOp copy;
  copy.kind = ProfiledOpKind::kMemory;
  copy.memory.bytes = Bytes(2e9);
  MEASURE_OR_SKIP(r, std::vector<ProfiledOp>{copy});
  ASSERT_THAT(r.ops, SizeIs(1));
  // 2e9 B read + write; HBM3e peaks at 8 TB/s (B200); PCIe-class 50 GB/s is a broken copy.
  const double bytes_per_s = 2e9 / r.ops[0].time.median.value();
  EXPECT_GT(bytes_per_s, 50e9);
  EXPECT_LT(bytes_per_s, 10e12);
}

TEST(MeasureRunnerGpuTest, AttentionBackwardCostsMoreThanForward) {
  MEASURE_OR_SKIP(r, (std::vector<ProfiledOp>{Attention(AttentionPass::kForward),
                                               Attention(AttentionPass::kBackward)}));
  ASSERT_THAT(r.ops, SizeIs(2));
  // Five GEMMs against two of the same sizes: 2.5× the matmul work.
  const double ratio = MedianUs(r.ops[1]) / MedianUs(r.ops[0]);
  EXPECT_GT(ratio, 1.5);
  EXPECT_LT(ratio, 4.0);
}

TEST(MeasureRunnerGpuTest, CollectivesAreSkippedWithTheReason) {
  ProfiledOp all_reduce;
  all_reduce.kind = ProfiledOpKind::kCollective;
  all_reduce.collective.kind = CollectiveKind::kAllReduce;
  all_reduce.collective.bytes = Bytes(1 << 20);
  all_reduce.collective.group = ProcessGroup{.size = 8, .stride = 1};
  MEASURE_OR_SKIP(r, std::vector<ProfiledOp>{all_reduce});
  EXPECT_THAT(r.ops, SizeIs(0));
  ASSERT_THAT(r.skipped, SizeIs(1));
  EXPECT_THAT(r.skipped[0], HasSubstr("more than one GPU"));
}

}  // namespace
}  // namespace projector
