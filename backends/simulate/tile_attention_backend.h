// Tile-level flash-attention model (FA2/FA3/FA4 and AMD AITER/CK style), forward and backward:
// work items are Q tiles (forward) or KV tiles (backward) per batch and query head, each looping
// over the other sequence in tiles; per iteration the QKᵀ/PV MMAs (backward: five GEMMs and the
// dQ accumulation), the softmax exponentials and the K/V (Q/dO) loads, overlapped FA3-style or
// serialised FA2-style; causal masking skips whole tiles and items run longest first in waves
// over CUs/SMs. Part of the simulate backends; immutable, thread-safe, memoised by shape.
#ifndef PROJECTOR_BACKENDS_SIMULATE_TILE_ATTENTION_BACKEND_H_
#define PROJECTOR_BACKENDS_SIMULATE_TILE_ATTENTION_BACKEND_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "backends/attention_backend.h"
#include "backends/simulate/gpu_model_constants.h"
#include "backends/simulate/memo_cache.h"
#include "core/dtype.h"
#include "core/op_shapes.h"
#include "core/units.h"
#include "hw_profiles/hardware_profile.h"

namespace projector {

// Kernel family, which fixes the tile table and how softmax overlaps the MMAs.
enum class AttentionKernelFamily {
  kFa2,      // Ampere FlashAttention-2: MMA and softmax serialised per iteration
  kFa3,      // Hopper FlashAttention-3: warp-specialised ping-pong, max(MMA, softmax, load)
  kFa4,      // Blackwell FlashAttention-4 (CuTe DSL), overlapped like FA3
  kAmdPingPong,  // AMD AITER/CK/HipKittens 8-wave ping-pong, overlapped like FA3
};

struct AttentionTile {
  int64_t block_m = 0;  // query rows per tile
  int64_t block_n = 0;  // key/value rows per tile
};

class TileAttentionBackend final : public AttentionBackend {
 public:
  explicit TileAttentionBackend(const HardwareProfile& hw);
  // kInvalidArgument for non-positive sizes or num_q_heads not a multiple of num_kv_heads;
  // kUnimplemented "<gpu> has no <dtype> matrix rate".
  absl::StatusOr<AttentionEstimate> Estimate(const AttentionShape& shape,
                                             AttentionPass pass) const override;
  std::string_view name() const override { return "tile"; }

  AttentionKernelFamily family() const { return family_; }
  // The tile this GPU's kernels use for a shape and pass (no validation).
  AttentionTile TileFor(const AttentionShape& shape, AttentionPass pass) const;

 private:
  AttentionEstimate Compute(const AttentionShape& shape, AttentionPass pass) const;

  std::string gpu_name_;
  AttentionKernelFamily family_ = AttentionKernelFamily::kFa3;
  double units_ = 1;
  double clock_hz_ = 1;
  std::array<double, kNumDTypes> flops_per_clock_per_cu_{};
  double exp_per_clock_per_cu_ = 16;
  double fwd_efficiency_ = 1;
  double bwd_efficiency_ = 1;
  double hbm_bytes_per_s_ = 0;  // times hbm_efficiency
  double l2_bytes_per_s_ = 0;   // aggregate, 0 where not modelled
  gpu_model::BandwidthPolynomial bandwidth_reach_;
  Seconds hbm_latency_;
  Seconds launch_overhead_;
  MemoCache<std::pair<AttentionShape, AttentionPass>, AttentionEstimate> cache_;
};

std::unique_ptr<AttentionBackend> MakeTileAttentionBackend(const HardwareProfile& hw);

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_SIMULATE_TILE_ATTENTION_BACKEND_H_
