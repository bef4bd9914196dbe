// The simulate compute backends on the shipped hardware library (hw_profiles/*.json) land in the
// published measured ranges (hardware_models.md section 4). A profile missing from the library
// is skipped, so the test follows the library as it grows.
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/simulate/tile_attention_backend.h"
#include "backends/simulate/tile_gemm_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw_profiles/hardware_profile.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;

// The library profile as the published benchmark ran it: short runs, which the B200 takes at its
// 1856 MHz tensor-spec clock, while the profile's sustained clock is the 1580 MHz a training
// step throttles to (flashinfer PR #2899). Other GPUs' benchmarks ran at their sustained clock.
absl::StatusOr<HardwareProfile> AtBenchmarkClock(const std::string& gpu) {
  absl::StatusOr<HardwareProfile> hw = ResolveHardwareProfile(gpu);
  if (hw.ok() && gpu == "b200") hw->gpu.sustained_clock = Megahertz(1856);
  return hw;
}

struct GemmRange {
  std::string gpu;
  double low_tflops;
  double high_tflops;
};

// 8192³ BF16: H100/H200 SXM 653.9 sustained under the 700 W cap (measured on an H200 here,
// docs/gpu_measurements.md; short runs at boost reach 794.5, ml-engineering MAMF); MI300X 708
// at 1207 MHz (AMD MAF) and 668 torch; MI325X 843 MAF / 785 torch; MI355X 1591 AITER / 1521
// torch; A100 271.2; B200 1745.
TEST(ComputeLibraryCalibrationTest, LargeSquareBf16GemmInPublishedRange) {
  const std::vector<GemmRange> ranges = {{"h100-sxm", 600, 660},      {"mi300x", 600, 750},
                                         {"mi325x", 780, 850},        {"mi355x", 1500, 1600},
                                         {"a100-sxm-80gb", 250, 280}, {"b200", 1600, 1800}};
  const GemmShape shape{.m = 8192, .n = 8192, .k = 8192};
  int checked = 0;
  for (const GemmRange& r : ranges) {
    absl::StatusOr<HardwareProfile> hw = AtBenchmarkClock(r.gpu);
    if (!hw.ok()) continue;
    absl::StatusOr<GemmEstimate> e = TileGemmBackend(*hw).Estimate(shape);
    ASSERT_THAT(e, IsOk()) << r.gpu;
    const double tflops = GemmFlops(shape).value() / e->time.value() * 1e-12;
    EXPECT_GE(tflops, r.low_tflops) << r.gpu;
    EXPECT_LE(tflops, r.high_tflops) << r.gpu;
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no library profiles found";
}

// 8192³ FP8 against the measured FP8 GEMMs of hardware_models.md 4.1 (gemm_efficiency_fp8):
// H100/H800/H200 1197.0 sustained at 700 W (measured on an H200 here), B200 3432.5 (MAMF);
// MI300X 1273, MI325X 1519 (AMD MAF). The tile
// model sits a few percent under the measured best shape, as it does for bf16 (wave
// quantisation, prologue/epilogue), and never above it.
TEST(ComputeLibraryCalibrationTest, LargeSquareFp8GemmNearMeasured) {
  const std::vector<std::pair<std::string, double>> measured = {
      {"h100-sxm", 1197.0}, {"h800-sxm", 1197.0}, {"h200-sxm", 1197.0},
      {"b200", 3432.5},     {"mi300x", 1273},     {"mi325x", 1519}};
  const GemmShape shape{.m = 8192, .n = 8192, .k = 8192, .dtype = DType::kFp8};
  int checked = 0;
  for (const auto& [gpu, tflops_measured] : measured) {
    absl::StatusOr<HardwareProfile> hw = AtBenchmarkClock(gpu);
    if (!hw.ok()) continue;
    absl::StatusOr<GemmEstimate> e = TileGemmBackend(*hw).Estimate(shape);
    ASSERT_THAT(e, IsOk()) << gpu;
    const double tflops = GemmFlops(shape).value() / e->time.value() * 1e-12;
    EXPECT_GE(tflops, 0.88 * tflops_measured) << gpu;
    EXPECT_LE(tflops, 1.01 * tflops_measured) << gpu;
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no library profiles found";
}

struct AttentionPoint {
  std::string gpu;
  AttentionShape shape;
  AttentionPass pass;
  double tflops;
  std::string kernel = "";  // a kernel the profile names; empty: its default
};

// ±15% of: H100 FA3 hdim128 16k fwd 648, causal fwd 616, bwd 561 (FA3 paper); MI355X AITER
// B16 H16 8k fwd 1259, bwd 1167 (HipKittens JSON); A100 FA2 fwd ≈ 212 (50-73% of 312; 225
// end-to-end); B200 FA4 8k fwd 1837 (flash-attention PR 2605); B200 cuDNN 9.10.2, its default
// kernel, causal batch 1 with 128/8 heads, hdim 128 (NVIDIA/cudnn-frontend
// sdpa_benchmark_training): 32k fwd 1434, bwd 1201 (README, cuDNN frontend); 16k 1332 / 1075
// and 8k 1171 / 943 (artifacts CSV, through PyTorch SDPA). At 4k (856 / 701) the model is faster
// than cuDNN by about a third: a known gap (docs/accuracy.md), not asserted.
TEST(ComputeLibraryCalibrationTest, FlashAttentionNearPublishedThroughput) {
  auto shape = [](int64_t batch, int64_t seq, bool causal) {
    return AttentionShape{.batch = batch, .num_q_heads = 16, .num_kv_heads = 16, .seq_q = seq,
                          .seq_kv = seq, .qk_head_dim = 128, .v_head_dim = 128,
                          .causal = causal};
  };
  auto cudnn_shape = [](int64_t seq) {
    return AttentionShape{.batch = 1, .num_q_heads = 128, .num_kv_heads = 8, .seq_q = seq,
                          .seq_kv = seq, .qk_head_dim = 128, .v_head_dim = 128, .causal = true};
  };
  const std::vector<AttentionPoint> points = {
      {"h100-sxm", shape(1, 16384, false), AttentionPass::kForward, 648},
      {"h100-sxm", shape(1, 16384, true), AttentionPass::kForward, 616},
      {"h100-sxm", shape(1, 16384, false), AttentionPass::kBackward, 561},
      {"mi355x", shape(16, 8192, false), AttentionPass::kForward, 1259},
      {"mi355x", shape(16, 8192, false), AttentionPass::kBackward, 1167},
      {"a100-sxm-80gb", shape(2, 8192, false), AttentionPass::kForward, 212},
      {"b200", shape(2, 8192, false), AttentionPass::kForward, 1837, "fa4"},
      {"b200", cudnn_shape(32768), AttentionPass::kForward, 1434},
      {"b200", cudnn_shape(32768), AttentionPass::kBackward, 1201},
      {"b200", cudnn_shape(16384), AttentionPass::kForward, 1332},
      {"b200", cudnn_shape(16384), AttentionPass::kBackward, 1075},
      {"b200", cudnn_shape(8192), AttentionPass::kForward, 1171},
      {"b200", cudnn_shape(8192), AttentionPass::kBackward, 943},
  };
  int checked = 0;
  for (const AttentionPoint& p : points) {
    absl::StatusOr<HardwareProfile> hw = AtBenchmarkClock(p.gpu);
    if (!hw.ok()) continue;
    if (!p.kernel.empty()) {
      const AttentionKernelSpec* kernel = hw->gpu.FindAttentionKernel(p.kernel);
      ASSERT_NE(kernel, nullptr) << p.gpu << " " << p.kernel;
      hw->gpu.attention_fwd_efficiency = kernel->fwd_efficiency;
      hw->gpu.attention_bwd_efficiency = kernel->bwd_efficiency;
    }
    absl::StatusOr<AttentionEstimate> e = TileAttentionBackend(*hw).Estimate(p.shape, p.pass);
    ASSERT_THAT(e, IsOk()) << p.gpu;
    const double tflops = AttentionFlops(p.shape, p.pass).value() / e->time.value() * 1e-12;
    EXPECT_THAT(tflops, IsNearRel(p.tflops, 0.15)) << p.gpu << " " << p.tflops;
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no library profiles found";
}

}  // namespace
}  // namespace projector
