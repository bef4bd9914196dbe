// HardwareProfile structs built in code (namespace testing::compute, apart from the network
// fixtures of network_hardware.h) for the compute-backend tests (MI300X-, MI325X-, MI355X-,
// A100-, H100- and B200-like GPUs), so the tests do not depend on the JSON library. Figures from
// ../shared/reference/hardware_models.md (sections 3 and 4) with their original sources; the
// efficiencies are the measured throughput divided by the tile model's ideal at that clock.
#ifndef PROJECTOR_TESTS_TESTING_COMPUTE_HARDWARE_H_
#define PROJECTOR_TESTS_TESTING_COMPUTE_HARDWARE_H_

#include <cstddef>
#include <string>

#include "core/dtype.h"
#include "core/op_shapes.h"
#include "core/units.h"
#include "hw_profiles/hardware_profile.h"

namespace projector::testing::compute {

inline void SetRate(GpuSpec& gpu, DType dtype, double flops_per_clock) {
  gpu.matrix_flops_per_clock_per_cu[static_cast<size_t>(DTypeIndex(dtype))] = flops_per_clock;
}

// AMD Instinct MI300X (gfx942). ROCm gpu-specs / MI300 microarchitecture page: 304 CUs in 8 XCDs,
// FLOPs/clk/CU bf16 2048, fp8 4096, tf32 1024, fp32 matrix 256, vector fp32 256; 2100 MHz peak;
// 5.3 TB/s HBM3; 4 MB L2 per XCD; 256 MB Infinity Cache; 64 KB LDS. AMD MAF blog: 708 TFLOPS
// BF16 at a 1207 MHz median clock = 94% of 304·2048·1.207 GHz.
inline HardwareProfile Mi300xLike() {
  HardwareProfile hw;
  hw.name = "mi300x";
  GpuSpec& g = hw.gpu;
  g.name = "mi300x";
  g.vendor = Vendor::kAmd;
  g.arch = "gfx942";
  g.compute_units = 304;
  g.num_xcds = 8;
  g.peak_clock = Megahertz(2100);
  g.sustained_clock = Megahertz(1207);
  SetRate(g, DType::kBf16, 2048);
  SetRate(g, DType::kFp16, 2048);
  SetRate(g, DType::kFp8, 4096);
  SetRate(g, DType::kTf32, 1024);
  SetRate(g, DType::kFp32, 256);
  g.vector_fp32_flops_per_clock_per_cu = 256;
  g.hbm_capacity = Gigabytes(192);
  g.hbm_bandwidth = TerabytesPerSecond(5.3);
  g.l2_cache = Mebibytes(32);
  g.last_level_cache = Mebibytes(256);
  g.lds_per_cu = Kibibytes(64);
  g.register_file_per_cu = Kibibytes(512);
  g.exp_per_clock_per_cu = 16;  // v_exp_f32 quarter rate: 64 lanes / 4 (Origami: 16 VALU/clk)
  g.gemm_efficiency = 0.97;     // 708 TFLOPS MAF / tile-model ideal at 1207 MHz
  g.attention_fwd_efficiency = 0.55;  // planning estimate, hardware_models.md 4.2 (no data)
  g.attention_bwd_efficiency = 0.45;
  g.hbm_efficiency = 0.8;
  g.kernel_launch_overhead = Microseconds(4.5);  // Origami: 4.5·2200 cycles ≈ 4.5 µs
  return hw;
}

// MI325X: MI300X compute at a 1447 MHz measured median clock (AMD MAF blog: 843 TFLOPS BF16),
// 6.0 TB/s HBM3E, 256 GB.
inline HardwareProfile Mi325xLike() {
  HardwareProfile hw = Mi300xLike();
  hw.name = hw.gpu.name = "mi325x";
  hw.gpu.sustained_clock = Megahertz(1447);
  hw.gpu.hbm_capacity = Gigabytes(256);
  hw.gpu.hbm_bandwidth = TerabytesPerSecond(6.0);
  return hw;
}

// AMD Instinct MI355X (gfx950): 256 CUs, 2400 MHz, bf16 4096, fp8 8192, fp4 16384 FLOPs/clk/CU,
// 8 TB/s, 160 KB LDS. Measured: 8192³ BF16 1591 (AITER) = 63% of 2516.6 TFLOPS; AITER FA
// hdim128 fwd 1259, bwd 1167 TFLOPS (HipKittens benchmark JSON).
inline HardwareProfile Mi355xLike() {
  HardwareProfile hw = Mi300xLike();
  hw.name = hw.gpu.name = "mi355x";
  GpuSpec& g = hw.gpu;
  g.arch = "gfx950";
  g.compute_units = 256;
  g.peak_clock = Megahertz(2400);
  g.sustained_clock = Megahertz(2400);  // no measured sustained clock published
  SetRate(g, DType::kBf16, 4096);
  SetRate(g, DType::kFp16, 4096);
  SetRate(g, DType::kFp8, 8192);
  SetRate(g, DType::kFp4, 16384);
  SetRate(g, DType::kTf32, 0);  // emulated on gfx950 (Origami has_native_TF32)
  g.hbm_capacity = Gigabytes(288);
  g.hbm_bandwidth = TerabytesPerSecond(8.0);
  g.lds_per_cu = Kibibytes(160);
  g.gemm_efficiency = 0.64;
  g.attention_fwd_efficiency = 0.51;
  g.attention_bwd_efficiency = 0.50;
  return hw;
}

// NVIDIA H100 SXM (sm_90): 132 SMs, 4096 bf16 / 8192 fp8 / 2048 tf32 FLOPs/clk/SM, 989 TFLOPS at
// the 1830 MHz tensor-spec clock; 3.35 TB/s; 50 MB L2; 228 KB smem. Measured: cuBLAS BF16 794.5
// TFLOPS (ml-engineering MAMF); FA3 hdim128 16k fwd 648, bwd 561 TFLOPS (FA3 paper).
inline HardwareProfile H100Like() {
  HardwareProfile hw;
  hw.name = "h100";
  GpuSpec& g = hw.gpu;
  g.name = "h100";
  g.vendor = Vendor::kNvidia;
  g.arch = "sm_90";
  g.compute_units = 132;
  g.num_xcds = 1;
  g.peak_clock = Megahertz(1830);
  g.sustained_clock = Megahertz(1830);
  SetRate(g, DType::kBf16, 4096);
  SetRate(g, DType::kFp16, 4096);
  SetRate(g, DType::kFp8, 8192);
  SetRate(g, DType::kTf32, 2048);
  g.vector_fp32_flops_per_clock_per_cu = 256;  // 67 TFLOPS FP32
  g.hbm_capacity = Gigabytes(80);
  g.hbm_bandwidth = TerabytesPerSecond(3.35);
  g.l2_cache = Megabytes(50);
  g.lds_per_cu = Kibibytes(228);
  g.register_file_per_cu = Kibibytes(256);
  g.exp_per_clock_per_cu = 16;  // FA3 paper: ~3.9 TFLOPS special functions = 16/clk/SM
  g.gemm_efficiency = 0.83;
  g.attention_fwd_efficiency = 0.68;
  g.attention_bwd_efficiency = 0.60;
  g.hbm_efficiency = 0.85;
  g.kernel_launch_overhead = Microseconds(4);
  return hw;
}

// The H100-like GPU whose block-scaled FP8 GEMMs run at half the per-tensor rate, and an FP8
// 8192³ GEMM in both scalings: the block-scaled-rate tests of the GEMM backends.
inline HardwareProfile H100LikeBlockScaledAtHalfRate() {
  HardwareProfile hw = H100Like();
  hw.gpu.fp8_block_scaled_gemm_ratio = 0.5;
  return hw;
}
inline GemmShape Fp8Square8192(bool block_scaled) {
  GemmShape s{.m = 8192, .n = 8192, .k = 8192, .dtype = DType::kFp8};
  s.block_scaled = block_scaled;
  return s;
}

// NVIDIA A100 80GB SXM (sm_80): 108 SMs, 1410 MHz, 2048 bf16 FLOPs/clk/SM (312 TFLOPS), no FP8,
// 2.039 TB/s, 40 MB L2, 164 KB smem. Measured: BF16 GEMM 271.2 TFLOPS (86.9%); FA2 fwd 50-73%.
inline HardwareProfile A100Like() {
  HardwareProfile hw = H100Like();
  hw.name = hw.gpu.name = "a100";
  GpuSpec& g = hw.gpu;
  g.arch = "sm_80";
  g.compute_units = 108;
  g.peak_clock = Megahertz(1410);
  g.sustained_clock = Megahertz(1410);
  SetRate(g, DType::kBf16, 2048);
  SetRate(g, DType::kFp16, 2048);
  SetRate(g, DType::kFp8, 0);
  SetRate(g, DType::kTf32, 1024);
  g.vector_fp32_flops_per_clock_per_cu = 128;
  g.hbm_bandwidth = TerabytesPerSecond(2.039);
  g.l2_cache = Megabytes(40);
  g.lds_per_cu = Kibibytes(164);
  g.gemm_efficiency = 0.89;
  g.attention_fwd_efficiency = 0.85;
  g.attention_bwd_efficiency = 0.70;
  return hw;
}

// NVIDIA B200 (sm_100): 148 SMs, 8192 bf16 / 16384 fp8 / 32768 fp4 FLOPs/clk/SM at ≈1856 MHz
// (2250 TFLOPS spec), 8 TB/s, 126.5 MB L2. Measured: BF16 GEMM 1745 TFLOPS (77.6%).
inline HardwareProfile B200Like() {
  HardwareProfile hw = H100Like();
  hw.name = hw.gpu.name = "b200";
  GpuSpec& g = hw.gpu;
  g.arch = "sm_100";
  g.compute_units = 148;
  g.peak_clock = Megahertz(1856);
  g.sustained_clock = Megahertz(1856);
  SetRate(g, DType::kBf16, 8192);
  SetRate(g, DType::kFp16, 8192);
  SetRate(g, DType::kFp8, 16384);
  SetRate(g, DType::kFp4, 32768);
  g.hbm_bandwidth = TerabytesPerSecond(8.0);
  g.l2_cache = Megabytes(126.5);
  g.gemm_efficiency = 0.80;
  g.attention_fwd_efficiency = 0.83;
  g.attention_bwd_efficiency = 0.65;
  return hw;
}

}  // namespace projector::testing::compute

#endif  // PROJECTOR_TESTS_TESTING_COMPUTE_HARDWARE_H_
