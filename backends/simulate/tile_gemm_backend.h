// Tile-level GEMM model in the spirit of AMD's Origami (ROCm/rocm-libraries shared/origami):
// macro-tile candidates per vendor limited by LDS/shared memory, wave quantisation over CUs/SMs,
// per-tile compute vs cache-hierarchy memory time per K step, split-K for small grids, launch
// overhead; the fastest candidate wins. Part of the simulate backends; immutable, thread-safe,
// estimates memoised by shape.
#ifndef PROJECTOR_BACKENDS_SIMULATE_TILE_GEMM_BACKEND_H_
#define PROJECTOR_BACKENDS_SIMULATE_TILE_GEMM_BACKEND_H_

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "backends/gemm_backend.h"
#include "backends/simulate/gpu_model_constants.h"
#include "backends/simulate/memo_cache.h"
#include "core/dtype.h"
#include "core/op_shapes.h"
#include "core/units.h"
#include "hw_profiles/hardware_profile.h"

namespace projector {

// One kernel configuration: macro tile MT_M × MT_N × MT_K and a split-K factor.
struct GemmTile {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;  // 0: the default K step of 128 bytes per row for the dtype (bf16: 64)
  int64_t split_k = 1;
};

class TileGemmBackend final : public GemmBackend {
 public:
  explicit TileGemmBackend(const HardwareProfile& hw);
  // Best candidate tile (and split-K). kInvalidArgument if m, n, k or batch is not positive;
  // kUnimplemented "<gpu> has no <dtype> matrix rate" when the GPU lacks the dtype.
  absl::StatusOr<GemmEstimate> Estimate(const GemmShape& shape) const override;
  // The same model with one fixed configuration, no search and no cache (tests, explanations).
  // Adds kInvalidArgument for a non-positive tile or split_k < 1.
  absl::StatusOr<GemmEstimate> EstimateWithTile(const GemmShape& shape,
                                                const GemmTile& tile) const;
  // Macro tiles (m × n) searched on this GPU, largest first; MT_K follows the dtype.
  std::span<const GemmTile> candidate_tiles() const {
    return std::span<const GemmTile>(candidates_.data(), num_candidates_);
  }
  std::string_view name() const override { return "tile"; }

 private:
  struct Evaluation {
    Seconds time;
    Seconds clock_scaled_time;
    bool compute_bound = true;
    int64_t waves = 0;
  };
  absl::Status Validate(const GemmShape& shape) const;
  double MatrixFlopsPerClock(DType dtype) const {
    return flops_per_clock_per_cu_[static_cast<size_t>(DTypeIndex(dtype))];
  }
  double GemmEfficiency(const GemmShape& shape) const {
    const double e = gemm_efficiency_[static_cast<size_t>(DTypeIndex(shape.dtype))];
    return shape.block_scaled && shape.dtype == DType::kFp8 ? e * fp8_block_scaled_ratio_ : e;
  }
  Evaluation Evaluate(const GemmShape& shape, int64_t tile_m, int64_t tile_n, int64_t tile_k,
                      int64_t split_k) const;
  GemmEstimate Finish(const GemmShape& shape, const Evaluation& best, const GemmTile& tile) const;

  std::string gpu_name_;
  double units_ = 1;         // CUs / SMs
  double l2_domains_ = 1;    // AMD XCDs; 1 on NVIDIA
  double clock_hz_ = 1;
  std::array<double, kNumDTypes> flops_per_clock_per_cu_{};
  // Main-loop efficiency per dtype (GpuSpec::GemmEfficiency), indexed by DTypeIndex.
  std::array<double, kNumDTypes> gemm_efficiency_{};
  double fp8_block_scaled_ratio_ = 1;  // GpuSpec::fp8_block_scaled_gemm_ratio
  double hbm_bytes_per_s_ = 0;   // times hbm_efficiency
  double mall_bytes_per_s_ = 0;  // 0 without an Infinity Cache
  double l2_bytes_per_s_ = 0;    // aggregate, 0 where not modelled
  double l2_bytes_per_domain_ = 0;
  double mall_bytes_ = 0;
  gpu_model::BandwidthPolynomial bandwidth_reach_;
  Seconds hbm_latency_;
  Seconds launch_overhead_;
  std::array<GemmTile, 8> candidates_{};
  size_t num_candidates_ = 0;
  MemoCache<GemmShape, GemmEstimate> cache_;
};

std::unique_ptr<GemmBackend> MakeTileGemmBackend(const HardwareProfile& hw);

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_SIMULATE_TILE_GEMM_BACKEND_H_
