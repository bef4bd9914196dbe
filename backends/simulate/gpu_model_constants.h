// Constants and small formulas shared by the simulate compute backends (GEMM, attention, memory):
// the running clock, cache-level bandwidths that the hardware profile does not carry, and
// Origami's per-tile cycle constants. Every figure names its source.
#ifndef PROJECTOR_BACKENDS_SIMULATE_GPU_MODEL_CONSTANTS_H_
#define PROJECTOR_BACKENDS_SIMULATE_GPU_MODEL_CONSTANTS_H_

#include <algorithm>
#include <string_view>

#include "core/dtype.h"
#include "core/units.h"
#include "hw_profiles/hardware_profile.h"

namespace projector::gpu_model {

// Fixed cost per output tile (dispatch, address setup, barriers): Origami heuristics.hpp
// (ROCm/rocm-libraries shared/origami), 1500 cycles; reference hardware_models.md section 1.7.
inline constexpr double kTileFixedOverheadCycles = 1500;
// Main-memory load latency added to each HBM-level K step: Origami heuristics.hpp, 200 cycles.
// DRAM latency is a time, not a core-clock count, so it is converted at the peak clock (where
// Origami's microbenchmarks ran) and does not scale in clock what-ifs; see HbmLatency().
inline constexpr double kHbmLoadLatencyCycles = 200;
// Cross-XCD flag poll plus two barriers of a split-K tree fix-up: Origami gemm.cpp,
// 1900 + 2·100 cycles (hardware_models.md section 1.7).
inline constexpr double kSplitKFixupCycles = 2100;

// The simulate backends run at the sustained clock; the profile already carries any
// --gpu-clock-mhz override. A profile that has none falls back to the peak clock.
inline Hertz RunningClock(const GpuSpec& gpu) {
  return gpu.sustained_clock.value() > 0 ? gpu.sustained_clock : gpu.peak_clock;
}

inline Seconds HbmLatency(const GpuSpec& gpu) {
  const Hertz clock = gpu.peak_clock.value() > 0 ? gpu.peak_clock : RunningClock(gpu);
  return Seconds(kHbmLoadLatencyCycles / clock.value());
}

inline bool ArchStartsWith(const GpuSpec& gpu, std::string_view prefix) {
  return std::string_view(gpu.arch).substr(0, prefix.size()) == prefix;
}

// Aggregate L2 read bandwidth in bytes per clock for the whole GPU, or 0 where no published
// figure exists (the measured gemm/attention efficiencies then cover the on-chip feed).
//  * CDNA3/CDNA4 (gfx942, gfx950): 16 channels × 128 B/clk per XCD L2 = 2048 B/clk per XCD
//    (AMD CDNA 3 white paper; ROCm MI300 microarchitecture page "L2 ... 16 channels, 128B/clk").
//  * Ampere (sm_80): 5120 B/clk (NVIDIA A100 Tensor Core GPU Architecture white paper).
//  * Hopper/Blackwell: NVIDIA publishes no L2 figure; not modelled.
inline double L2BytesPerClock(const GpuSpec& gpu) {
  if (gpu.vendor == Vendor::kAmd) return 2048.0 * static_cast<double>(std::max<int64_t>(gpu.num_xcds, 1));
  if (ArchStartsWith(gpu, "sm_8")) return 5120.0;
  return 0.0;
}

// Infinity Cache (MALL) peak bandwidth as a multiple of HBM bandwidth: 17.2 TB/s vs 5.3 TB/s on
// MI300X (AMD CDNA 3 white paper), assumed to keep its ratio on other MALL parts.
inline constexpr double kMallToHbmBandwidthRatio = 17.2 / 5.3;

// Fraction of the memory bandwidth that `c` active CUs can draw, a·c² + b·c + d clamped to 1
// (Origami hardware.hpp mem_bw_per_wg_coefficients): gfx942 (0, 0.015, 0) saturates at ~67 CUs;
// gfx950 (−1.3e-5, 0.00707, 0.027355). NVIDIA: no published data, taken as 1 (0, 0, 1).
struct BandwidthPolynomial {
  double a = 0;
  double b = 0;
  double d = 1;
  double Fraction(double active_units) const {
    return std::clamp(a * active_units * active_units + b * active_units + d, 0.05, 1.0);
  }
};
inline BandwidthPolynomial BandwidthReachable(const GpuSpec& gpu) {
  if (ArchStartsWith(gpu, "gfx942")) return {.a = 0, .b = 0.015, .d = 0};
  if (ArchStartsWith(gpu, "gfx950")) return {.a = -1.3e-5, .b = 0.00707, .d = 0.027355};
  return {};
}

// Bytes of the GEMM/attention output element for an input dtype: FP8/FP4 kernels write BF16,
// FP32/TF32 write FP32, BF16/FP16 write their own type (hipBLASLt/cuBLASLt defaults).
inline double OutputBytesPerElement(DType dtype) {
  return std::max(2.0, BytesPerElement(dtype));
}

}  // namespace projector::gpu_model

#endif  // PROJECTOR_BACKENDS_SIMULATE_GPU_MODEL_CONSTANTS_H_
