// Roofline GEMM model: max(compute time at the achievable matrix rate, HBM traffic time) plus
// one launch. Ignores tiling and wave quantisation; TileGemmBackend models those. Part of the
// simulate backends; immutable, estimates memoised by shape.
#ifndef PROJECTOR_BACKENDS_SIMULATE_ROOFLINE_GEMM_BACKEND_H_
#define PROJECTOR_BACKENDS_SIMULATE_ROOFLINE_GEMM_BACKEND_H_

#include <array>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "backends/gemm_backend.h"
#include "backends/simulate/memo_cache.h"
#include "core/dtype.h"
#include "core/op_shapes.h"
#include "core/units.h"
#include "hw_profiles/hardware_profile.h"

namespace projector {

// time = max(2·m·n·k·batch / (units · flops_per_clock[dtype] · sustained clock ·
//                             GemmEfficiency(dtype)),
//            ((m·k + k·n)·in_bytes + m·n·out_bytes)·batch / (hbm_bandwidth · hbm_efficiency))
//        + kernel_launch_overhead.
// GemmEfficiency is gemm_efficiency_fp8 for FP8/FP4 where the profile has one, else the bf16
// gemm_efficiency.
class RooflineGemmBackend final : public GemmBackend {
 public:
  explicit RooflineGemmBackend(const HardwareProfile& hw);
  // kInvalidArgument if m, n, k or batch is not positive; kUnimplemented
  // "<gpu> has no <dtype> matrix rate".
  absl::StatusOr<GemmEstimate> Estimate(const GemmShape& shape) const override;
  std::string_view name() const override { return "roofline"; }

 private:
  std::string gpu_name_;
  std::array<FlopsPerSecond, kNumDTypes> matrix_rate_{};  // achievable, per dtype
  double fp8_block_scaled_ratio_ = 1;  // GpuSpec::fp8_block_scaled_gemm_ratio
  BytesPerSecond hbm_bandwidth_;                          // times hbm_efficiency
  Seconds launch_overhead_;
  MemoCache<GemmShape, GemmEstimate> cache_;
};

std::unique_ptr<GemmBackend> MakeRooflineGemmBackend(const HardwareProfile& hw);

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_SIMULATE_ROOFLINE_GEMM_BACKEND_H_
